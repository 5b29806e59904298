"""The overview's rollup (TeamDailySpend), re-summed from DailySpend for whole days.

rollup_rebuild calls team_rollup_rebuild at its end, in its transaction, for exactly the days it rebuilt: whatever
restricted the daily rebuild (accounts, workloads), the days' every DailySpend row is summed again, because this
table has neither dimension. Reading DailySpend rather than the raw lines makes "TeamDailySpend = DailySpend summed
by day, team, provider, basis and category" hold by construction, as MonthlySpend does by month. A re-attribution
on Postgres changes it by difference instead, as it does DailySpend (finops.spend.services.spend_delta: only moves
between teams change it), and tests/rollup_check.py holds it to DailySpend after every change.
"""

import datetime as dt

from django.db.models import Sum

from finops.models import DailySpend, TeamDailySpend

from .monthly_rollup import MEASURES as MONTHLY_MEASURES
from .rollup_rows import day_chunks, insert_select

DIMENSIONS = ("team_id", "provider_id", "cost_basis", "charge_category")
# The monthly rollup's measures but `cost` (amounts in their own currencies): the overview adds reporting costs only.
MEASURES = tuple(measure for measure in MONTHLY_MEASURES if measure != "cost")


def team_rollup_rebuild(*, days: set[dt.date]) -> None:
    """Replace the rows of `days` with DailySpend's rows of those days summed by DIMENSIONS. Called inside
    rollup_rebuild's transaction (and by an account's deletion, for the days the account had)."""
    for first, last in day_chunks(days):
        TeamDailySpend.objects.filter(day__gte=first, day__lte=last).delete()
        grouped = (
            DailySpend.objects.filter(day__gte=first, day__lte=last)
            .values("day", *DIMENSIONS)
            .annotate(**{measure: Sum(measure) for measure in MEASURES})
            .values_list("day", *DIMENSIONS, *MEASURES)
            .order_by()
        )
        insert_select(TeamDailySpend, ("day", *DIMENSIONS, *MEASURES), grouped)
