"""The performance rollup (issue 12): DailyPerformance from the timed usage lines (gateway logs) and the reported
metrics, MonthlyPerformance from DailyPerformance — rebuilt for exactly the days, accounts and workloads the
spend rollup rebuilds (rollup_rebuild calls it, in its transaction), so a re-attribution or a re-import moves
latency with spend.

Merging distributions is not a SQL sum, so the groups are merged in Python, in place (Performance.absorb): a run
of up to a month of days is one values_list stream of its timed lines (a large gateway has a few thousand a day:
one per hour × model × key × tag set), one DELETE and one bulk INSERT.
"""

import datetime as dt

from finops.models import (
    Account, ConnectorKind, DailyPerformance, MonthlyPerformance, ReportedPerformance, UsageLine, Workload,
)
from finops.months import month_of, next_month
from finops.performance import Performance

from .monthly_rollup import month_runs
from .rollup_rows import day_chunks, limited

# Connectors whose lines carry per-request timings; other accounts' lines never do, so an import of them does not
# scan its days again for timings.
TIMED_CONNECTORS = {ConnectorKind.GATEWAY_LOG, ConnectorKind.LITELLM_API}
KEYS = ("account_id", "provider_id", "model", "workload_id", "team_id")
BATCH = 2000


class _Groups:
    """Performance and the hour mask per key, merged as rows arrive."""

    def __init__(self):
        self.found: dict[tuple, list] = {}

    def add(self, key: tuple, stored: dict, hours: int = 0) -> None:
        """Merge a stored Performance (its JSON) into the key's group, in place."""
        group = self.found.get(key)
        if group is None:
            group = self.found[key] = [Performance(), 0]
        group[0].absorb_json(stored)
        group[1] |= hours

    def items(self):
        for key, (performance, hours) in self.found.items():
            yield key, performance, hours


def performance_rollup_rebuild(*, days: set[dt.date], account_ids: list[int] | None = None,
                               workload_ids: set | None = None) -> None:
    """Replace the performance rows of `days` (and their months) with fresh merges, limited like rollup_rebuild:
    `account_ids` given → only those accounts' rows (reported metrics, account null, are left alone);
    `workload_ids` (None standing for unattributed) → only those workloads' rows."""
    if not days or (workload_ids is not None and not workload_ids):
        return
    if account_ids is not None:
        account_ids = list(Account.objects.filter(id__in=account_ids, connector__in=TIMED_CONNECTORS).values_list("id", flat=True))
        if not account_ids:
            return
    limits = {"account_ids": account_ids, "workload_ids": workload_ids}
    for first, last in day_chunks(days):
        _rebuild_days(first, last, limits)
    for first_month, last_month in month_runs(days):
        _rebuild_months(first_month, last_month, limits)


def _rebuild_days(first: dt.date, last: dt.date, limits: dict) -> None:
    """The daily rows of [first, last] from one read of their lines (and reported hours), merged in place."""
    start = dt.datetime.combine(first, dt.time(), tzinfo=dt.UTC)
    end = dt.datetime.combine(last + dt.timedelta(days=1), dt.time(), tzinfo=dt.UTC)
    limited(DailyPerformance.objects.filter(day__gte=first, day__lte=last), **limits).delete()
    groups = _Groups()
    lines = limited(UsageLine.objects.filter(period_start__gte=start, period_start__lt=end, latency__isnull=False),
                    **limits, workload_field="signature__workload_id")
    for start_at, account, provider, model, workload, team, latency in lines.values_list(
        "period_start", "account_id", "provider_id", "model", "signature__workload_id", "signature__team_id", "latency",
    ).iterator(chunk_size=BATCH):
        start_at = start_at.astimezone(dt.UTC)
        groups.add((start_at.date(), account, provider, model, workload, team), latency,
                   1 << start_at.hour)
    if limits["account_ids"] is None:  # reported metrics have no account
        reported = ReportedPerformance.objects.filter(hour__gte=start, hour__lt=end)
        if limits["workload_ids"] is not None:
            reported = reported.filter(workload_id__in=[w for w in limits["workload_ids"] if w is not None])
        teams = dict(Workload.objects.values_list("id", "team_id"))
        for hour, provider, model, workload, performance in reported.values_list(
            "hour", "provider_id", "model", "workload_id", "performance",
        ).iterator(chunk_size=BATCH):
            hour = hour.astimezone(dt.UTC)
            groups.add((hour.date(), None, provider, model, workload, teams.get(workload)),
                       performance, 1 << hour.hour)
    DailyPerformance.objects.bulk_create(
        [DailyPerformance(day=key[0], hours=hours, **_row(key[1:], performance)) for key, performance, hours in groups.items()],
        batch_size=BATCH,
    )


def _rebuild_months(first: dt.date, last: dt.date, limits: dict) -> None:
    # account_id IN (…) never matches the reported rows' null account: they stay when an import rebuilds.
    limited(MonthlyPerformance.objects.filter(month__gte=first, month__lte=last), **limits).delete()
    daily = limited(DailyPerformance.objects.filter(day__gte=first, day__lt=next_month(last)), **limits)
    groups = _Groups()
    for day, *key, performance in daily.values_list("day", *KEYS, "performance").iterator(chunk_size=BATCH):
        groups.add((month_of(day), *key), performance)
    MonthlyPerformance.objects.bulk_create(
        [MonthlyPerformance(month=key[0], **_row(key[1:], performance)) for key, performance, _ in groups.items()],
        batch_size=BATCH,
    )


def _row(key: tuple, performance: Performance) -> dict:
    return {
        **dict(zip(KEYS, key)), "requests": performance.requests, "errors": performance.errors,
        "summary_requests": performance.summary_requests, "performance": performance.as_json(),
    }


def reported_changed(*, workload_ids: set[int], days: set[dt.date]) -> None:
    """After reported metrics of these workloads and days were written: rebuild those rows."""
    performance_rollup_rebuild(days=days, workload_ids=workload_ids)

