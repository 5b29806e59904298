"""Measured performance of many workloads over a few periods at once, merged where the rows are (issue 12's
scorecard: hundreds of workloads, a quarter and the span it is compared with, ≤ 300 ms at 10M lines).

The merge is finops.performance's, not another one: counts and sums add (Performance.absorb), and end-to-end
latency distributions merge by adding their counts bucket by bucket (LatencyDistribution.merge). What changes is
the reading: one query for every span, in which Postgres hands over only what a table of many workloads uses —
the counts, the sums and each row's e2e buckets as JSON text — and the buckets are added into one dictionary per
workload, instead of every row's whole JSON (TTFT included) parsed into objects and merged by copies. A quarter
of a large gateway is hundreds of monthly rows of a few hundred buckets each; this reads them ~2× faster than
performance_by and ~1.5× faster than summing `jsonb_each` rows in SQL (measured on the bench). What comes back
is a Performance per workload, read with its own methods (p_ms, share_over, error_rate, output_tokens_per_s):
the percentile code is finops.latency's, and the result is identical to merging with performance_by
(tests/test_scorecard.py checks it).

Left out because a table of many workloads shows none of it: the time-to-first-token distribution. Off Postgres
(the SQLite demo) the rows are merged in Python by performance_by, with the same result.

The rows of a period are its whole UTC months from MonthlyPerformance and its other days from DailyPerformance
(month_split), as performance_by reads them.
"""

import datetime as dt
import json
from collections.abc import Iterable

from django.db import connection

from finops.latency import LatencyDistribution
from finops.performance import Performance

from .performance import month_split, performance_by

Key = tuple[int, int, str]  # workload, provider, model
SUMS = ("streamed_tokens", "streamed_ms", "timed_tokens", "timed_ms")


def _source(name: str, start: dt.date, end: dt.date, ids: list[int]) -> tuple[list[str], list]:
    """SELECT statements (and their parameters) of the rollup rows of [start, end), labelled `name`."""
    columns = "%s::text AS span, workload_id, provider_id, model, requests, errors, summary_requests, performance"
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


def performance_totals(workload_ids: Iterable[int], spans: dict[str, tuple[dt.date, dt.date]]
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
    scalars = ", ".join(f"performance->>'{name}'" for name in SUMS)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT span, workload_id, provider_id, model, requests, errors, summary_requests, {scalars}, "
            f"performance->>'summary_p99_ms', performance->'e2e'->>'zero', (performance->'e2e'->'buckets')::text FROM ({rows}) r",
            params)
        fetched = cursor.fetchall()
    buckets: dict[tuple[str, int], dict[str, int]] = {}
    for span, workload_id, provider_id, model, requests, errors, summary, *rest in fetched:
        streamed_tokens, streamed_ms, timed_tokens, timed_ms, summary_p99, zero, counts = rest
        by_workload, by_model = found[span]
        performance = by_workload.get(workload_id)
        if performance is None:
            performance = by_workload[workload_id] = Performance()
        performance.absorb(Performance(
            requests=requests, errors=errors, summary_requests=summary,
            summary_p99_ms=None if summary_p99 is None else float(summary_p99),
            streamed_tokens=int(streamed_tokens or 0), streamed_ms=int(streamed_ms or 0), timed_tokens=int(timed_tokens or 0),
            timed_ms=int(timed_ms or 0), e2e=LatencyDistribution(zero=int(zero or 0)),
        ))
        key = (workload_id, provider_id, model)
        by_model[key] = by_model.get(key, 0) + requests + summary
        # LatencyDistribution.merge, without a copy per row: counts added bucket by bucket (keys as stored).
        added = buckets.setdefault((span, workload_id), {})
        get = added.get
        for index, count in json.loads(counts or "{}").items():
            added[index] = get(index, 0) + count
    for (span, workload_id), counts in buckets.items():
        found[span][0][workload_id].e2e.buckets = {int(index): count for index, count in counts.items()}
    return found


def _in_python(ids: list[int], start: dt.date, end: dt.date) -> tuple[dict[int, Performance], dict[Key, int]]:
    by_model = performance_by(ids, start, end)
    by_workload: dict[int, Performance] = {}
    for (workload_id, _, _), performance in by_model.items():
        by_workload.setdefault(workload_id, Performance()).absorb(performance)
    return by_workload, {key: performance.all_requests for key, performance in by_model.items()}
