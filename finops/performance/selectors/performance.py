"""Measured performance over any period (issue 12), and the SLA verdicts read from it.

A period [start, end) of days is read as its whole UTC months from MonthlyPerformance and its other days from
DailyPerformance, merged per group: every percentile is then read from the merged distribution of the period's
requests (finops.performance.measures), never averaged. A quarter is three monthly rows per group.

Verdicts:
- latency SLA (interactive and realtime workloads with `sla_seconds`): the p99 of end-to-end latency against the
  SLA, with the share of requests slower than the SLA. When the period holds only summaries (lines from before
  distributions were kept, or metrics reported as percentiles) the p99 is not measurable: the largest summary p99
  bounds it, so "meets" can still be said when that bound is within the SLA; otherwise the verdict is "unknown".
- batch window (`latency_profile = batch` with `batch_window_hours`): each UTC day's work, the smallest window of
  whole hours (wrapping midnight, so a 22:00–06:00 night is one window) that covers every hour in which a request
  started, must fit the window. The period meets when every day with work fits.
"""

import datetime as dt
import functools
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal

from django.db.models import Q

from finops.core.any_of import AnyOf
from finops.core.months import month_of, next_month
from finops.models import DailyPerformance, MonthlyPerformance, Workload
from finops.performance.measures import COLUMNS, Performance

P99 = 0.99
# Every verdict a period can get; the API's schema names this set once (SPECTACULAR_SETTINGS' ENUM_NAME_OVERRIDES).
VERDICT_STATUSES = ("meets", "fails", "unknown", "no-sla", "no-data")


def month_split(start: dt.date, end: dt.date) -> tuple[list[dt.date], list[tuple[dt.date, dt.date]]]:
    """The whole months inside [start, end), and the other days as half-open ranges."""
    months, days = [], []
    month = month_of(start)
    while month < end:
        following = next_month(month)
        first, stop = max(start, month), min(end, following)
        if (first, stop) == (month, following):
            months.append(month)
        elif first < stop:
            days.append((first, stop))
        month = following
    return months, days


def _scoped(rows, workload_ids: Iterable[int] | None):
    return rows if workload_ids is None else rows.filter(workload_id__in=list(workload_ids))


def performance_by(
    workload_ids: Iterable[int] | None,
    start: dt.date,
    end: dt.date,
    keys: tuple[str, ...] = ("workload_id", "provider_id", "model"),
    *,
    rows_where: Q | None = None,
) -> dict[tuple, Performance]:
    """Merged Performance per `keys` (columns of the rollup) over [start, end). `workload_ids` None: every row,
    unattributed included (admins); else those workloads' rows only (a member's scope). `rows_where`: a further filter
    on the rollup rows (a provider's page reads only its rows; the what-if only the providers and models it
    compares)."""
    workload_ids = None if workload_ids is None else list(workload_ids)
    months, day_ranges = month_split(start, end)
    sources = []
    if months:
        sources.append(_scoped(MonthlyPerformance.objects.filter(month__in=months), workload_ids))
    if day_ranges:
        where = Q()
        for first, stop in day_ranges:
            where |= Q(day__gte=first, day__lt=stop)
        sources.append(_scoped(DailyPerformance.objects.filter(where), workload_ids))
    if rows_where is not None:
        sources = [rows.filter(rows_where) for rows in sources]
    found: dict[tuple, Performance] = {}
    for rows in sources:
        width = len(keys)
        for row in rows.values_list(*keys, *COLUMNS).iterator(chunk_size=2000):
            key = row[:width]
            if key not in found:
                found[key] = Performance()
            found[key].absorb_columns(row[width:])  # in place, without building each row's Performance
    return found


