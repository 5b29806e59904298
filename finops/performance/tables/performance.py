"""The performance tables (issue 12), each defined once (finops.reports.tables): the workload page's section and
the provider page's measured speed. Latencies are in seconds (a CSV carries seconds, a page "1.2 s")."""

from finops.reports.tables import Column, Table

_SPEED_HELP = (
    "Output tokens per second. Generation: over streamed requests, after the first token (as the market "
    "measures it). End-to-end (lower bound): over whole requests, when nothing streamed."
)

WORKLOAD_PERFORMANCE = Table(
    "performance",
    (
        Column("Provider", "label"),
        Column("Model", "model_name"),
        Column("Model id", "model", csv_only=True),
        Column("Source", "source", help="Measured: timed from a gateway log. Reported: posted to /api/v1/metrics."),
        Column("Requests", "requests", "count"),
        Column("Error rate", "error_rate", "share", help="Failed requests over requests with per-request data."),
        Column("p50", "p50_s", "duration", help="Median end-to-end latency."),
        Column(
            "p99",
            "p99_s",
            "duration",
            help="99th percentile of end-to-end latency, from the period's merged distribution.",
        ),
        Column("p50 TTFT", "ttft_p50_s", "duration", help="Median time to first token."),
        Column("Output speed", "tokens_per_s", "speed", help=_SPEED_HELP),
        Column("Speed basis", "tokens_per_s_basis", csv_only=True),
        Column("Over SLA", "share_over_sla", "share", help="Share of requests slower than the SLA."),
        Column("Verdict", "verdict", "badge", help="Meets / fails the SLA (p99) or the batch window; hover for why."),
        Column("Why", "verdict_text", csv_only=True),
        Column("Quality", "quality", help="Each eval's latest score posted to /api/v1/evals for the period."),
        Column(
            "Notes",
            "summary_note",
            help="Requests known only from summaries (count and percentiles): their p99 is bounded, not measured.",
        ),
        Column("Summary p99 bound", "summary_p99_s", "duration", csv_only=True),
    ),
    empty="No latency data: connect a gateway log or post metrics to /api/v1/metrics.",
)

PROVIDER_SPEED = Table(
    "measured_speed",
    (
        Column("Model", "label"),
        Column("Model id", "model", csv_only=True),
        Column("Output speed", "tokens_per_s", "speed", help=_SPEED_HELP),
        Column("Speed basis", "tokens_per_s_basis", csv_only=True),
        Column("p50 TTFT", "ttft_p50_s", "duration", help="Median time to first token."),
        Column("p99", "p99_s", "duration", help="99th percentile of end-to-end latency."),
        Column("Requests", "requests", "count"),
    ),
    empty="No measured requests on this provider in this period.",
)
