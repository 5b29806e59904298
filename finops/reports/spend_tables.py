"""The spend pages' tables, each defined once for the page and its CSV (finops.reports.tables)."""

from .tables import Column, Table

PER_MTOK_HELP = "Spend over priced tokens × 10⁶; tokens with no price are left out and shown beside the spend."


def spend(header: str = "Spend") -> Column:
    return Column(header, "cost", "money", unpriced="unpriced_tokens")


TOKENS = Column("Tokens", "tokens", "tokens")
PER_MTOK = Column("{cur}/M tokens", "usd_per_mtok", "per_mtok", help=PER_MTOK_HELP)
MODEL_ID = Column("Model id", "model", csv_only=True)


def unit_costs(name: str, label: str, *, model: bool = False) -> Table:
    """Spend, tokens and $/M tokens per provider or model (every spend page has these)."""
    columns = (Column(label, "label"), *((MODEL_ID,) if model else ()), spend(), TOKENS, PER_MTOK)
    return Table(name, columns, empty="No spend in this period.")


BY_PROVIDER = unit_costs("by_provider", "Provider")
BY_MODEL = unit_costs("by_model", "Model", model=True)

TOP_WORKLOADS = Table(
    "top_workloads",
    (
        Column("Workload", "label"),
        Column("Team", "team"),
        spend(),
        Column("Share", "share", "share", help="Share of the spend whose cost is known"),
        TOKENS,
    ),
    empty="No spend in this period.",
)
UNKNOWN_COST_WORKLOADS = Table(
    "unknown_cost_workloads",
    (
        Column("Workload", "label"),
        Column("Team", "team"),
        spend(),
        TOKENS,
    ),
    empty="Every workload's usage has a price.",
)

TEAM_WORKLOADS = Table(
    "workloads",
    (
        Column("Workload", "label"),
        Column("Latency profile", "profile"),
        Column("SLA", "sla"),
        spend(),
        TOKENS,
        PER_MTOK,
    ),
    empty="This team has no workloads yet.",
)

# Tax, fees and credits billed on an account, allocated to the teams pro rata to their usage on it
# (finops.spend.selectors.shared_charges): beside a team's spend, its own figure; in the spend, they are Unattributed's.
SHARED_CHARGES = Column(
    "Shared charges",
    "shared",
    "money",
    help="Tax, fees and credits allocated pro rata to the team's usage on the account they are billed on",
)
TEAMS = Table(
    "teams",
    (
        Column("Team", "label"),
        Column("Cost centre", "cost_center"),
        Column("Workloads", "workloads", "count"),
        spend(),
        TOKENS,
        Column("Change", "change", "change", help="Against the comparison period"),
        SHARED_CHARGES,
    ),
    empty="No teams yet.",
)
WORKLOADS = Table(
    "workloads",
    (
        Column("Workload", "label"),
        Column("Team", "team"),
        Column("Latency profile", "profile"),
        spend(),
        TOKENS,
        PER_MTOK,
    ),
    empty="No workloads yet.",
)
PROVIDERS = Table("providers", (Column("Provider", "label"), spend(), TOKENS, PER_MTOK), empty="No providers yet.")

RECONCILIATION = Table(
    "reconciliation",
    (
        Column("Day", "day", "date"),
        Column("Billed usage", "billed", "money"),
        Column("At list price", "at_list", "money"),
        Column(
            "Variance",
            "variance",
            "change",
            help="(billed − at list price) / at list price, over usage with a list price",
        ),
        Column("Billed, no list price", "unpriced_billed", "money"),
        Column(
            "Tax, credits, fees",
            "non_usage",
            "money",
            help="Charges that are not usage: on the bill, outside the variance",
        ),
    ),
    empty="No billed spend in this period.",
)
LIST_PRICE_CHECK = Table(
    "list_price",
    (
        Column("Model", "label"),
        MODEL_ID,
        Column("Billed {cur}/M", "billed_per_mtok", "per_mtok"),
        Column("List {cur}/M", "list_per_mtok", "per_mtok"),
        Column("Variance", "variance", "change"),
    ),
    empty="No billed usage in this period (estimated usage is priced from the list, so it has nothing to reconcile).",
)
LIST_PRICES = Table(
    "prices",
    (
        Column("Model", "label"),
        MODEL_ID,
        Column("From", "effective_from", "date"),
        Column("To", "effective_to", "date"),
        Column("Input {cur}/M", "input_per_mtok", "price"),
        Column("Cached input {cur}/M", "cached_input_per_mtok", "price"),
        Column("Output {cur}/M", "output_per_mtok", "price"),
        Column("Source", "source"),
    ),
    empty="No prices for this provider: its usage without a billed cost shows as unpriced.",
)
FRESHNESS = Table(
    "freshness",
    (
        Column("Account", "label"),
        Column("Provider", "provider"),
        Column("Status", "state"),
        Column("Detail", "detail"),
        Column("Latest day", "latest_day", "date"),
        Column("Days behind", "lag_days", "count"),
    ),
)

COST_PER_OUTCOME = Table(
    "cost_per_outcome",
    (
        Column("Workload", "label"),
        Column("Team", "team"),
        Column("Outcome unit", "unit"),
        Column("Outcomes", "outcomes", "count"),
        spend(),
        Column(
            "Cost per outcome",
            "per_outcome",
            "per_outcome",
            help="Spend over outcomes in the period (Σcost / Σoutcomes); — where the cost is unknown",
        ),
        Column("Target", "target", "per_outcome"),
        Column("Over target", "over_target"),
    ),
    empty="No workload reported outcomes in this period.",
)
