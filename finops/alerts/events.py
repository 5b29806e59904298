"""The one place alert events are raised: `event_raise` inserts a row unique per kind × subject × period ×
threshold, so evaluating twice, or from several workers at once, raises each event once."""

import datetime as dt

from django.db import IntegrityError, transaction
from django.utils import timezone

from finops.models import AlertEvent


def today_utc() -> dt.date:
    return timezone.now().astimezone(dt.UTC).date()


def event_raise(
    *, kind: str, subject: str, period_start: dt.date, threshold: int = 0, title: str, details: dict, **fields
) -> AlertEvent | None:
    """Insert the event unless it exists: the new row, or None when it was raised before (by this process or
    any other: the unique constraint decides, inside a savepoint so the caller's transaction goes on)."""
    try:
        with transaction.atomic():
            return AlertEvent.objects.create(
                kind=kind,
                subject=subject,
                period_start=period_start,
                threshold=threshold,
                title=title,
                details=details,
                **fields,
            )
    except IntegrityError:
        return None


def keep_last_only(new: list[AlertEvent]) -> None:
    """Thresholds crossed together (a big import, a first evaluation) say one thing: only the last of `new` is
    sent; the others are kept, marked superseded, so each threshold still fires once and never later."""
    for event in new[:-1]:
        AlertEvent.objects.filter(id=event.id, state=AlertEvent.State.PENDING).update(state=AlertEvent.State.SUPERSEDED)
