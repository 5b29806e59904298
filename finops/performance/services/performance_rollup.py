"""The performance rollup (issue 12): DailyPerformance from the timed usage lines (gateway logs) and the reported
metrics, MonthlyPerformance from DailyPerformance — rebuilt for exactly the days, accounts and workloads the
spend rollup rebuilds (rollup_rebuild calls it, in its transaction), so a re-attribution or a re-import moves
latency with spend.

Merged where the rows are (issue 23): a Performance is stored as columns and latency cells (finops.performance.measures,
finops.performance.latency), so a run of up to a month of days is one `INSERT … SELECT … GROUP BY`, like the spend
rollup: the
rows' counters summed per key; their cells unnested, grouped by key and bin (counts summed) and gathered again
into one array per key. Postgres unnests with `unnest` and gathers with `array_agg`; the demo's SQLite with
`json_each` and `json_group_array` (and a `bit_or` aggregate registered by finops.core.sqlite_functions).
"""

import datetime as dt

from django.db import connection
from django.db.models import BigIntegerField, Case, F, Q, QuerySet, Value, When
from django.db.models.functions import ExtractHour, TruncDate, TruncMonth

from finops.core.months import next_month
from finops.models import (
    Account,
    ConnectorKind,
    DailyPerformance,
    MonthlyPerformance,
    ReportedPerformance,
    UsageLine,
)
from finops.performance.latency import COUNT_BITS, COUNT_MASK
from finops.performance.measures import COLUMNS
from finops.spend.services.monthly_rollup import month_runs
from finops.spend.services.rollup_rows import aggregate_settings, day_chunks, limited

# Connectors whose lines carry per-request timings; other accounts' lines never do, so an import of them does not
# scan its days again for timings.
TIMED_CONNECTORS = {ConnectorKind.GATEWAY_LOG, ConnectorKind.LITELLM_API}
# Days merged by one statement (issue 23): each of a line's cells is a row of the (group, bin) hash aggregate, so a
# week's table stays small where a month's (665k bins of 4.7M cells on the 10M-line bench) outgrows the CPU's
# caches: 2.7 s of CPU a month of lines merged by weeks against 3.2 s by the month.
CHUNK_DAYS = 7
KEYS = ("account_id", "provider_id", "model", "workload_id", "team_id")
COUNTERS = COLUMNS[:-1]  # every column but the cells
_MAX = {"summary_p99_ms"}  # a bound: the largest, not the sum


def performance_rollup_rebuild(
    *, days: set[dt.date], account_ids: list[int] | None = None, workload_ids: set | None = None
) -> None:
    """Replace the performance rows of `days` (and their months) with fresh merges, limited like rollup_rebuild:
    `account_ids` given → only those accounts' rows (reported metrics, account null, are left alone);
    `workload_ids` (None standing for unattributed) → only those workloads' rows."""
    if not days or (workload_ids is not None and not workload_ids):
        return
    if account_ids is not None:
        account_ids = list(
            Account.objects.filter(id__in=account_ids, connector__in=TIMED_CONNECTORS).values_list("id", flat=True)
        )
        if not account_ids:
            return
    limits = {"account_ids": account_ids, "workload_ids": workload_ids}
    with aggregate_settings():  # the spend rollup's planner settings (hash aggregates in memory, no JIT)
        for first, last in day_chunks(days, CHUNK_DAYS):
            _rebuild_days(first, last, limits)
        for first_month, last_month in month_runs(days):
            _rebuild_months(first_month, last_month, limits)


def _rebuild_days(first: dt.date, last: dt.date, limits: dict) -> None:
    """The daily rows of [first, last] from their lines (and reported hours), merged in one statement."""
    start = dt.datetime.combine(first, dt.time(), tzinfo=dt.UTC)
    end = dt.datetime.combine(last + dt.timedelta(days=1), dt.time(), tzinfo=dt.UTC)
    limited(DailyPerformance.objects.filter(day__gte=first, day__lte=last), **limits).delete()
    sources = [_lines(start, end, limits)]
    if limits["account_ids"] is None:  # reported metrics have no account
        reported = ReportedPerformance.objects.filter(hour__gte=start, hour__lt=end)
        if limits["workload_ids"] is not None:
            reported = reported.filter(workload_id__in=[w for w in limits["workload_ids"] if w is not None])
        sources.append(_reported(reported))
    _merge_into(DailyPerformance, ("day", *KEYS), sources, hours=True)


def _rebuild_months(first: dt.date, last: dt.date, limits: dict) -> None:
    # account_id IN (…) never matches the reported rows' null account: they stay when an import rebuilds.
    limited(MonthlyPerformance.objects.filter(month__gte=first, month__lte=last), **limits).delete()
    daily = limited(DailyPerformance.objects.filter(day__gte=first, day__lt=next_month(last)), **limits)
    rows = daily.annotate(month_of=TruncMonth("day", output_field=DailyPerformance._meta.get_field("day")))
    _merge_into(
        MonthlyPerformance,
        ("month", *KEYS),
        [rows.values_list("month_of", *KEYS, Value(0, BigIntegerField()), *COLUMNS).order_by()],
        hours=False,
    )


# --- the rows merged: (period, *KEYS, hour, *COLUMNS) ---


