"""Measured performance of many workloads over a few periods at once, merged where the rows are (issue 12's
scorecard: hundreds of workloads, a quarter and the span it is compared with, ≤ 300 ms at 10M lines).

The merge is finops.performance.measures's: every row's counters by Performance.absorb_columns (counts and sums add, in
place), its cells by finops.performance.latency.absorb_cell_rows (the same bucket-by-bucket sums, every row of a
workload and span at once). What changes is the reading: one query for
every span and every workload, in which Postgres drops each row's time-to-first-token cells before handing them
over. The result is identical to merging with performance_by
(tests/test_scorecard.py checks it).

Left out because a table of many workloads shows none of it: the time-to-first-token distribution. Off Postgres
(the SQLite demo) the rows are merged in Python by performance_by, with the same result.

The rows of a period are its whole UTC months from MonthlyPerformance and its other days from DailyPerformance
(month_split), as performance_by reads them.
"""

import datetime as dt
from collections.abc import Iterable

from django.db import connection

from finops.performance.latency import COUNT_BITS, TTFT, absorb_cell_rows
from finops.performance.measures import COLUMNS, Performance

from .performance import month_split, performance_by

Key = tuple[int, int, str]  # workload, provider, model


def _source(name: str, start: dt.date, end: dt.date, ids: list[int]) -> tuple[list[str], list]:
    """SELECT statements (and their parameters) of the rollup rows of [start, end), labelled `name`."""
    columns = f"%s::text AS span, workload_id, provider_id, model, {', '.join(COLUMNS)}"
    months, day_ranges = month_split(start, end)
    parts, params = [], []
    if months:
        parts.append(f"SELECT {columns} FROM finops_monthlyperformance WHERE month = ANY(%s) AND workload_id = ANY(%s)")
        params += [name, months, ids]
    if day_ranges:
        days = " OR ".join("(day >= %s AND day < %s)" for _ in day_ranges)
        parts.append(f"SELECT {columns} FROM finops_dailyperformance WHERE workload_id = ANY(%s) AND ({days})")
        params += [name, ids, *[d for pair in day_ranges for d in pair]]
    return parts, params


def performance_totals(
    workload_ids: Iterable[int], spans: dict[str, tuple[dt.date, dt.date]]
) -> dict[str, tuple[dict[int, Performance], dict[Key, int]]]:
    """Per span name: (Performance per workload — counts, sums and the e2e distribution merged over the span —,
    measured requests per workload × provider × model, the weights of quality_by). One query for all the spans."""
    ids = list(workload_ids)
    found = {name: ({}, {}) for name in spans}
    if not ids:
        return found
    if connection.vendor != "postgresql":
        return {name: _in_python(ids, *span) for name, span in spans.items()}
    parts, params = [], []
    for name, (start, end) in spans.items():
        more, more_params = _source(name, start, end, ids)
        parts += more
        params += more_params
    if not parts:
        return found
    rows = " UNION ALL ".join(parts)
    counters = ", ".join(f"r.{name}" for name in COLUMNS[:-1])
    with connection.cursor() as cursor:
        # The stored Performance without its TTFT cells (a table of workloads shows none of it). A rollup row's cells
        # are sorted (the rollup gathers them with array_agg(… ORDER BY cell); migration 0025 sorted them too), and
        # every end-to-end cell is below every TTFT cell, so the end-to-end ones are the array's head: width_bucket
        # counts them by binary search (issue 23: unnesting each row's ~300 cells cost ~35 ms of the scorecard).
        cursor.execute(
            f"SELECT span, workload_id, provider_id, model, {counters}, "
            f"r.latency[1:width_bucket({(TTFT << (12 + COUNT_BITS)) - 1}::bigint, r.latency)] FROM ({rows}) r",
            params,
        )
        fetched = cursor.fetchall()
    cells: dict[tuple[str, int], list] = {}
    for span, workload_id, provider_id, model, *stored in fetched:
        by_workload, by_model = found[span]
        key = (workload_id, provider_id, model)
        by_model[key] = by_model.get(key, 0) + stored[0] + stored[COLUMNS.index("summary_requests")]
        if workload_id not in by_workload:
            by_workload[workload_id] = Performance()
        cells.setdefault((span, workload_id), []).append(stored[-1])
        stored[-1] = None  # the counters in place (one pass over the quarter's rows); the cells all at once below
        by_workload[workload_id].absorb_columns(stored)
    for (span, workload_id), rows in cells.items():
        performance = found[span][0][workload_id]
        absorb_cell_rows(performance.e2e, performance.ttft, rows)
    return found


def _in_python(ids: list[int], start: dt.date, end: dt.date) -> tuple[dict[int, Performance], dict[Key, int]]:
    by_model = performance_by(ids, start, end)
    by_workload: dict[int, Performance] = {}
    for (workload_id, _, _), performance in by_model.items():
        by_workload.setdefault(workload_id, Performance()).absorb(performance)
    return by_workload, {key: performance.all_requests for key, performance in by_model.items()}
