"""The contract pages' tables, each defined once (finops.reports.tables). Money columns read in each
contract's own currency (the row's `currency`): on the page by its symbol, in the CSV and XLSX in the Currency
column."""

from finops.reports.tables import Column, Table

CONTRACT_RENEWALS = Table(
    "contract_renewals",
    (
        Column("Contract", "name"),
        Column("Notice deadline", "notice_deadline", "date"),
        Column("Days left", "days_left", "count", help="Days until the notice deadline, today excluded."),
        Column("Committed", "committed", "money", currency="currency"),
        Column("Projected use", "projected", "money", currency="currency"),
        Column("Renewal advice", "advice"),
    ),
    empty="No auto-renewal has its notice deadline in the next six months.",
)

CONTRACTS = Table(
    "contracts",
    (
        Column("Contract", "name"),
        Column("Provider", "provider"),
        Column("Status", "status_label"),
        Column("Start", "start", "date"),
        Column("End", "last_day", "date", help="The term's last day (UTC)."),
        Column("Committed", "committed", "money", currency="currency"),
        Column("Consumed", "consumed", "money", currency="currency"),
        Column(
            "Expected to date",
            "expected",
            "money",
            currency="currency",
            help="The commitment × the share of the term gone (per period).",
        ),
        Column(
            "Projected",
            "projected",
            "money",
            currency="currency",
            help="Consumed + the forecast of the days left (finops.forecast.projection).",
        ),
        Column(
            "Shortfall", "shortfall", "money", currency="currency", help="Committed and, by the forecast, not used."
        ),
        Column("Overage", "overage", "money", currency="currency", help="Projected above the commitment."),
    ),
    empty="No contracts yet.",
)

CONTRACT_PERIODS = Table(
    "contract_periods",
    (
        Column("From", "start", "date"),
        Column("To", "last_day", "date"),
        Column("Committed", "committed", "money", currency="currency"),
        Column("Consumed", "consumed", "money", currency="currency"),
        Column("Expected to date", "expected", "money", currency="currency"),
        Column("Projected", "projected", "money", currency="currency"),
        Column("Shortfall", "shortfall", "money", currency="currency"),
        Column("Overage", "overage", "money", currency="currency"),
    ),
    empty="No periods.",
)

CONTRACT_PAST_TERMS = Table(
    "contract_past_terms",
    (
        Column("From", "start", "date"),
        Column("To", "last_day", "date"),
        Column("Basis", "basis"),
        Column("Committed", "committed", "money", currency="currency"),
        Column("Consumed", "consumed", "money", currency="currency"),
        Column("Used", "used", "share", help="Consumed ÷ committed."),
    ),
    empty="No past terms: the contract has not been renewed in place.",
)
