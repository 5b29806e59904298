"""Reads of the outcome counts as posted (issue 12): one row per workload × day × source, scoped to what the
user may see (finops.core.access)."""

import datetime as dt

from django.db.models import QuerySet

from finops.core import access
from finops.models import OutcomeCount, Workload


def outcome_counts(
    *, user, workload: Workload | None = None, start: dt.date | None = None, end: dt.date | None = None
) -> QuerySet[OutcomeCount]:
    """Counts in [start, end) (either bound optional), of one workload or of every workload the user sees."""
    counts = OutcomeCount.objects.select_related("workload").filter(workload__in=access.visible_workloads(user))
    if workload is not None:
        counts = counts.filter(workload=workload)
    if start is not None:
        counts = counts.filter(day__gte=start)
    if end is not None:
        counts = counts.filter(day__lt=end)
    return counts.order_by("workload__slug", "day", "source")
