"""Contract alerts (issue 11): every contract whose term has not ended is read once per evaluation (a deadline is a
matter of days passing and contracts are few, so a change's scopes do not narrow them) and each contract kind judges
its status: contract_notice.py (a notice deadline ahead), contract_risk.py (shortfall or overage risk). Subject
`contract:<id>`, period_start the term's start, so renewing the term in place re-arms every threshold."""

import datetime as dt

from finops.alerts.services.spend_changes import SpendChange
from finops.models import AlertEvent, AlertKind

from . import contract_notice, contract_risk
from .contract_figures import open_statuses

KINDS = (AlertKind.CONTRACT_NOTICE, AlertKind.CONTRACT_SHORTFALL, AlertKind.CONTRACT_OVERAGE)


def evaluate(*, today: dt.date, change: SpendChange | None = None) -> list[AlertEvent]:
    """Each contract kind on every open contract's status (one read for all of them)."""
    raised = []
    for status in open_statuses(today):
        raised += contract_notice.raise_for(status)
        raised += contract_risk.raise_for(status)
    return raised
