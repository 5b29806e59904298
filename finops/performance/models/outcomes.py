"""Business outcomes per workload and day (issue 12): what the spend bought ("ticket resolved", "code review").

Outcomes are business events the company posts (API, CSV upload, `import_outcomes`), not provider usage: they do
not go through ingest/connectors (docs/architecture.md). One row per workload × day × source holds that source's count;
a later
count for the same workload, day and source replaces it (a correction). A batch posted with an idempotency key is
applied once: posting it again changes nothing.
"""

from django.conf import settings
from django.db import models

from finops.org.models.org import Workload


class OutcomeCount(models.Model):
    workload = models.ForeignKey(Workload, on_delete=models.CASCADE, related_name="outcomes")
    day = models.DateField(help_text="The UTC day the outcomes happened.")
    source = models.CharField(
        max_length=64, blank=True, help_text="Who counted them (a system, a team); blank: unnamed."
    )
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
    """A batch applied under an idempotency key: posting the same key again is answered from here, applying nothing.

    A key belongs to its sender (the user, whether signed in or calling with one of their tokens): another user's
    same key is another batch. `body_digest` (SHA-256 of the rows as sent) tells a replay from a key reused for
    different rows, which is refused (409). Batches from before keys had senders keep `sender` empty."""

    idempotency_key = models.CharField(max_length=128)
    sender = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    body_digest = models.CharField(max_length=64, blank=True)
    rows = models.PositiveIntegerField()
    received_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["sender", "idempotency_key"], name="outcomebatch_sender_key")]

    def __str__(self) -> str:
        return f"outcome batch {self.idempotency_key}"
