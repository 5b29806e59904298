"""The daily rollup, rebuilt set-based for exactly the days a write touched (DESIGN.md invariant 7)."""

import datetime as dt

from django.db import connection, transaction
from django.db.models import Count, Sum
from django.db.models.functions import TruncDate

from finops.models import DailySpend, UsageLine

# Rollup column -> aggregate over usage lines; the order is the INSERT's column order.
DIMENSIONS = ("account_id", "provider_id", "model", "workload_id", "team_id", "currency", "cost_basis", "charge_category")
MEASURES = {
    "input_tokens": Sum("input_tokens"),
    "cached_input_tokens": Sum("cached_input_tokens"),
    "cache_write_tokens": Sum("cache_write_tokens"),
    "output_tokens": Sum("output_tokens"),
    "requests": Sum("requests"),
    "cost": Sum("cost"),
    "reporting_cost": Sum("reporting_cost"),
    "line_count": Count("id"),
}


def _day_bounds(first: dt.date, last: dt.date) -> tuple[dt.datetime, dt.datetime]:
    start = dt.datetime.combine(first, dt.time(), tzinfo=dt.UTC)
    end = dt.datetime.combine(last + dt.timedelta(days=1), dt.time(), tzinfo=dt.UTC)
    return start, end


def day_ranges(days: set[dt.date]) -> list[tuple[dt.date, dt.date]]:
    """Consecutive days grouped into inclusive (first, last) ranges, oldest first."""
    ranges: list[list[dt.date]] = []
    for day in sorted(days):
        if ranges and day == ranges[-1][1] + dt.timedelta(days=1):
            ranges[-1][1] = day
        else:
            ranges.append([day, day])
    return [(first, last) for first, last in ranges]


@transaction.atomic
def rollup_rebuild(*, days: set[dt.date], account_ids: list[int] | None = None) -> None:
    """Replace the rollup rows of exactly `days` with fresh sums of the raw lines.

    One INSERT … SELECT … GROUP BY per run of consecutive days, compiled by the ORM so it runs on
    Postgres and on the demo's SQLite.
    """
    for first, last in day_ranges(days):
        _rebuild_range(first, last, account_ids)


def _rebuild_range(first: dt.date, last: dt.date, account_ids: list[int] | None) -> None:
    start, end = _day_bounds(first, last)
    stale = DailySpend.objects.filter(day__gte=first, day__lte=last)
    lines = UsageLine.objects.filter(period_start__gte=start, period_start__lt=end)
    if account_ids is not None:
        stale = stale.filter(account_id__in=account_ids)
        lines = lines.filter(account_id__in=account_ids)
    stale.delete()

    grouped = (
        lines.annotate(day=TruncDate("period_start"))
        .values("day", *DIMENSIONS)
        .annotate(**MEASURES)
        .values_list("day", *DIMENSIONS, *MEASURES)
        .order_by()
    )
    select_sql, params = grouped.query.sql_with_params()
    columns = ", ".join(connection.ops.quote_name(c) for c in ("day", *DIMENSIONS, *MEASURES))
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # Lines an import has just written have no statistics yet: the planner then expects one row and sorts
            # a million on disk (4 s for 1M lines) where hashing them into a few hundred groups takes a fraction.
            cursor.execute("SET LOCAL enable_sort = off")
        cursor.execute(f"INSERT INTO {DailySpend._meta.db_table} ({columns}) {select_sql}", params)
        if connection.vendor == "postgresql":
            cursor.execute("RESET enable_sort")
