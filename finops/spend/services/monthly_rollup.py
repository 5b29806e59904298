"""The monthly rollup, rebuilt from the daily rollup for exactly the months a daily rebuild touched.

rollup_rebuild calls monthly_rollup_rebuild at its end, in its transaction, with the same restriction (accounts,
workloads): a page never sees the two rollups disagree, and an ingest of one account re-sums only that account's
daily rows of the month (a few thousand at 10M lines a year), not the whole month. Reading DailySpend rather than
the raw lines keeps it cheap and makes "MonthlySpend = DailySpend summed by month" hold by construction.
"""

import datetime as dt

from django.db.models import Sum
from django.db.models.functions import TruncMonth

from finops.core.months import month_of, next_month
from finops.models import DailySpend, MonthlySpend

from .rollup_rows import insert_select, limited

DIMENSIONS = (
    "account_id",
    "provider_id",
    "model",
    "workload_id",
    "team_id",
    "currency",
    "cost_basis",
    "charge_category",
)
MEASURES = (
    "input_tokens",
    "cached_input_tokens",
    "cache_write_tokens",
    "output_tokens",
    "requests",
    "cost",
    "reporting_cost",
    "line_count",
)


def month_runs(days: set[dt.date]) -> list[tuple[dt.date, dt.date]]:
    """The months of `days` as runs of consecutive months, each an inclusive (first month, last month)."""
    runs: list[list[dt.date]] = []
    for month in sorted({month_of(day) for day in days}):
        if runs and month == next_month(runs[-1][1]):
            runs[-1][1] = month
        else:
            runs.append([month, month])
    return [(first, last) for first, last in runs]


def monthly_rollup_rebuild(
    *, days: set[dt.date], account_ids: list[int] | None = None, workload_ids: set | None = None
) -> None:
    """Replace the monthly rows of the months of `days` with DailySpend summed by month.

    `account_ids` / `workload_ids` (None in workload_ids standing for unattributed) restrict it exactly as they
    restrict the daily rebuild: both are rollup dimensions, so the other rows of those months are unchanged.
    Called inside rollup_rebuild's transaction.
    """
    if workload_ids is not None and not workload_ids:
        return
    for first, last in month_runs(days):
        _rebuild_months(first, last, account_ids, workload_ids)


def _rebuild_months(first: dt.date, last: dt.date, account_ids: list[int] | None, workload_ids: set | None) -> None:
    limits = {"account_ids": account_ids, "workload_ids": workload_ids}
    limited(MonthlySpend.objects.filter(month__gte=first, month__lte=last), **limits).delete()
    daily = limited(DailySpend.objects.filter(day__gte=first, day__lt=next_month(last)), **limits)
    # TruncMonth is date_trunc on Postgres, Django's function on the demo's SQLite.
    grouped = (
        daily.annotate(month=TruncMonth("day"))
        .values("month", *DIMENSIONS)
        .annotate(**{measure: Sum(measure) for measure in MEASURES})
        .values_list("month", *DIMENSIONS, *MEASURES)
        .order_by()
    )
    insert_select(MonthlySpend, ("month", *DIMENSIONS, *MEASURES), grouped)
