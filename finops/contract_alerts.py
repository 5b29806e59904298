"""What a contract has to say as alerts (issue 11): which notice thresholds are crossed, whether the term is at
risk of a shortfall or an overage, and the titles and figures of those events. No writes: evaluations.py raises.

- **Notice** (`contract_notice`): an auto-renewing contract whose notice deadline is still ahead (today included)
  crosses a threshold of `notice_alert_days` when the deadline is that many days away or fewer. Subject
  `contract:<id>`, period_start the term's start (renewing the term re-arms every threshold), threshold the days.
- **Shortfall risk** (`contract_shortfall`, threshold SHORTFALL_THRESHOLD): ContractStatus.shortfall_risk (the
  open periods projected below 90 % of their commitment with at least a quarter of the term left), once per term.
- **Overage risk** (`contract_overage`, threshold OVERAGE_THRESHOLD): some period projected above its commitment,
  once per term.
"""

import datetime as dt
from decimal import ROUND_HALF_EVEN, Decimal

from finops import display
from finops.selectors.contracts import ContractStatus

SHORTFALL_THRESHOLD = 90  # percent of the commitment
OVERAGE_THRESHOLD = 100


def subject(status: ContractStatus) -> str:
    return f"contract:{status.contract.id}"


def notice_thresholds(status: ContractStatus) -> list[int]:
    """The thresholds (days) crossed today, largest first; none once the deadline has passed or without auto-renewal."""
    contract, days = status.contract, status.days_to_notice_deadline
    if not contract.auto_renew or days < 0 or status.today >= contract.end:
        return []
    configured = {int(d) for d in contract.notice_alert_days or [] if isinstance(d, int | str) and str(d).isdigit()}
    return sorted((d for d in configured if days <= d), reverse=True)


def shortfall_risk(status: ContractStatus) -> bool:
    return status.contract.start <= status.today < status.contract.end and status.shortfall_risk


def overage_risk(status: ContractStatus) -> bool:
    return status.contract.start <= status.today < status.contract.end and status.overage > 0


def _whole(value: Decimal, currency: str) -> str:
    """ "$34,921": whole units, for a title (the details keep every digit)."""
    return display.money_exact(Decimal(value).quantize(Decimal(1), rounding=ROUND_HALF_EVEN), currency)[:-3]


def notice_title(status: ContractStatus) -> str:
    """ "Anthropic enterprise auto-renews: notice due in 30 days (2 December 2026)"."""
    days = status.days_to_notice_deadline
    when = "today" if days == 0 else "in 1 day" if days == 1 else f"in {days} days"
    return f"{status.contract.name} auto-renews: notice due {when} ({display.day(status.notice_deadline)})"


def shortfall_title(status: ContractStatus) -> str:
    """ "Anthropic enterprise heading for a $34,921 shortfall (projected $85,078 of $120,000)"."""
    currency = status.contract.currency
    return (
        f"{status.contract.name} heading for a {_whole(status.shortfall, currency)} shortfall "
        f"(projected {_whole(status.projected, currency)} of {_whole(status.committed, currency)})"
    )


def overage_title(status: ContractStatus) -> str:
    """ "Anthropic enterprise heading for a $12,400 overage (projected $132,400 of $120,000)"."""
    currency = status.contract.currency
    return (
        f"{status.contract.name} heading for a {_whole(status.overage, currency)} overage "
        f"(projected {_whole(status.projected, currency)} of {_whole(status.committed, currency)})"
    )


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
