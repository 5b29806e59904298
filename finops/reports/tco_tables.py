"""The monthly TCO report's tables, each defined once (finops.reports.tables): the report page, its print and PDF,
its CSV (every table one after another, each with its header) and its XLSX (a sheet per table) all render these.

SECTIONS lists them in the report's order, each under its section; ROW_KEYS names what identifies a row of each
table across two versions of a month's report (the restatement diff, finops.reports.restatement).
"""

from dataclasses import dataclass
from decimal import Decimal

from finops.core import display

from .spend_tables import PER_MTOK, TOKENS, spend
from .tables import Column, Table

SHARE = Column("Share", "share", "share", help="Share of the month's priced spend")


def _change(header: str = "Spend") -> Column:
    return Column(
        header, "cost", "money", unpriced="unpriced_tokens", delta="change", help="The change is against last month"
    )


SUMMARY = Table(
    "summary",
    (
        Column("Month", "label"),
        spend(),
        Column("Billed", "billed_cost", "money", help="Cost the provider billed"),
        Column("Estimated", "estimated_cost", "money", help="Tokens × list price, where the provider bills no cost"),
        TOKENS,
        Column("Requests", "requests", "requests"),
        PER_MTOK,
        Column("Last month", "previous_cost", "money"),
        Column("Change from last month", "change", "change"),
        Column("Same month last year", "last_year_cost", "money"),
        Column("Change from last year", "yoy_change", "change"),
        Column("Quarter to date", "qtd_cost", "money", help="The quarter's spend up to the month's end"),
        Column("Year to date", "ytd_cost", "money", help="The year's spend up to the month's end"),
        Column(
            "Forecast next month",
            "forecast_next",
            "money",
            help=(
                "finops.forecast.projection from the daily spend up to the month's end: by day of week with trend "
                "(docs/forecast.md)"
            ),
        ),
        Column("Unattributed", "unattributed_cost", "money", help="Spend no attribution rule gives to a workload"),
    ),
)

MOVERS = Table(
    "movers",
    (
        Column("Workload", "label"),
        Column("Team", "team"),
        Column("Last month", "before", "money"),
        Column("This month", "after", "money"),
        Column("Change", "change", "money"),
        Column("Volume", "volume", "money", help="The change in tokens at last month's average rate"),
        Column(
            "Price", "price", "money", help="The change in each provider × model's own rate, on this month's tokens"
        ),
        Column("Mix", "mix", "money", help="Tokens moving between providers and models, at last month's rates"),
        Column("Why", "why"),
    ),
    empty="Nothing moved: no spend this month or last.",
)

ORG_CAPS = Table(
    "org_caps",
    (
        Column("Cap", "label"),
        Column("Period", "period"),
        Column("Amount", "amount", "money"),
        Column("Spent", "spent", "money"),
        Column("Used", "used", "share"),
        Column("Forecast", "forecast", "money"),
        Column("Status", "status", "badge"),
    ),
    empty="No organisation-wide cap.",
)

BUDGETS = Table(
    "budgets",
    (
        Column("Team", "label"),
        Column("Budget (cap)", "cap"),
        Column("Period", "period"),
        Column("Budget", "budget", "money"),
        Column("Actual", "actual", "money", help="Spend of the cap's period up to the month's end"),
        Column("Variance", "variance", "money", help="Budget − actual: positive is under budget"),
        Column("Variance %", "variance_share", "share", help="Variance over the budget"),
        Column("Outcome", "status", "badge"),
    ),
    empty="No team has spend or a cap.",
)

BY_PROVIDER = Table(
    "by_provider",
    (
        Column("Provider", "label"),
        _change(),
        Column("Billed", "billed_cost", "money"),
        Column("Estimated", "estimated_cost", "money"),
        TOKENS,
        PER_MTOK,
        SHARE,
    ),
    empty="No spend this month.",
)

BY_TEAM = Table(
    "by_team",
    (
        Column("Cost centre", "cost_center"),
        Column("Team", "label"),
        _change(),
        TOKENS,
        PER_MTOK,
        SHARE,
    ),
    empty="No spend this month.",
)

SHARED_CHARGES = Table(
    "shared_charges",
    (
        Column("Team", "label"),
        Column(
            "Usage on charged accounts",
            "usage",
            "money",
            help="The team's usage spend on the accounts the tax, fees and credits were billed on",
        ),
        Column("Tax", "tax", "money"),
        Column("Fees and other", "fees", "money", help="Purchases (fees, support plans) and adjustments"),
        Column("Credits", "credit", "money"),
        Column(
            "Shared charges allocated",
            "allocated",
            "money",
            help=(
                "Pro rata to the usage on the account each charge is billed on (finops.spend.selectors.shared_charges)"
            ),
        ),
    ),
    empty="No tax, fee or credit was billed this month.",
)

