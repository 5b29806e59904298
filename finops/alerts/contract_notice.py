"""`contract_notice` (threshold = days): an auto-renewing contract whose notice deadline (end − notice days) is
today or ahead crosses a threshold of `notice_alert_days` when the deadline is that many days away or fewer.
Thresholds crossed together say one thing: the smallest, most urgent one is sent, the larger ones kept superseded."""

from finops.contracts.selectors import ContractStatus
from finops.core import display
from finops.models import AlertEvent, AlertKind

from .contract_figures import contract_details, subject
from .events import event_raise, keep_last_only

KINDS = (AlertKind.CONTRACT_NOTICE,)


def raise_for(status: ContractStatus) -> list[AlertEvent]:
    """The thresholds newly crossed by one contract's status; only the last (smallest) one is sent."""
    new = []
    for days in notice_thresholds(status):  # largest first: the last one new is the one sent
        event = event_raise(
            kind=AlertKind.CONTRACT_NOTICE,
            subject=subject(status),
            period_start=status.contract.start,
            threshold=days,
            title=notice_title(status),
            details=contract_details(status),
            contract=status.contract,
        )
        new += [event] if event else []
    keep_last_only(new)
    return new


def notice_thresholds(status: ContractStatus) -> list[int]:
    """The thresholds (days) crossed today, largest first; none once the deadline has passed or without auto-renewal."""
    contract, days = status.contract, status.days_to_notice_deadline
    if not contract.auto_renew or days < 0 or status.today >= contract.end:
        return []
    configured = {int(d) for d in contract.notice_alert_days or [] if isinstance(d, int | str) and str(d).isdigit()}
    return sorted((d for d in configured if days <= d), reverse=True)


def notice_title(status: ContractStatus) -> str:
    """ "Anthropic enterprise auto-renews: notice due in 30 days (2 December 2026)"."""
    days = status.days_to_notice_deadline
    when = "today" if days == 0 else "in 1 day" if days == 1 else f"in {days} days"
    return f"{status.contract.name} auto-renews: notice due {when} ({display.day(status.notice_deadline)})"
