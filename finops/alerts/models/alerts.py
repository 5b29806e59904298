"""Alerts: events are rows, notifications are rows (docs/architecture.md alert pipeline; healthchecks' habit).

Evaluation inserts an AlertEvent, unique per kind × subject × period × threshold, and never sends anything.
Sending claims an event with a conditional UPDATE (`filter(id=…, claimed_at=None).update(...) == 1`) and writes
one Notification per attempt and recipient, sent or failed with its error. "Did we tell them, and what failed"
is a query; however many workers or beat processes evaluate at once, each threshold is told once.
"""

from django.conf import settings
from django.db import models

from finops.alerts.models.caps import Cap
from finops.org.models.org import Team, Workload
from finops.sources.models import Account


class AlertKind(models.TextChoices):
    CAP_THRESHOLD = "cap_threshold", "Cap threshold crossed"
    CAP_FORECAST = "cap_forecast", "Cap forecast to be exceeded"
    SPEND_SPIKE = "spend_spike", "Spend spike"
    UNPRICED_USAGE = "unpriced_usage", "Unpriced usage seen"
    SOURCE_FAILING = "source_failing", "Source failing or silent"
    CONTRACT_NOTICE = "contract_notice", "Contract notice deadline ahead"
    CONTRACT_SHORTFALL = "contract_shortfall", "Contract shortfall risk"
    CONTRACT_OVERAGE = "contract_overage", "Contract overage risk"
    OUTCOME_COST = "outcome_cost", "Cost per outcome over target"


class AlertEvent(models.Model):
    class State(models.TextChoices):
        PENDING = "pending", "Waiting to be sent"
        SENDING = "sending", "Being sent"
        SENT = "sent", "Sent"
        FAILED = "failed", "Failed (retrying)"
        GAVE_UP = "gave_up", "Failed for good"
        SUPERSEDED = "superseded", "Not sent: another threshold crossed at the same time was sent instead"

    kind = models.CharField(max_length=32, choices=AlertKind.choices)
    # What the event is about, as a stable key: "cap:12", "workload:5", "account:3", "model:openai/my-ft".
    subject = models.CharField(max_length=255)
    # The period the event belongs to (a cap's month or quarter, a spike's day); a new period re-arms.
    period_start = models.DateField()
    threshold = models.PositiveIntegerField(default=0, help_text="The percentage crossed (cap kinds); 0 otherwise.")
    cap = models.ForeignKey(Cap, on_delete=models.CASCADE, null=True, blank=True, related_name="events")
    contract = models.ForeignKey(
        "finops.Contract", on_delete=models.CASCADE, null=True, blank=True, related_name="events"
    )
    team = models.ForeignKey(
        Team,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        help_text="The team it concerns, for filters and access (none: organisation-wide).",
    )
    workload = models.ForeignKey(Workload, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    account = models.ForeignKey(Account, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    title = models.CharField(max_length=300, help_text="One line a person can triage from the inbox.")
    # The figures at the time it was raised (decimal strings), for the email and the alerts page.
    details = models.JSONField(default=dict)
    state = models.CharField(max_length=16, choices=State.choices, default=State.PENDING)
    created_at = models.DateTimeField(auto_now_add=True)
    claimed_at = models.DateTimeField(null=True, blank=True, help_text="Set by the one sender that claimed it.")
    claim_token = models.CharField(max_length=36, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["kind", "subject", "period_start", "threshold"], name="alertevent_once"),
        ]
        indexes = [
            models.Index(fields=["state", "next_attempt_at"], name="alertevent_due"),
            models.Index(fields=["team", "-created_at"], name="alertevent_team"),
            models.Index(fields=["cap", "-created_at"], name="alertevent_cap"),
        ]

    def __str__(self):
        return self.title


class Notification(models.Model):
    """One send attempt of one event to one recipient on one channel."""

    class Channel(models.TextChoices):
        EMAIL = "email", "Email"
        WEBHOOK = "webhook", "Webhook"
        SLACK = "slack", "Slack"
        TEAMS = "teams", "Microsoft Teams"

    class Status(models.TextChoices):
        SENT = "sent", "Sent"
        FAILED = "failed", "Failed"
        SKIPPED = "skipped", "Skipped (muted)"

    event = models.ForeignKey(AlertEvent, on_delete=models.CASCADE, related_name="notifications")
    channel = models.CharField(max_length=16, choices=Channel.choices)
    # The Channel row it went through (none: the built-in default recipients, or sent before channels were rows).
    via = models.ForeignKey(
        "finops.Channel", on_delete=models.SET_NULL, null=True, blank=True, related_name="notifications"
    )
    recipient = models.CharField(max_length=500)
    status = models.CharField(max_length=16, choices=Status.choices)
    error = models.TextField(blank=True)
    attempt = models.PositiveIntegerField(default=1)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["event", "channel", "recipient"], name="notification_event")]

    def __str__(self):
        return f"{self.event} → {self.recipient} ({self.channel}, {self.status})"


class AlertMute(models.Model):
    """A user who does not want emails of one alert kind (the event is still raised and shown)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="alert_mutes")
    kind = models.CharField(max_length=32, choices=AlertKind.choices)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "kind"], name="alertmute_once")]

    def __str__(self):
        return f"{self.user} mutes {self.get_kind_display()}"


class AlertSubscription(models.Model):
    """A user who asked for emails of a kind their role does not get (finance asking to hear of failing sources,
    which go to the admins): finops.notify.recipients.ALSO_TO_SUBSCRIBERS names the kinds one may ask for."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="alert_subscriptions")
    kind = models.CharField(max_length=32, choices=AlertKind.choices)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "kind"], name="alertsubscription_once")]

    def __str__(self):
        return f"{self.user} asks for {self.get_kind_display()}"
