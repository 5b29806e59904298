"""Spend changed → AlertEvent rows: the one list of alert kinds the evaluation walks (docs/alerts.md).

Evaluation never sends anything: each check inserts events through `events.event_raise` (unique per kind ×
subject × period × threshold) and delivery (finops.notify) claims and sends them. So evaluating twice, or from
several workers at once, raises each event once; a new period is a new period_start and re-arms every threshold.
"""

import datetime as dt

from finops.alerts.services.spend_changes import SpendChange
from finops.models import AlertEvent

from . import caps, contracts, outcomes, sources, spikes, unpriced
from .events import today_utc

# Each module: KINDS (the AlertKind values it raises) and evaluate(*, today, change) -> the events it raised.
CHECKS = (caps, spikes, unpriced, sources, contracts, outcomes)


def alerts_evaluate(*, change: SpendChange | None = None, today: dt.date | None = None) -> list[AlertEvent]:
    """Raise what the spend (after `change`, or in general when None: the beat's catch-up) calls for."""
    today = today or today_utc()
    raised: list[AlertEvent] = []
    for check in CHECKS:
        raised += check.evaluate(today=today, change=change)
    return raised
