"""People and the things spend is attributed to: users with a role, teams, memberships, workloads."""

from django.contrib.auth.models import AbstractUser
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

from finops.core.text import name_check


class User(AbstractUser):
    class Role(models.TextChoices):
        # admin: everything, Django admin. finance: reads everything. member: reads its own teams only.
        ADMIN = "admin", "Admin"
        FINANCE = "finance", "Finance"
        MEMBER = "member", "Member"

    role = models.CharField(max_length=16, choices=Role.choices, default=Role.MEMBER)
    time_zone = models.CharField(
        max_length=64,
        blank=True,
        help_text="IANA name, e.g. Europe/Paris, for showing times; empty: FINOPS_DISPLAY_TIME_ZONE. Days stay UTC.",
    )


class Team(models.Model):
    # Names reach emails, CSV files and HTTP headers: no control characters (the Django admin runs this validator,
    # apply_config's schema the same one).
    name = models.CharField(max_length=120, unique=True, validators=[name_check])
    slug = models.SlugField(max_length=64, unique=True)
    cost_center = models.CharField(max_length=64, blank=True, help_text="Finance's cost centre code, e.g. CC-410.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name


class Membership(models.Model):
    class Role(models.TextChoices):
        LEAD = "lead", "Team lead"
        MEMBER = "member", "Member"

    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="memberships")
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.MEMBER)
    time_zone = models.CharField(
        max_length=64,
        blank=True,
        help_text="IANA name, e.g. Europe/Paris, for showing times; empty: FINOPS_DISPLAY_TIME_ZONE. Days stay UTC.",
    )

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "team"], name="membership_user_team_unique")]

    def __str__(self):
        return f"{self.user} in {self.team} ({self.role})"


class Workload(models.Model):
    class LatencyProfile(models.TextChoices):
        REALTIME = "realtime", "Realtime (≤ 2 s)"
        INTERACTIVE = "interactive", "Interactive (≤ 10 s)"
        BATCH = "batch", "Batch (> 1 min)"

    team = models.ForeignKey(Team, on_delete=models.PROTECT, related_name="workloads")
    name = models.CharField(max_length=120, validators=[name_check])
    slug = models.SlugField(max_length=64, unique=True)
    latency_profile = models.CharField(
        max_length=16, choices=LatencyProfile.choices, default=LatencyProfile.INTERACTIVE
    )
    sla_seconds = models.DecimalField(
        max_digits=8,
        decimal_places=2,
        null=True,
        blank=True,
        validators=[MinValueValidator(0)],
        help_text="Latency the workload promises its users, in seconds (optional).",
    )
    batch_window_hours = models.PositiveSmallIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1), MaxValueValidator(24)],
        help_text="Batch workloads: the hours a day's work must fit in (e.g. 8 for a nightly window); judged "
        "instead of latency.",
    )
    outcome_unit = models.CharField(
        max_length=64, blank=True, help_text='The business outcome it is paid for, e.g. "ticket resolved".'
    )
    target_cost_per_outcome = models.DecimalField(
        max_digits=38,
        decimal_places=18,
        null=True,
        blank=True,
        help_text="Optional: the most one outcome should cost, in the reporting currency; a month above it alerts.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["team__name", "name"]
        constraints = [models.UniqueConstraint(fields=["team", "name"], name="workload_team_name_unique")]

    def __str__(self):
        return self.name

    BATCH_WINDOW_ON_NON_BATCH = "only a batch workload has a batch window (set latency_profile: batch, or leave it out)"

    def clean(self):
        """A batch window only means something to a batch workload (judged on its window, not its latency): set on
        another profile it would be silently ignored, so it is refused (the admin, and apply_config alike)."""
        super().clean()
        if self.batch_window_hours is not None and self.latency_profile != self.LatencyProfile.BATCH:
            raise ValidationError({"batch_window_hours": self.BATCH_WINDOW_ON_NON_BATCH})
