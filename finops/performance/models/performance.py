"""Measured performance (issue 12): latency distributions, errors and output speed per workload × provider × model,
rolled up by day and by month like spend, reported metrics from teams that measure elsewhere, and eval scores.

Every row holds a finops.performance.measures.Performance as columns (finops.performance.measures.COLUMNS: counters, and
the two
latency distributions as one array of cells, finops.performance.latency); merging two rows merges their distributions
exactly,
so any period's percentiles come from the merged rows (never from averaged percentiles), and the rollup merges them
in SQL (finops.performance.services.performance_rollup).
"""

import json

from django.db import models

from finops.core.rollup_keys import ROLLUP_FK
from finops.org.models.org import Team, Workload
from finops.sources.models import Account, Provider


class LatencyCells(models.Field):
    """Latency distributions as cells (finops.performance.latency): bigint[] on Postgres, which unnest and array_agg
    merge;
    a JSON array in text on the demo's SQLite, which json_each unnests. Read as a list of ints (or None)."""

    description = "latency cells (bigint[])"

    def db_type(self, connection):
        return "bigint[]" if connection.vendor == "postgresql" else "text"

    def from_db_value(self, value, expression, connection):
        if value is None or isinstance(value, list):
            return value
        return json.loads(value)

    def get_db_prep_value(self, value, connection, prepared=False):
        if value is None:
            return None
        return list(value) if connection.vendor == "postgresql" else json.dumps(list(value))


class PerformanceColumns(models.Model):
    """A finops.performance.measures.Performance as columns (finops.performance.measures.COLUMNS), for a rollup row or a
    reported
    hour."""

    requests = models.PositiveBigIntegerField(default=0, help_text="Requests with per-request data.")
    errors = models.PositiveBigIntegerField(default=0)
    streamed_tokens = models.PositiveBigIntegerField(default=0, help_text="Output tokens of streamed requests.")
    streamed_ms = models.PositiveBigIntegerField(default=0, help_text="Their generation time (end − first token), ms.")
    timed_tokens = models.PositiveBigIntegerField(default=0, help_text="Output tokens of timed requests.")
    timed_ms = models.PositiveBigIntegerField(default=0, help_text="Their end-to-end time, ms.")
    summary_requests = models.PositiveBigIntegerField(default=0, help_text="Requests known from summaries only.")
    summary_p99_ms = models.FloatField(null=True, blank=True, help_text="Upper bound of the summaries' p99.")
    summary_errors = models.PositiveBigIntegerField(default=0, help_text="Failed, among the summaries that say.")
    summary_counted = models.PositiveBigIntegerField(default=0, help_text="Summary requests whose failures are known.")
    latency = LatencyCells(
        null=True,
        blank=True,
        help_text="End-to-end and time-to-first-token distributions (finops.performance.latency cells).",
    )

    class Meta:
        abstract = True

    @property
    def performance(self):
        """The row's finops.performance.measures.Performance, read from its columns."""
        from finops.performance.measures import COLUMNS, Performance

        return Performance().absorb_columns(tuple(getattr(self, name) for name in COLUMNS))


class PerformanceSums(PerformanceColumns):
    """What the daily and the monthly performance rollup hold alike."""

    model = models.CharField(max_length=200)

    class Meta:
        abstract = True


class DailyPerformance(PerformanceSums):
    """day × account × provider × model × workload × team, from gateway-log lines (account set) and reported
    metrics (account null). Rebuilt with the daily spend rollup, for the same days, accounts and workloads."""

    day = models.DateField()
    account = models.ForeignKey(
        Account,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        help_text="Null: reported through the metrics API, not measured from a gateway log.",
        **ROLLUP_FK,
    )
    provider = models.ForeignKey(Provider, on_delete=models.PROTECT, db_index=False, **ROLLUP_FK)
    workload = models.ForeignKey(
        Workload, on_delete=models.SET_NULL, null=True, blank=True, db_index=False, **ROLLUP_FK
    )
    team = models.ForeignKey(Team, on_delete=models.SET_NULL, null=True, blank=True, db_index=False, **ROLLUP_FK)
    hours = models.PositiveIntegerField(
        default=0, help_text="Bit h set: requests started in UTC hour h (batch windows)."
    )

    class Meta:
        indexes = [
            models.Index(fields=["day"], name="dailyperf_day"),
            # `hours` in the index (Postgres): the scorecard's batch workloads' hours (day_hours) are then an
            # index-only scan; a row with its latency cells is ~1.8 kB, and reading 7.7k of them from the heap for
            # this one column touched 18k buffers, 27 ms of a quarter's scorecard at 10M lines (1 ms; issue 23).
            models.Index(fields=["workload", "day"], include=["hours"], name="dailyperf_workload_day_hours"),
            models.Index(fields=["team", "day"], name="dailyperf_team_day"),
        ]

    def __str__(self) -> str:
        return f"performance {self.day} account {self.account_id} workload {self.workload_id}"


