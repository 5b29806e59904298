"""FOCUS 1.3 **Contract Commitment** dataset: one row per commitment period of each contract term (docs/contracts.md).

The ONE definition of the columns (`COLUMNS`), used by `GET /api/v1/contracts/focus.csv` and
`python manage.py export_contracts_focus`. No ORM here: callers pass the contracts (with their past terms
prefetched); the periods come from finops.contracts.selectors.commitment_periods, as the status figures do.

Columns, in the order of the FOCUS 1.3 dataset (13 columns):

- `ContractCommitmentId`: `<contract id>:<period start>` (e.g. `7:2026-03-01`), unique and stable: periods of a
  contract never overlap, and a renewal archives a term without changing its periods.
- `ContractCommitmentType`: the commitment basis as stored: `term`, `monthly` or `yearly` (provider-defined in FOCUS).
- `ContractCommitmentCategory`: always `Spend` (every commitment here is an amount of money, none a quantity).
- `ContractCommitmentCost`: the period's committed amount, a plain decimal with 6 places in the contract's
  currency; a month or year cut by the term's start or end is committed pro rata by day (the selector's rule).
- `ContractCommitmentQuantity`, `ContractCommitmentUnit`: **empty**. FOCUS fills them for `Usage` commitments (a
  quantity of units); a `Spend` commitment is measured by its cost alone.
- `ContractCommitmentDescription`: `<contract name>: <basis label>, commitment <amount> <currency>` (+ prepaid).
- `ContractCommitmentPeriodStart` / `End`: the period, `[start, end)`, ISO 8601 UTC (`2026-01-01T00:00:00Z`).
- `ContractId`: the contract's id (names can be changed; the name is in the description).
- `ContractPeriodStart` / `End`: the term the period belongs to, `[start, end)`, ISO 8601 UTC. Past terms of a
  contract renewed in place are exported too, each with its own dates (the history stays visible).
- `BillingCurrency`: the contract's ISO 4217 currency.
"""

import datetime as dt
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from decimal import Decimal

from finops.contracts.selectors import CommitmentPeriod, commitment_periods
from finops.models import CommitmentBasis, Contract
from finops.reports.cells import SafeCsvWriter

MICRO = Decimal("0.000001")


@dataclass(frozen=True)
class CommitmentRow:
    contract: Contract
    term: object  # the Contract (its current term) or a ContractTerm
    period: CommitmentPeriod


def _time(day: dt.date) -> str:
    return f"{day.isoformat()}T00:00:00Z"


def _money(value: Decimal) -> str:
    return format(Decimal(value).quantize(MICRO), "f")


def _description(row: CommitmentRow) -> str:
    term, contract = row.term, row.contract
    text = (
        f"{contract.name}: {CommitmentBasis(term.commitment_basis).label}, commitment {_money(term.commitment)} "
        f"{contract.currency}"
    )
    return text + (f", prepaid {_money(term.prepaid)}" if term.prepaid else "")


COLUMNS: list[tuple[str, Callable[[CommitmentRow], str]]] = [
    ("ContractCommitmentId", lambda r: f"{r.contract.id}:{r.period.start.isoformat()}"),
    ("ContractCommitmentType", lambda r: r.term.commitment_basis),
    ("ContractCommitmentCategory", lambda r: "Spend"),
    ("ContractCommitmentCost", lambda r: _money(r.period.committed)),
    ("ContractCommitmentQuantity", lambda r: ""),
    ("ContractCommitmentUnit", lambda r: ""),
    ("ContractCommitmentDescription", _description),
    ("ContractCommitmentPeriodStart", lambda r: _time(r.period.start)),
    ("ContractCommitmentPeriodEnd", lambda r: _time(r.period.end)),
    ("ContractId", lambda r: str(r.contract.id)),
    ("ContractPeriodStart", lambda r: _time(r.term.start)),
    ("ContractPeriodEnd", lambda r: _time(r.term.end)),
    ("BillingCurrency", lambda r: r.contract.currency),
]
HEADER = [name for name, _ in COLUMNS]


def commitment_rows(contracts: Iterable[Contract]) -> list[CommitmentRow]:
    """Every commitment period of every term (past terms first, oldest first), contract by contract."""
    rows = []
    for contract in contracts:
        terms = sorted(contract.past_terms.all(), key=lambda t: t.start) + [contract]
        for term in terms:
            rows.extend(CommitmentRow(contract, term, period) for period in commitment_periods(term))
    return rows


def write_focus_csv(contracts: Iterable[Contract], out) -> int:
    """The dataset as CSV on `out` (a text stream); returns the number of rows written."""
    writer = SafeCsvWriter(out, lineterminator="\n")
    writer.writerow(HEADER)
    rows = commitment_rows(contracts)
    for row in rows:
        writer.writerow([value(row) for _, value in COLUMNS])
    return len(rows)
