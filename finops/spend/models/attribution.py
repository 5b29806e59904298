"""Attribution rules: which usage belongs to which workload (and so team). First match by priority wins."""

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models

from finops.org.models.org import Workload
from finops.sources.models import Account, Provider


class AttributionRule(models.Model):
    """Every condition given must hold; empty conditions are ignored. Lower priority numbers are tried first."""

    workload = models.ForeignKey(Workload, on_delete=models.CASCADE, related_name="rules")
    priority = models.PositiveIntegerField(
        validators=[MinValueValidator(0)], help_text="Lower numbers are tried first."
    )
    account = models.ForeignKey(Account, on_delete=models.CASCADE, null=True, blank=True, related_name="+")
    provider = models.ForeignKey(Provider, on_delete=models.CASCADE, null=True, blank=True, related_name="+")
    project = models.CharField(max_length=255, blank=True, help_text="Project or workspace id, exactly.")
    api_key = models.CharField(max_length=255, blank=True, help_text="API-key id, exactly.")
    user = models.CharField(max_length=255, blank=True, help_text="User reference, exactly.")
    model = models.CharField(
        max_length=200,
        blank=True,
        help_text='Glob on the model id, e.g. "gpt-5*" or "claude-*-4-5" (* and ? wildcards).',
    )
    tags = models.JSONField(
        default=dict, blank=True, help_text='Tags that must all be present, e.g. {"team": "support"}.'
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        # A total order: equal priorities fall back to the older rule, so "first match" is always defined.
        ordering = ["priority", "id"]

    def __str__(self):
        return f"#{self.priority} → {self.workload}"

    def conditions(self) -> dict:
        """The rule's match, in config form (`match:`), empty conditions left out."""
        match = {
            "account": self.account.name if self.account_id else None,
            "provider": self.provider.slug if self.provider_id else None,
            "project": self.project,
            "api_key": self.api_key,
            "user": self.user,
            "model": self.model,
            "tag": self.tags,
        }
        return {k: v for k, v in match.items() if v}

    def condition_labels(self) -> list[str]:
        """The conditions as people read them: `project = proj_x`, `model ~ gpt-5*`, `tag team = support`."""
        labels = [f"{k} ~ {v}" if k == "model" else f"{k} = {v}" for k, v in self.conditions().items() if k != "tag"]
        labels += [f"tag {k} = {v}" for k, v in sorted(self.tags.items())]
        return labels


class ReattributionJob(models.Model):
    """A background re-attribution after a rule change, with progress the rules page shows."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"

    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    reason = models.CharField(max_length=255)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    lines_changed = models.PositiveBigIntegerField(default=0)
    days_total = models.PositiveIntegerField(default=0)
    days_done = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"re-attribution {self.pk} ({self.status}): {self.reason}"

    @property
    def percent(self) -> int:
        if self.status == self.Status.SUCCEEDED:
            return 100
        return int(100 * self.days_done / self.days_total) if self.days_total else 0