class SignatureDailyPerformance(PerformanceColumns):
    """day × line signature: the timed usage lines of one signature and UTC day merged (issue 23), the step between
    the lines and DailyPerformance. A signature fixes account, provider and model and holds the workload and team
    the rules give it, so DailyPerformance is these rows grouped by their signatures' workload and team (and the
    reported metrics): a re-attribution, which moves signatures and never lines, regroups these rows instead of
    merging every moved line's cells again (20–30 lines' cells a row on the page bench). Rebuilt from the lines
    whenever the lines of its days are written (finops.performance.services.performance_rollup)."""

    day = models.DateField()
    signature = models.ForeignKey(
        "LineSignature", on_delete=models.DO_NOTHING, related_name="+", db_constraint=False, db_index=False
    )
    # The signature's account, repeated: an import rebuilds its own account's rows and deletes them by it. No
    # database-level foreign keys, as on the lines and their signatures (LineSignature): a year's rebuild writes
    # ~225k rows on the 10M-line bench, each a deferred check at commit; Django applies CASCADE itself.
    account = models.ForeignKey(
        Account, on_delete=models.CASCADE, related_name="+", db_constraint=False, db_index=False
    )
    hours = models.PositiveIntegerField(
        default=0, help_text="Bit h set: requests started in UTC hour h (batch windows)."
    )

    class Meta:
        indexes = [models.Index(fields=["day", "account"], name="sigdayperf_day_account")]

    def __str__(self) -> str:
        return f"performance {self.day} signature {self.signature_id}"


class LinesAloneDay(models.Model):
    """An account's UTC day whose timed lines alone in their (day, signature) have no SignatureDailyPerformance row:
    the daily regroup reads each such line itself (issue 23). Where a gateway log's keys, users and teams are drawn
    apart, nearly every line is alone in its signature-day, and storing each as a row was a second copy of the
    lines (~1M rows for 1M lines). A line of this day with a signature-day row of its own (a group of several, or a
    week merged whole) is read from that row only (finops.performance.services.performance_rollup)."""

    account = models.ForeignKey(
        Account, on_delete=models.CASCADE, related_name="+", db_constraint=False, db_index=False
    )
    day = models.DateField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["account", "day"], name="lines_alone_day_unique")]

    def __str__(self) -> str:
        return f"lines alone {self.day} account {self.account_id}"


class MonthlyPerformance(PerformanceSums):
    """DailyPerformance merged by UTC calendar month: a quarter is three rows per group, not ninety."""

    month = models.DateField(help_text="The first day of the UTC calendar month.")
    account = models.ForeignKey(Account, on_delete=models.CASCADE, null=True, blank=True, **ROLLUP_FK)
    provider = models.ForeignKey(Provider, on_delete=models.PROTECT, db_index=False, **ROLLUP_FK)
    workload = models.ForeignKey(
        Workload, on_delete=models.SET_NULL, null=True, blank=True, db_index=False, **ROLLUP_FK
    )
    team = models.ForeignKey(Team, on_delete=models.SET_NULL, null=True, blank=True, db_index=False, **ROLLUP_FK)

    class Meta:
        indexes = [
            models.Index(fields=["month"], name="monthlyperf_month"),
            models.Index(fields=["workload", "month"], name="monthlyperf_workload_month"),
            models.Index(fields=["team", "month"], name="monthlyperf_team_month"),
        ]

    def __str__(self) -> str:
        return f"performance {self.month:%Y-%m} account {self.account_id} workload {self.workload_id}"


class MetricKind(models.TextChoices):
    SKETCH = "sketch", "Distribution (this product's format)"
    HISTOGRAM = "histogram", "Histogram"
    PERCENTILES = "percentiles", "Count and percentiles only (summary: not mergeable)"


class ReportedPerformance(PerformanceColumns):
    """One hour of a workload's requests on a provider and model, measured outside the gateway and posted to
    `POST /api/v1/metrics`. A later report for the same workload, provider, model, hour and source replaces it."""

    workload = models.ForeignKey(Workload, on_delete=models.CASCADE, related_name="reported_performance")
    provider = models.ForeignKey(Provider, on_delete=models.PROTECT, related_name="+")
    model = models.CharField(max_length=200, help_text="Normalised model id (finops.core.modelids).")
    hour = models.DateTimeField(help_text="UTC, the start of the hour.")
    source = models.CharField(max_length=64, blank=True)
    kind = models.CharField(max_length=16, choices=MetricKind.choices)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["workload", "provider", "model", "hour", "source"], name="reportedperformance_once"
            )
        ]
        indexes = [models.Index(fields=["hour"], name="reportedperf_hour")]

    def __str__(self) -> str:
        return f"reported performance {self.model} {self.hour:%Y-%m-%d %H:00} workload {self.workload_id}"


class EvalScore(models.Model):
    """A named quality score (an eval) of a workload on a provider and model over a period; a later score for the
    same workload, provider, model, name and period replaces it."""

    workload = models.ForeignKey(Workload, on_delete=models.CASCADE, related_name="eval_scores")
    provider = models.ForeignKey(Provider, on_delete=models.PROTECT, related_name="+")
    model = models.CharField(max_length=200, help_text="Normalised model id (finops.core.modelids).")
    name = models.CharField(max_length=120, help_text='The eval, e.g. "resolution-accuracy".')
    period_start = models.DateField(help_text="First UTC day the score covers.")
    period_end = models.DateField(help_text="The UTC day after the last one it covers (exclusive).")
    score = models.DecimalField(max_digits=20, decimal_places=6)
    source = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["workload", "name", "period_start"]
        constraints = [
            models.UniqueConstraint(
                fields=["workload", "provider", "model", "name", "period_start", "period_end"], name="evalscore_once"
            ),
            models.CheckConstraint(
                condition=models.Q(period_end__gt=models.F("period_start")), name="evalscore_period_positive"
            ),
        ]
        indexes = [models.Index(fields=["period_end", "workload"], name="evalscore_period")]

    def __str__(self) -> str:
        return f"{self.name} of {self.model} for workload {self.workload_id} from {self.period_start}"