def day_hours(workload_ids: Iterable[int], start: dt.date, end: dt.date) -> dict[int, dict[dt.date, int]]:
    """Per workload, per day with requests: the UTC hours in which requests started (bit h = hour h)."""
    found: dict[int, dict[dt.date, int]] = {}
    rows = DailyPerformance.objects.filter(AnyOf("workload_id", workload_ids), day__gte=start, day__lt=end)
    for workload_id, day, hours in rows.values_list("workload_id", "day", "hours").iterator(chunk_size=2000):
        days = found.setdefault(workload_id, {})
        days[day] = days.get(day, 0) | hours
    return found


@functools.lru_cache(maxsize=4096)  # a pure function of a 24-bit mask, asked for every day of every batch workload
def work_span_hours(hours: int) -> int:
    """The smallest window of whole hours, wrapping midnight, that holds every hour set in `hours` (0 when none):
    24 minus the longest run of idle hours around the clock."""
    if not hours:
        return 0
    longest = run = 0
    for h in range(48):  # twice round the clock, so a run of idle hours across midnight is seen whole
        if hours >> (h % 24) & 1:
            run = 0
        else:
            run += 1
            longest = max(longest, min(run, 24))
    return 24 - longest


@dataclass(frozen=True)
class Verdict:
    status: str  # meets | fails | unknown | no-sla | no-data
    kind: str  # latency | batch
    p99_ms: float | None = None  # latency: the measured p99, or (bound=True) the summaries' upper bound
    bound: bool = False
    share_over: float | None = None  # latency: share of requests slower than the SLA
    sla_seconds: Decimal | None = None
    window_hours: int | None = None  # batch
    longest_span_hours: int | None = None
    days_over: int | None = None
    days: int | None = None

    @property
    def label(self) -> str:
        return {"meets": "Meets", "fails": "Fails", "unknown": "Unknown", "no-sla": "No SLA", "no-data": "No data"}[
            self.status
        ]


def latency_verdict(performance: Performance | None, sla_seconds: Decimal | None) -> Verdict:
    if sla_seconds is None:
        return Verdict("no-sla", "latency", p99_ms=_p99(performance))
    sla_ms = float(sla_seconds) * 1000
    if performance is None or not performance.all_requests:
        return Verdict("no-data", "latency", sla_seconds=sla_seconds)
    if performance.e2e.count:
        p99 = performance.p_ms(P99)
        return Verdict(
            "meets" if p99 <= sla_ms else "fails",
            "latency",
            p99_ms=p99,
            share_over=performance.share_over(sla_ms),
            sla_seconds=sla_seconds,
        )
    bound = performance.summary_p99_ms
    if bound is not None and bound <= sla_ms:
        return Verdict("meets", "latency", p99_ms=bound, bound=True, sla_seconds=sla_seconds)
    return Verdict("unknown", "latency", p99_ms=bound, bound=True, sla_seconds=sla_seconds)


def batch_verdict(hours_by_day: dict[dt.date, int] | None, window_hours: int | None) -> Verdict:
    if window_hours is None:
        return Verdict("no-sla", "batch")
    spans = [work_span_hours(hours) for hours in (hours_by_day or {}).values() if hours]
    if not spans:
        return Verdict("no-data", "batch", window_hours=window_hours)
    over = sum(span > window_hours for span in spans)
    return Verdict(
        "fails" if over else "meets",
        "batch",
        window_hours=window_hours,
        longest_span_hours=max(spans),
        days_over=over,
        days=len(spans),
    )


def is_batch(workload: Workload) -> bool:
    return workload.latency_profile == Workload.LatencyProfile.BATCH and workload.batch_window_hours is not None


def workload_verdict(
    workload: Workload, performance: Performance | None, hours_by_day: dict[dt.date, int] | None
) -> Verdict:
    """The workload's verdict over a period: its batch window when it is a batch workload with one, else its
    latency SLA."""
    if is_batch(workload):
        return batch_verdict(hours_by_day, workload.batch_window_hours)
    return latency_verdict(performance, workload.sla_seconds)


def _p99(performance: Performance | None) -> float | None:
    if performance is None:
        return None
    return performance.p_ms(P99) if performance.e2e.count else None
