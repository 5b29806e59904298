"""Spend caps: a budget on a scope for a UTC calendar month or quarter, with thresholds and recipients (issue 10).

Spend against a cap is the rollup's spend in scope for the period (billed + estimated, reporting currency);
unpriced usage in scope is reported beside it, never counted as $0 (finops.alerts.selectors.caps).
"""

from django.conf import settings
from django.db import models

from finops.org.models.org import Team, Workload
from finops.sources.models import Account, Provider
from finops.spend.models.usage import MONEY

DEFAULT_THRESHOLDS = [50, 80, 100]


class CapScope(models.TextChoices):
    ORG = "org", "Whole organisation"
    TEAM = "team", "Team"
    WORKLOAD = "workload", "Workload"
    PROVIDER = "provider", "Provider"
    ACCOUNT = "account", "Account"


class CapPeriod(models.TextChoices):
    MONTH = "month", "Calendar month (UTC)"
    QUARTER = "quarter", "Calendar quarter (UTC)"


def default_thresholds() -> list[int]:
    return list(DEFAULT_THRESHOLDS)


class Cap(models.Model):
    name = models.CharField(max_length=120, unique=True, help_text="How the cap is named in emails and pages.")
    scope = models.CharField(max_length=16, choices=CapScope.choices)
    # Exactly the field the scope names is set (a check constraint holds it); org caps set none.
    team = models.ForeignKey(Team, on_delete=models.CASCADE, null=True, blank=True, related_name="caps")
    workload = models.ForeignKey(Workload, on_delete=models.CASCADE, null=True, blank=True, related_name="caps")
    provider = models.ForeignKey(Provider, on_delete=models.CASCADE, null=True, blank=True, related_name="caps")
    account = models.ForeignKey(Account, on_delete=models.CASCADE, null=True, blank=True, related_name="caps")
    period = models.CharField(max_length=8, choices=CapPeriod.choices, default=CapPeriod.MONTH)
    amount = models.DecimalField(**MONEY, help_text="In the reporting currency, per period.")
    thresholds = models.JSONField(
        default=default_thresholds, help_text="Percentages of the amount that alert (1–1000)."
    )
    alert_on_forecast = models.BooleanField(
        default=True, help_text="Alert when the period is forecast to exceed the cap."
    )
    # Addresses ("a@example.com") and roles ("role:team_leads", "role:finance", "role:admins").
    recipients = models.JSONField(default=list)
    webhook_url = models.URLField(blank=True, help_text="Optional: a JSON POST signed with HMAC-SHA256 on every alert.")
    # Fernet token of the webhook's signing secret (finops.core.crypto), like provider keys; never rendered.
    webhook_secret_ciphertext = models.TextField(blank=True, editable=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                name="cap_scope_matches_its_field",
                condition=(
                    models.Q(
                        scope="org",
                        team__isnull=True,
                        workload__isnull=True,
                        provider__isnull=True,
                        account__isnull=True,
                    )
                    | models.Q(
                        scope="team",
                        team__isnull=False,
                        workload__isnull=True,
                        provider__isnull=True,
                        account__isnull=True,
                    )
                    | models.Q(
                        scope="workload",
                        team__isnull=True,
                        workload__isnull=False,
                        provider__isnull=True,
                        account__isnull=True,
                    )
                    | models.Q(
                        scope="provider",
                        team__isnull=True,
                        workload__isnull=True,
                        provider__isnull=False,
                        account__isnull=True,
                    )
                    | models.Q(
                        scope="account",
                        team__isnull=True,
                        workload__isnull=True,
                        provider__isnull=True,
                        account__isnull=False,
                    )
                ),
            ),
            models.CheckConstraint(name="cap_amount_positive", condition=models.Q(amount__gt=0)),
        ]

    def __str__(self):
        return self.name

    @property
    def scope_object(self):
        return {"team": self.team, "workload": self.workload, "provider": self.provider, "account": self.account}.get(
            self.scope
        )

    @property
    def owning_team(self) -> Team | None:
        """The team whose leads may see and edit this cap (a workload cap belongs to its workload's team)."""
        if self.scope == CapScope.TEAM:
            return self.team
        if self.scope == CapScope.WORKLOAD:
            return self.workload.team
        return None

    def scope_label(self) -> str:
        target = self.scope_object
        return "Whole organisation" if target is None else f"{self.get_scope_display()}: {target}"
