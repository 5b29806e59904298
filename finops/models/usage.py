"""The fact table (one row per provider line) and the daily rollup every page reads."""

from django.db import models
from django.db.models import Q

from .org import Team, Workload
from .sources import Account, IngestRun, Provider

# NUMERIC(38, 18): provider amounts arrive with up to ~39 significant digits of which the
# meaningful ones sit well within 18 decimals of a dollar; whole amounts up to 10^20 fit.
MONEY = {"max_digits": 38, "decimal_places": 18}


class CostBasis(models.TextChoices):
    BILLED = "billed", "Billed"  # the provider's own amount: ground truth
    ESTIMATED = "estimated", "Estimated"  # tokens × catalog price of the day
    UNPRICED = "unpriced", "Unpriced"  # no price known: cost is null, never 0


class ChargeCategory(models.TextChoices):
    USAGE = "usage", "Usage"
    CREDIT = "credit", "Credit"
    TAX = "tax", "Tax"
    PURCHASE = "purchase", "Purchase"
    ADJUSTMENT = "adjustment", "Adjustment"


class TokenCounts(models.Model):
    """Token classes with one meaning across providers: the four input/output classes are disjoint."""

    input_tokens = models.PositiveBigIntegerField(default=0, help_text="Uncached input tokens.")
    cached_input_tokens = models.PositiveBigIntegerField(default=0, help_text="Input tokens read from a cache.")
    cache_write_tokens = models.PositiveBigIntegerField(default=0, help_text="Input tokens written to a cache.")
    output_tokens = models.PositiveBigIntegerField(default=0)
    requests = models.PositiveBigIntegerField(default=0)

    class Meta:
        abstract = True


class UsageLine(TokenCounts):
    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="usage_lines")
    provider = models.ForeignKey(Provider, on_delete=models.PROTECT, related_name="+")
    ingest_run = models.ForeignKey(IngestRun, on_delete=models.SET_NULL, null=True, blank=True, related_name="lines")
    period_start = models.DateTimeField(help_text="UTC, inclusive.")
    period_end = models.DateTimeField(help_text="UTC, exclusive.")
    model = models.CharField(max_length=200, help_text="Normalised model id (finops.modelids).")
    model_raw = models.CharField(max_length=300, help_text="The model string exactly as the provider sent it.")
    service_tier = models.CharField(max_length=32, blank=True)
    project_ref = models.CharField(max_length=255, blank=True, help_text="Project or workspace id.")
    api_key_ref = models.CharField(max_length=255, blank=True)
    user_ref = models.CharField(max_length=255, blank=True)
    tags = models.JSONField(default=dict, blank=True)
    cost = models.DecimalField(**MONEY, null=True, blank=True, help_text="In `currency`, as given.")
    currency = models.CharField(max_length=3, default="USD")
    reporting_cost = models.DecimalField(
        **MONEY, null=True, blank=True, help_text="Cost in the reporting currency (dated FxRate)."
    )
    cost_basis = models.CharField(max_length=16, choices=CostBasis.choices)
    charge_category = models.CharField(max_length=16, choices=ChargeCategory.choices, default=ChargeCategory.USAGE)
    billing_period_start = models.DateTimeField(
        null=True, blank=True, help_text="FOCUS: the billing period the line belongs to; a re-import replaces the period."
    )
    latency = models.JSONField(
        null=True, blank=True, help_text="Gateway logs only: count, sum_ms, p50_ms, p95_ms, max_ms, ttft_sum_ms."
    )
    workload = models.ForeignKey(Workload, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    team = models.ForeignKey(Team, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    # Identity of the line within its account and period: re-ingesting the same line cannot add a second row.
    line_key = models.CharField(max_length=64)

    class Meta:
        indexes = [
            models.Index(fields=["account", "period_start"]),
            models.Index(fields=["period_start"]),
        ]
        constraints = [
            models.UniqueConstraint(fields=["account", "period_start", "line_key"], name="usage_line_identity"),
            models.CheckConstraint(condition=Q(period_end__gt=models.F("period_start")), name="usage_period_positive"),
            models.CheckConstraint(
                condition=(Q(cost_basis=CostBasis.UNPRICED, cost__isnull=True, reporting_cost__isnull=True))
                | (~Q(cost_basis=CostBasis.UNPRICED) & Q(cost__isnull=False, reporting_cost__isnull=False)),
                name="usage_unpriced_iff_no_cost",
            ),
        ]


class DailySpend(TokenCounts):
    """day × account × provider × model × workload × team × currency × basis × category; equals the raw lines."""

    day = models.DateField()
    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="+")
    provider = models.ForeignKey(Provider, on_delete=models.PROTECT, related_name="+")
    model = models.CharField(max_length=200)
    workload = models.ForeignKey(Workload, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    team = models.ForeignKey(Team, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    currency = models.CharField(max_length=3)
    cost_basis = models.CharField(max_length=16, choices=CostBasis.choices)
    charge_category = models.CharField(max_length=16, choices=ChargeCategory.choices)
    cost = models.DecimalField(**MONEY, null=True, blank=True)
    reporting_cost = models.DecimalField(**MONEY, null=True, blank=True)
    line_count = models.PositiveIntegerField(default=0)

    class Meta:
        indexes = [
            models.Index(fields=["day"]),
            models.Index(fields=["team", "day"]),
            models.Index(fields=["workload", "day"]),
            models.Index(fields=["account", "day"]),
            # The provider page and Explore's provider filter; Explore's model filter and its list of models.
            models.Index(fields=["provider", "day"], name="dailyspend_provider_day"),
            models.Index(fields=["model", "day"], name="dailyspend_model_day"),
        ]
