"""Business outcomes per workload and day (issue 12): what the spend bought ("ticket resolved", "code review").

Outcomes are business events the company posts (API, CSV upload, `import_outcomes`), not provider usage: they do
not go through ingest/providers (docs/architecture.md). One row per workload × day × source holds that source's count; a later
count for the same workload, day and source replaces it (a correction). A batch posted with an idempotency key is
applied once: posting it again changes nothing.
"""

from django.db import models

from .org import Workload


class OutcomeCount(models.Model):
    workload = models.ForeignKey(Workload, on_delete=models.CASCADE, related_name="outcomes")
    day = models.DateField(help_text="The UTC day the outcomes happened.")
    source = models.CharField(max_length=64, blank=True, help_text="Who counted them (a system, a team); blank: unnamed.")
    count = models.PositiveBigIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["workload", "day", "source"]
        constraints = [models.UniqueConstraint(fields=["workload", "day", "source"], name="outcomecount_once")]
        indexes = [models.Index(fields=["day", "workload"], name="outcomecount_day")]

    def __str__(self):
        return f"{self.workload} {self.day} {self.count}"


class OutcomeBatch(models.Model):
    """A batch applied under an idempotency key: posting the same key again is answered from here, applying nothing."""

    idempotency_key = models.CharField(max_length=128, unique=True)
    rows = models.PositiveIntegerField()
    received_at = models.DateTimeField(auto_now_add=True)
