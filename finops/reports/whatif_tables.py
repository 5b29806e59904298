"""The what-if and Savings pages' tables, each defined once (finops.reports.tables): page and CSV."""

from .tables import Column, Table

WHATIF_RESULTS = Table(
    "whatif",
    (
        Column("Provider", "provider"),
        Column("Model", "model"),
        Column("Family", "family"),
        Column(
            "Monthly cost", "monthly_cost", "money", help="Exact, from the prices below; a contract discount applied"
        ),
        Column("Against today", "versus_today", "change", help="Against the workload's cost over the last 30 days"),
        Column("Latency / request", "latency", help="Time to first token + output tokens ÷ output tokens per second"),
        Column("Latency (s)", "latency_seconds", csv_only=True),
        Column("SLA", "verdict"),
        Column("Context", "context"),
        Column("Missing figures", "missing"),
        Column("$/M in · out", "prices"),
        Column("Price source", "price_source"),
        Column("Speed (tokens/s)", "speed"),
        Column("Speed source", "speed_source"),
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
        Column("Provider", "provider"),
        Column("Model", "model"),
        Column("Name", "name"),
        Column("Tier", "tier"),
        Column("Family", "family"),
        Column("$/M in · out", "prices"),
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
