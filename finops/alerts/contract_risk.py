"""`contract_shortfall` (threshold SHORTFALL_THRESHOLD): the open periods projected below 90 % of their commitment
with at least a quarter of the term left; `contract_overage` (threshold OVERAGE_THRESHOLD): some period projected
above its commitment. Each once per term."""

from finops.contracts.selectors import ContractStatus
from finops.models import AlertEvent, AlertKind

from .contract_figures import contract_details, subject, whole
from .events import event_raise

KINDS = (AlertKind.CONTRACT_SHORTFALL, AlertKind.CONTRACT_OVERAGE)
SHORTFALL_THRESHOLD = 90  # percent of the commitment
OVERAGE_THRESHOLD = 100


def raise_for(status: ContractStatus) -> list[AlertEvent]:
    raised = []
    risks = (
        (AlertKind.CONTRACT_SHORTFALL, SHORTFALL_THRESHOLD, shortfall_risk, shortfall_title),
        (AlertKind.CONTRACT_OVERAGE, OVERAGE_THRESHOLD, overage_risk, overage_title),
    )
    for kind, threshold, at_risk, title in risks:
        if at_risk(status):
            event = event_raise(
                kind=kind,
                subject=subject(status),
                period_start=status.contract.start,
                threshold=threshold,
                title=title(status)[:300],
                details=contract_details(status),
                contract=status.contract,
            )
            raised += [event] if event else []
    return raised


def shortfall_risk(status: ContractStatus) -> bool:
    return status.contract.start <= status.today < status.contract.end and status.shortfall_risk


def overage_risk(status: ContractStatus) -> bool:
    return status.contract.start <= status.today < status.contract.end and status.overage > 0


def shortfall_title(status: ContractStatus) -> str:
    """ "Anthropic enterprise heading for a $34,921 shortfall (projected $85,078 of $120,000)"."""
    currency = status.contract.currency
    return (
        f"{status.contract.name} heading for a {whole(status.shortfall, currency)} shortfall "
        f"(projected {whole(status.projected, currency)} of {whole(status.committed, currency)})"
    )


def overage_title(status: ContractStatus) -> str:
    """ "Anthropic enterprise heading for a $12,400 overage (projected $132,400 of $120,000)"."""
    currency = status.contract.currency
    return (
        f"{status.contract.name} heading for a {whole(status.overage, currency)} overage "
        f"(projected {whole(status.projected, currency)} of {whole(status.committed, currency)})"
    )