BY_WORKLOAD = Table(
    "by_workload",
    (
        Column("Workload", "label"),
        Column("Team", "team"),
        _change(),
        TOKENS,
        PER_MTOK,
        SHARE,
    ),
    empty="No spend this month.",
)

TREND = Table(
    "trend",
    (
        Column("Month", "month"),
        Column("Provider", "label"),
        spend(),
        TOKENS,
        PER_MTOK,
    ),
    empty="No spend in the six months.",
)

UNIT_ECONOMICS = Table(
    "unit_economics",
    (
        Column("Workload", "label"),
        Column("Team", "team"),
        Column("Outcome unit", "outcome_unit"),
        Column("Outcomes", "outcomes", "count"),
        spend(),
        Column(
            "Cost per outcome",
            "per_outcome",
            "per_outcome",
            delta="per_outcome_change",
            help="Spend over outcomes in the month (Σcost / Σoutcomes); the change is against last month",
        ),
        Column("Last month", "previous_per_outcome", "per_outcome"),
        Column("p99", "p99_ms", "ms", help="From every measured request of the month (merged distribution)"),
        Column("SLA", "sla"),
        Column("Verdict", "verdict", "verdict"),
    ),
    empty="No workload reported outcomes or had an SLA to judge this month.",
)

COMMITMENTS = Table(
    "commitments",
    (
        Column("Contract", "label"),
        Column("Provider", "provider"),
        Column("Period", "period"),
        Column("Committed", "committed", "money", currency="currency"),
        Column("Consumed", "consumed", "money", currency="currency", help="Covered spend up to the month's end"),
        Column(
            "Plan to date",
            "expected",
            "money",
            currency="currency",
            help="The commitment × the share of the period gone",
        ),
        Column("Projected", "projected", "money", currency="currency", help="Consumed + the forecast of the days left"),
        Column("Status", "status", "badge"),
    ),
    empty="No contract in force this month.",
)

RENEWALS = Table(
    "renewals",
    (
        Column("Contract", "label"),
        Column("Provider", "provider"),
        Column("Renews on", "renews_on", "date"),
        Column("Notice deadline", "notice_deadline", "date"),
        Column("Days to deadline", "days_left", "count"),
        Column("Committed", "committed", "money", currency="currency"),
        Column("Advice", "advice"),
    ),
    empty="No auto-renewal has its notice deadline in the next six months.",
)

CAPS = Table(
    "caps",
    (
        Column("Cap", "label"),
        Column("Scope", "scope"),
        Column("Period", "period"),
        Column("Amount", "amount", "money"),
        Column("Spent", "spent", "money"),
        Column("Used", "used", "share"),
        Column("Forecast", "forecast", "money"),
        Column("Status", "status", "badge"),
    ),
    empty="No cap was breached or forecast to breach.",
)

ALERTS = Table(
    "alerts",
    (
        Column("Raised", "raised", "date"),
        Column("Alert", "kind"),
        Column("Subject", "label"),
        Column("State", "state"),
        Column("Sent to", "sent_to", "count", help="Recipients an email or webhook reached"),
    ),
    empty="No alert was raised this month.",
)

QUALITY = Table(
    "quality",
    (
        Column("Unattributed spend", "unattributed_cost", "money"),
        Column("Unattributed share", "unattributed_share", "share"),
        Column(
            "Unpriced tokens",
            "unpriced_tokens",
            "tokens",
            help="Usage with no billed cost and no list price: its cost is unknown",
        ),
        Column("Billed", "billed_cost", "money"),
        Column("Estimated", "estimated_cost", "money"),
        Column(
            "Estimated share", "estimated_share", "share", help="Spend computed from list prices rather than billed"
        ),
    ),
)

RECONCILIATION = Table(
    "reconciliation",
    (
        Column("Provider", "label"),
        Column("Billed usage", "billed", "money"),
        Column("At list price", "at_list", "money"),
        Column(
            "Variance",
            "variance",
            "change",
            help="(billed − at list price) / at list price, over usage with a list price",
        ),
        Column("Billed, no list price", "unpriced_billed", "money"),
    ),
    empty="No billed usage this month.",
)

SOURCES = Table(
    "sources",
    (
        Column("Account", "label"),
        Column("Provider", "provider"),
        Column("Days with data", "days_with_data", "count"),
        Column("Missing days", "missing_days", "count"),
        Column("First missing", "first_missing", "date"),
        Column("Failed runs", "failed_runs", "count"),
        Column("Last day with data", "latest_day", "date", help="The month's last day with data from this source"),
        Column("Settled", "settled"),
    ),
    empty="No sources.",
)