def _lines(start: dt.datetime, end: dt.datetime, limits: dict) -> QuerySet:
    """The timed lines of [start, end) as rows to merge. A line's requests with per-request data are its own
    `requests` (less any summary's); it holds no report's summary errors (finops.performance.measures.LINE_COLUMNS)."""
    lines = limited(
        UsageLine.objects.filter(
            Q(errors__isnull=False) | Q(summary_requests__isnull=False), period_start__gte=start, period_start__lt=end
        ),
        **limits,
        workload_field="signature__workload_id",
    )
    zero = Value(0, BigIntegerField())
    measured = Case(
        When(errors__isnull=True, then=zero),
        default=F("requests") - _or_zero("summary_requests"),
        output_field=BigIntegerField(),
    )
    return (
        lines.annotate(
            day_of=TruncDate("period_start"),
            hour_of=ExtractHour("period_start"),
            workload_of=F("signature__workload_id"),
            team_of=F("signature__team_id"),
            requests_of=measured,
        )
        .values_list(
            "day_of",
            "account_id",
            "provider_id",
            "model",
            "workload_of",
            "team_of",
            "hour_of",
            "requests_of",
            *COLUMNS[1:-3],
            zero,
            zero,
            "latency",  # summary_errors, summary_counted: a report's only
        )
        .order_by()
    )


def _reported(rows: QuerySet) -> QuerySet:
    return (
        rows.annotate(
            day_of=TruncDate("hour"),
            hour_of=ExtractHour("hour"),
            account_of=Value(None, BigIntegerField()),
            team_of=F("workload__team_id"),
        )
        .values_list("day_of", "account_of", "provider_id", "model", "workload_id", "team_of", "hour_of", *COLUMNS)
        .order_by()
    )


def _or_zero(name: str):
    return Case(When(**{f"{name}__isnull": True}, then=Value(0)), default=F(name), output_field=BigIntegerField())


# --- the merge ---

_VENDOR = {
    # a row's cells (k.latency) one per row; the merged bins gathered again into one row's cells
    "postgresql": {
        "cells": "CROSS JOIN LATERAL unnest(k.latency) AS c(cell)",
        "cell": "c.cell",
        "gather": "array_agg(b.cell ORDER BY b.cell)",
        "int": "bigint",
        "materialized": "MATERIALIZED",
    },
    "sqlite": {
        "cells": "JOIN json_each(k.latency) AS c",
        "cell": "c.value",
        "gather": "json_group_array(b.cell)",
        "int": "integer",
        "materialized": "MATERIALIZED",
    },
}


def _merge_into(model, period_and_keys: tuple[str, ...], sources: list[QuerySet], *, hours: bool) -> None:
    """INSERT INTO `model` the rows of `sources` (values_lists of period, KEYS, hour, COLUMNS) merged per period and
    key: counters summed (summary_p99_ms: the largest), cells merged bin by bin, the hours a bit mask.

    Each group is numbered first (dense_rank over the key, a few thousand rows), so that the cells — tens of
    their rows per line — are grouped by two integers, not by the six columns of the key (model is text): on the
    page bench that is the difference between 12 s and a fraction of it for a month of lines."""
    sql = _VENDOR[connection.vendor]
    selects, params = [], []
    for rows in sources:
        select, more = rows.query.sql_with_params()
        selects.append(select)
        params += more
    names = (*period_and_keys, "hour", *COLUMNS)
    keys = ", ".join(period_and_keys)
    as_int, cell = sql["int"], sql["cell"]
    sums = ", ".join(
        f"max({name}) AS {name}" if name in _MAX else f"coalesce(sum({name}), 0) AS {name}" for name in COUNTERS
    )
    hour_bits = "bit_or(CAST(1 AS integer) << CAST(hour AS integer)) AS hours, " if hours else ""
    columns = (*period_and_keys, *(("hours",) if hours else ()), *COUNTERS, "latency")
    statement = f"""WITH r({", ".join(names)}) AS ({" UNION ALL ".join(selects)}),
        k AS {sql["materialized"]} (SELECT r.*, dense_rank() OVER (ORDER BY {keys}) AS grp FROM r),
        sums AS (SELECT grp, {keys}, {hour_bits}{sums} FROM k GROUP BY grp, {keys}),
        bins AS (SELECT k.grp, (({cell} >> {COUNT_BITS}) << {COUNT_BITS})
                                | CAST(sum({cell} & {COUNT_MASK}) AS {as_int}) AS cell
                   FROM k {sql["cells"]} GROUP BY k.grp, ({cell} >> {COUNT_BITS})),
        merged AS (SELECT b.grp, {sql["gather"]} AS latency FROM bins AS b GROUP BY b.grp)
        INSERT INTO {model._meta.db_table} ({", ".join(columns)})
        SELECT {", ".join(f"sums.{name}" for name in columns[:-1])}, merged.latency
          FROM sums LEFT JOIN merged ON merged.grp = sums.grp"""
    with connection.cursor() as cursor:
        cursor.execute(statement, params)


def reported_changed(*, workload_ids: set[int], days: set[dt.date]) -> None:
    """After reported metrics of these workloads and days were written: rebuild those rows."""
    performance_rollup_rebuild(days=days, workload_ids=workload_ids)
