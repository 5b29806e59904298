"""What the contract alert kinds share (contracts.py): the subject, and every figure of the status as decimal strings
with who answers for the contract. Subject `contract:<id>`, period_start the term's start, so renewing the term in
place re-arms every threshold."""

import datetime as dt
from decimal import ROUND_HALF_EVEN, Decimal

from finops.contracts.selectors import ContractStatus, contract_statuses
from finops.core import display
from finops.models import Contract


def subject(status: ContractStatus) -> str:
    return f"contract:{status.contract.id}"


def open_statuses(today: dt.date) -> list[ContractStatus]:
    """Every contract whose term has not ended: a deadline is a matter of days passing and contracts are few, so
    every one is looked at whatever a change names (a change only moves the projections)."""
    contracts = list(Contract.objects.filter(end__gt=today).select_related("provider").prefetch_related("accounts"))
    return contract_statuses(contracts, today=today)


def whole(value: Decimal, currency: str) -> str:
    """ "$34,921": whole units, for a title (the details keep every digit)."""
    return display.money_exact(Decimal(value).quantize(Decimal(1), rounding=ROUND_HALF_EVEN), currency)[:-3]


def _day(value: dt.date | None) -> str | None:
    return value.isoformat() if value else None


def contract_details(status: ContractStatus) -> dict:
    """Every figure, as decimal strings (the event keeps them as raised), and who answers for the contract."""
    contract, text = status.contract, display.csv_decimal
    return {
        "contract": contract.name,
        "provider": contract.provider.name,
        "owner": contract.owner,
        "currency": contract.currency,
        "term_start": _day(contract.start),
        "term_end": _day(contract.end),
        "commitment": text(contract.commitment),
        "commitment_basis": contract.commitment_basis,
        "committed": text(status.committed),
        "prepaid": text(contract.prepaid),
        "prepaid_used": text(status.prepaid_used),
        "prepaid_left": text(status.prepaid_left),
        "discount_pct": text(contract.discount_pct),
        "consumed": text(status.consumed),
        "expected_to_date": text(status.expected_to_date),
        "run_rate": text(status.run_rate),
        "projected": text(status.projected),
        "shortfall": text(status.shortfall),
        "overage": text(status.overage),
        "days_left": status.days_left,
        "renewal_baseline": text(status.renewal_baseline),
        "renewal_advice": text(status.renewal_advice),
        "auto_renew": contract.auto_renew,
        "renewal_term_months": contract.renewal_term_months,
        "notice_days": contract.notice_days,
        "notice_deadline": _day(status.notice_deadline),
        "days_to_notice_deadline": status.days_to_notice_deadline,
        "status": status.status,
        "periods": [
            {
                "start": _day(p.start),
                "end": _day(p.end),
                "committed": text(p.committed),
                "consumed": text(p.consumed),
                "projected": text(p.projected),
            }
            for p in status.periods
        ],
    }