SAVINGS = Table(
    "savings",
    (
        Column("Workload", "workload"),
        Column("Team", "team"),
        Column("Family", "family"),
        Column(
            "This month",
            "today_cost",
            "money",
            help="What this part of the workload cost in the report's month (the month to date for the current one)",
        ),
        Column("Best offering", "best"),
        Column("Its monthly cost", "best_cost", "money"),
        Column("Saving / month", "saving", "money"),
        Column("SLA", "sla"),
    ),
    empty="No workload could move to a cheaper offering that meets its SLA.",
)


@dataclass(frozen=True)
class Section:
    key: str
    title: str
    tables: tuple[Table, ...]


SECTIONS = (
    Section("summary", "Summary", (SUMMARY, MOVERS, ORG_CAPS, BUDGETS)),
    Section(
        "spend", "Spend by provider, team and workload", (BY_PROVIDER, BY_TEAM, SHARED_CHARGES, BY_WORKLOAD, TREND)
    ),
    Section("unit_economics", "Unit economics", (UNIT_ECONOMICS,)),
    Section("commitments", "Commitments", (COMMITMENTS, RENEWALS)),
    Section("caps", "Caps and alerts", (CAPS, ALERTS)),
    Section("data_quality", "Data quality", (QUALITY, RECONCILIATION, SOURCES)),
    Section("savings", "Savings opportunities", (SAVINGS,)),
)
TABLES = {table.name: table for section in SECTIONS for table in section.tables}
TITLES = {
    "summary": "The month in figures",
    "movers": "Biggest movers, up and down",
    "org_caps": "Organisation caps",
    "budgets": "Budget against actual by team (the caps are the budgets)",
    "by_provider": "By provider",
    "by_team": "By team (showback by cost centre)",
    "shared_charges": "Shared charges (tax, fees, credits) allocated to teams",
    "by_workload": "By workload",
    "trend": "Six-month trend by provider",
    "unit_economics": "Cost per outcome and SLAs",
    "commitments": "Contracts: consumption against plan",
    "renewals": "Auto-renewals ahead (notice deadlines, 6 months)",
    "caps": "Caps breached or forecast to breach",
    "alerts": "Alerts raised",
    "quality": "Attribution and pricing",
    "reconciliation": "Billed against list price",
    "sources": "Sources",
    "savings": "Routing savings",
}
# The columns each table's totals row adds up: money rounded to the cent row by row and then added (the total is
# the sum of the figures shown above it), counts as they are. The rows stay as the report stores them; the totals
# row is drawn by every rendering (page, print, PDF, CSV, XLSX: total_row) and is never a figure of its own.
TOTALS = {
    "movers": ("before", "after", "change", "volume", "price", "mix"),
    "by_provider": ("cost", "billed_cost", "estimated_cost", "tokens", "unpriced_tokens", "previous_cost"),
    "by_team": ("cost", "tokens", "unpriced_tokens", "previous_cost"),
    "by_workload": ("cost", "tokens", "unpriced_tokens", "previous_cost"),
    "shared_charges": ("usage", "tax", "fees", "credit", "allocated"),
    "unit_economics": ("cost", "unpriced_tokens"),
    "reconciliation": ("billed", "at_list", "unpriced_billed"),
    "savings": ("today_cost", "best_cost", "saving"),
}
ROW_KEYS = {"trend": ("month", "label"), "alerts": ("raised", "kind", "label"), "savings": ("workload", "family")}


def row_key(table: Table, row: dict) -> tuple:
    """What identifies `row` of `table` across two versions of a month's report (label unless ROW_KEYS says)."""
    return tuple(row.get(key) for key in ROW_KEYS.get(table.name, ("label",)))


def total_row(table: Table, rows: list[dict]) -> dict | None:
    """The totals row of `table` (TOTALS), or None when it has none or no rows: "Total" in its first column."""
    keys = TOTALS.get(table.name)
    if not keys or not rows:
        return None
    kinds = {column.key: column.kind for column in table.columns}
    total: dict = {table.columns[0].key: "Total", "total": True}
    for key in keys:
        values = [row.get(key) for row in rows if row.get(key) is not None]
        if kinds.get(key, "money") == "money" and key not in ("tokens", "unpriced_tokens"):
            total[key] = sum((display.cents(v) for v in values), Decimal(0)) if values else None
        else:
            total[key] = sum(int(v) for v in values)
    if "previous_cost" in keys and total.get("cost") is not None and total.get("previous_cost"):
        total["change"] = (total["cost"] - total["previous_cost"]) / total["previous_cost"]
    return total


def rows_with_total(table: Table, rows: list[dict]) -> list[dict]:
    total = total_row(table, rows)
    return rows + [total] if total else rows
