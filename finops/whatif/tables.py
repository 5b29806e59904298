"""The what-if and Savings pages' tables, each defined once (finops.reports.tables): page and CSV."""

from finops.reports.tables import Column, Table

WHATIF_RESULTS = Table(
    "whatif",
    (
        Column("Offering", "offering", help="Provider · model (tier); today's setup marked"),
        Column("Provider", "provider", csv_only=True),
        Column("Model", "model", csv_only=True),
        Column("Tier", "tier", csv_only=True),
        Column("Family", "family", csv_only=True),
        Column("Compared as", "group", help="Same model first, then the same family, then other families"),
        Column(
            "Monthly cost", "monthly_cost", "money", help="Exact, from the prices below; a contract discount applied"
        ),
        Column("Against today", "versus_today", "change", help="Against the workload's cost over the last 30 days"),
        Column(
            "List $/M", "list_per_mtok", "per_mtok", help="Its tokens at the input and output list prices, no cache"
        ),
        Column(
            "Effective $/M",
            "effective_per_mtok",
            "per_mtok",
            help="The monthly cost ÷ its tokens: its own mix, cache hits and cache writes, tier and discount",
        ),
        Column("Latency / request", "latency", help="Time to first token + output tokens ÷ output tokens per second"),
        Column("Latency (s)", "latency_seconds", csv_only=True),
        Column("SLA", "verdict"),
        Column("Quality", "quality", help="The workload's eval score for this model (POST /api/v1/evals)"),
        Column("Why not", "why_not", help="The gates it fails, missing quality evidence, implausible figures"),
        Column("Context", "context", csv_only=True),
        Column("Missing figures", "missing"),
        Column("$/M in · out", "prices", csv_only=True),
        Column("Price source", "price_source", csv_only=True),
        Column("Speed (tokens/s)", "speed", csv_only=True),
        Column("Speed source", "speed_source", csv_only=True),
    ),
    empty="No offerings to compare: add them under `offerings:` in the config (docs/config.md).",
)

SAVINGS = Table(
    "savings",
    (
        Column("Workload", "workload"),
        Column("Team", "team"),
        Column("Family", "family"),
        Column(
            "Last 30 days",
            "today_cost",
            "money",
            help="What this part of the workload cost over the last 30 days; — when none of it is priced",
        ),
        Column("Best offering", "best"),
        Column("Its monthly cost", "best_cost", "money"),
        Column("Saving / month", "saving", "money"),
        Column("Latency / request", "latency"),
        Column("SLA", "sla"),
        Column("Routing policy", "policy"),
    ),
    empty="No workload uses a model family with offerings in the last 30 days.",
)

OFFERINGS = Table(
    "offerings",
    (
        # The name and the prices first: on a phone they stay in view and the rest scrolls (docs/architecture.md).
        Column("Name", "name"),
        Column("$/M in · out", "prices"),
        Column("Tier", "tier"),
        Column("Provider", "provider"),
        Column("Model", "model"),
        Column("Family", "family"),
        Column("Price source", "price_source"),
        Column("Speed (tokens/s)", "speed"),
        Column("Speed source", "speed_source"),
        Column("Time to first token", "ttft"),
        Column("Its source", "ttft_source"),
        Column("Context window", "context", "count"),
    ),
    empty="No offerings yet: add them under `offerings:` in the config (docs/config.md) or here (admins).",
)

FAMILY_COMPARISON = Table(
    "same_weights",
    (
        Column("Family", "family"),
        Column("Provider", "provider"),
        Column("Models", "models"),
        Column("Spend", "cost", "money", unpriced="unpriced_tokens"),
        Column("Priced tokens", "priced_tokens", "tokens"),
        Column("{cur}/M tokens", "usd_per_mtok", "per_mtok", help="Σ cost ÷ Σ priced tokens × 10⁶, your own usage"),
    ),
    empty="None of this provider's models is used on another provider in this period.",
)
