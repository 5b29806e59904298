"""The quarterly scorecard's table, defined once (finops.reports.tables): the page, its CSV, its XLSX and
`GET /api/v1/scorecard` all read these columns, so every rendering carries the same figures. Each figure's change
from the previous quarter is its column's `delta` (under the figure on the page, its own column elsewhere).
Definitions: docs/performance.md, "Quarterly scorecard"."""

from finops.reports.spend_tables import PER_MTOK_HELP
from finops.reports.tables import Column, Table

P99_HELP = (
    "End-to-end latency under which 99 % of the quarter's measured requests finished, read from the merged "
    "distribution of every request (within ±1 %), never an average of hourly percentiles. Change in ms."
)
VERDICT_HELP = (
    "The workload's SLA over the quarter: p99 against its latency SLA, or for a batch workload whether each "
    "day's work fit its window. Meets / Fails; Unknown when only summaries were measured and their bound "
    "exceeds the SLA; No SLA; No data. Hover a badge for the p99, the SLA and the share of requests over it."
)

SCORECARD = Table(
    "scorecard",
    (
        Column("Workload", "label", sort=True),
        Column("Workload id", "slug", csv_only=True),
        Column("Team", "team", sort=True),
        Column("Team id", "team_slug", csv_only=True),
        Column(
            "Spend",
            "cost",
            "money",
            unpriced="unpriced_tokens",
            delta="cost_change",
            sort=True,
            help="Priced spend of the quarter; — where none of its usage had a price. Change in %.",
        ),
        Column(
            "Tokens",
            "tokens",
            "tokens",
            delta="tokens_change",
            sort=True,
            help="Input, cached, cache-write and output tokens. Change in %.",
        ),
        Column(
            "{cur}/M tokens",
            "usd_per_mtok",
            "per_mtok",
            delta="usd_per_mtok_change",
            sort=True,
            help=PER_MTOK_HELP + " Change in %.",
        ),
        Column(
            "Outcomes",
            "outcomes",
            "count",
            sort=True,
            help="Business outcomes reported for the quarter (e.g. tickets resolved).",
        ),
        Column("Outcome unit", "outcome_unit", csv_only=True),
        Column(
            "Cost per outcome",
            "per_outcome",
            "per_outcome",
            delta="per_outcome_change",
            sort=True,
            help="Spend over outcomes (Σcost / Σoutcomes); — with no outcomes or an unknown cost. Change in %.",
        ),
        Column(
            "Requests",
            "requests",
            "requests",
            sort=True,
            help="Requests as the usage reports them (— where the source does not count them).",
        ),
        Column("Measured requests", "measured_requests", "count", csv_only=True),
        Column(
            "Error rate",
            "error_rate",
            "share",
            delta="error_rate_change",
            delta_kind="points",
            sort=True,
            help="Failed ÷ measured requests (gateway logs and the metrics API). Change in percentage points.",
        ),
        Column("p99 latency", "p99_ms", "ms", delta="p99_change_ms", delta_kind="ms_change", sort=True, help=P99_HELP),
        Column("SLA", "sla", help="The latency SLA, or a batch workload's window."),
        Column("Verdict", "verdict", "verdict", sort=True, help=VERDICT_HELP),
        Column(
            "Output tokens/s",
            "tokens_per_s",
            "rate",
            delta="tokens_per_s_change",
            sort=True,
            help="Output tokens per second of generation over streamed requests (end to end where nothing streamed). "
            "Change in %.",
        ),
        Column(
            "Quality",
            "quality",
            "score",
            delta="quality_change",
            delta_kind="score_change",
            sort=True,
            help="The primary eval's score, weighted by each provider and model's requests. Change: the score's "
            "difference, "
            "when both quarters scored the same eval.",
        ),
        Column("Eval", "quality_eval", help="The eval the quality score is."),
    ),
    empty="No workload you can see had usage, measured requests or outcomes in this quarter or the previous one.",
)
