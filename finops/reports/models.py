"""The monthly TCO report (issue 14): published snapshots, email subscriptions and their deliveries.

A snapshot is what was published: the report's figures as they stood (finops.reports.selectors.tco_json), when, and how
fresh each source was. It is never changed: regenerating a month after a restatement publishes a new version
beside it, and the page shows what changed between them (finops.reports.restatement).

Deliveries follow the alert pipeline (docs/architecture.md): one row per subscription × month for the monthly email and
one
per subscription × later version for each "restated" email (`restates` names the version the recipient had),
each created once (unique), claimed with a conditional UPDATE by the one sender that sends it, every attempt a
ReportSendAttempt row.
"""

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

DEFAULT_DELIVERY_DAY = 3  # the 3rd (UTC): providers' lookbacks have settled the month before


class ReportSnapshot(models.Model):
    month = models.DateField(help_text="The month reported: its first day (UTC calendar month).")
    version = models.PositiveIntegerField(help_text="1 for the first publication of the month, then 2, 3, …")
    generated_at = models.DateTimeField(help_text="When its figures were read (UTC).")
    published_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        help_text="Empty when the schedule published it.",
    )
    provisional = models.BooleanField(help_text="Some source had not yet synced past its lookback after month end.")
    figures = models.JSONField(help_text="The report as published (finops.reports.selectors.tco_json).")
    source_runs = models.JSONField(
        default=dict, help_text="{account id: id of its latest finished run} when published."
    )

    class Meta:
        ordering = ["-month", "-version"]
        constraints = [models.UniqueConstraint(fields=["month", "version"], name="reportsnapshot_month_version")]

    def __str__(self):
        return f"TCO report {self.month:%Y-%m} v{self.version}"


class ReportDocument(models.Model):
    """A published version's PDF, laid out once and then sent, previewed and downloaded as stored
    (finops.reports.tco_pdf.snapshot_pdf): a published version is a document, the same bytes every time it goes
    out, and WeasyPrint takes seconds to lay a month out — per recipient run and per retry, before. Kept apart from
    the snapshot so that listing versions never reads their PDFs."""

    snapshot = models.OneToOneField(ReportSnapshot, on_delete=models.CASCADE, primary_key=True, related_name="document")
    pdf = models.BinaryField()
    rendered_at = models.DateTimeField(auto_now_add=True, help_text="When it was laid out (UTC).")

    def __str__(self):
        return f"PDF of {self.snapshot_id}"


class ReportSubscription(models.Model):
    """Someone who receives the monthly report by email: a finance user (subscribed by default) or any address an
    admin adds. Unsubscribing keeps the row (inactive), so the default never subscribes them again."""

    email = models.EmailField(unique=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, null=True, blank=True, related_name="report_subscriptions"
    )
    day_of_month = models.PositiveSmallIntegerField(
        default=DEFAULT_DELIVERY_DAY,
        validators=[MinValueValidator(1), MaxValueValidator(28)],
        help_text="The UTC day of the month the previous month's report is sent (1–28).",
    )
    active = models.BooleanField(default=True)
    unsubscribed_at = models.DateTimeField(null=True, blank=True)
    # Set when an unsubscribed address is subscribed again: unsubscribe links signed before it no longer work.
    resubscribed_at = models.DateTimeField(null=True, blank=True)
    added_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["email"]

    def __str__(self):
        return self.email


class ReportDelivery(models.Model):
    class State(models.TextChoices):
        PENDING = "pending", "Waiting to be sent"
        SENDING = "sending", "Being sent"
        SENT = "sent", "Sent"
        FAILED = "failed", "Failed (retrying)"
        GAVE_UP = "gave_up", "Failed for good"

    subscription = models.ForeignKey(ReportSubscription, on_delete=models.CASCADE, related_name="deliveries")
    month = models.DateField(help_text="The month reported: its first day.")
    snapshot = models.ForeignKey(ReportSnapshot, on_delete=models.PROTECT, related_name="deliveries")
    restates = models.ForeignKey(
        ReportSnapshot,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        help_text="A restated email: the version the recipient had been sent. Empty: the monthly email.",
    )
    state = models.CharField(max_length=16, choices=State.choices, default=State.PENDING)
    claimed_at = models.DateTimeField(null=True, blank=True)
    claim_token = models.CharField(max_length=36, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-month", "subscription__email"]
        constraints = [
            # The monthly email once per subscription and month; each version once per subscription.
            models.UniqueConstraint(
                fields=["subscription", "month"], condition=models.Q(restates__isnull=True), name="reportdelivery_once"
            ),
            models.UniqueConstraint(fields=["subscription", "snapshot"], name="reportdelivery_version_once"),
        ]
        indexes = [models.Index(fields=["state", "next_attempt_at"], name="reportdelivery_due")]

    def __str__(self) -> str:
        return f"report {self.month:%Y-%m} to subscription {self.subscription_id} ({self.state})"

    @property
    def restated(self) -> bool:
        return self.restates_id is not None


class ReportSendAttempt(models.Model):
    class Status(models.TextChoices):
        SENT = "sent", "Sent"
        FAILED = "failed", "Failed"

    delivery = models.ForeignKey(ReportDelivery, on_delete=models.CASCADE, related_name="send_attempts")
    attempt = models.PositiveIntegerField()
    status = models.CharField(max_length=16, choices=Status.choices)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"attempt {self.pk} of delivery {self.delivery_id}: {self.status}"
