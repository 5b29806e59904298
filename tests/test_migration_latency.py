"""Upgrading to latency as columns and cells (migration 0025) keeps every figure: gateway lines, rollup rows and
reported hours stored as Performance JSON read the same after the upgrade — requests, errors, output speed, every
percentile (the same buckets, so the same values, within 1 % of the requests' true latencies) — whether read from
the converted rollup rows or from a rollup rebuilt in SQL from the converted lines; a line from before
distributions (a v1 summary) stays summary-only with its bound; and going back restores the JSON."""

import datetime as dt
import math
import random

from finops.performance.measures import Performance
from tests.migration_helpers import database_at, latest, migrate

BEFORE_CELLS = [("finops", "0022_audit_log_and_api_tokens")]
DAY = dt.datetime(2026, 3, 10, tzinfo=dt.UTC)
MODEL = "llama-3.3-70b"


at_0022 = database_at(BEFORE_CELLS)  # a scratch database there, for the test


def exact(values: list[int], q: float) -> int:
    return sorted(values)[max(1, math.ceil(q * len(values))) - 1]


def hours_of_requests(rng: random.Random) -> list[tuple[int, list[tuple[int, int, int, bool]]]]:
    """(hour, [(duration ms, ttft ms, output tokens, failed)]) for 30 hours: fast hours and a slow-tailed one."""
    found = []
    for hour in range(30):
        requests = []
        for n in range(rng.randint(1, 40)):
            slow = hour == 17 and n % 5 == 0
            duration = rng.randint(20_000, 60_000) if slow else rng.randint(200, 3_000)
            requests.append((duration, rng.randint(0, duration), rng.randint(1, 900), rng.random() < 0.03))
        found.append((hour, requests))
    return found


def performance_of(requests) -> Performance:
    performance = Performance()
    for duration, ttft, output, failed in requests:
        performance.add_request(duration_ms=duration, ttft_ms=ttft, output_tokens=output, failed=failed)
    return performance


def test_upgrading_keeps_every_latency_figure_of_lines_rollups_and_reports_and_back(at_0022):
    get = lambda name: at_0022.get_model("finops", name)  # noqa: E731
    groq, _ = get("Provider").objects.get_or_create(slug="groq", defaults={"name": "Groq"})
    account = get("Account").objects.create(name="gateway-before", provider=groq, connector="gateway_log")
    team = get("Team").objects.create(name="Support", slug="support-l")
    workload = get("Workload").objects.create(team=team, name="Agent", slug="agent-l", sla_seconds=10)
    tag_set = get("TagSet").objects.create(id=71, tags={})
    signature = get("LineSignature").objects.create(
        id=72,
        account=account,
        provider=groq,
        model=MODEL,
        model_raw=MODEL,
        tag_set=tag_set,
        workload=workload,
        team=team,
    )
    line = dict(
        account=account,
        provider=groq,
        model=MODEL,
        model_raw=MODEL,
        tag_set=tag_set,
        signature=signature,
        cost_basis="unpriced",
    )
    every, whole, by_day = [], Performance(), {}
    for hour, requests in hours_of_requests(random.Random(25)):
        start = DAY + dt.timedelta(hours=hour)
        performance = performance_of(requests)
        get("UsageLine").objects.create(
            period_start=start,
            period_end=start + dt.timedelta(hours=1),
            requests=len(requests),
            latency=performance.as_json(),
            **line,
        )
        every += [duration for duration, *_ in requests]
        whole.absorb(performance)
        by_day.setdefault(start.date(), Performance()).absorb(performance)
    # a line from before distributions: 12 requests, the slowest 4.5 s
    old_start = DAY + dt.timedelta(hours=40)
    get("UsageLine").objects.create(
        period_start=old_start,
        period_end=old_start + dt.timedelta(hours=1),
        requests=12,
        latency={"count": 12, "sum_ms": 9000, "p50_ms": 600, "p95_ms": 2000, "max_ms": 4500},
        **line,
    )
    summary = Performance(summary_requests=12, summary_p99_ms=4500.0)
    by_day.setdefault(old_start.date(), Performance()).absorb(summary)
    whole.absorb(summary)
    # a reported hour (count and percentiles), in its day's rollup row too
    report = Performance(summary_requests=300, summary_counted=300, summary_errors=6, summary_p99_ms=2500.0)
    get("ReportedPerformance").objects.create(
        workload=workload, provider=groq, model=MODEL, hour=DAY, kind="percentiles", performance=report.as_json()
    )
    # The rollup rows as the code before the upgrade wrote them: the merges of the lines' (and the report's) JSON.
    for day, performance in by_day.items():
        get("DailyPerformance").objects.create(
            day=day,
            account=account,
            provider=groq,
            model=MODEL,
            workload=workload,
            team=team,
            hours=1,
            requests=performance.requests,
            errors=performance.errors,
            summary_requests=performance.summary_requests,
            performance=performance.as_json(),
        )
    get("DailyPerformance").objects.create(
        day=DAY.date(),
        account=None,
        provider=groq,
        model=MODEL,
        workload=workload,
        team=team,
        hours=1,
        requests=0,
        errors=0,
        summary_requests=300,
        performance=report.as_json(),
    )
    whole.absorb(report)
    get("MonthlyPerformance").objects.create(
        month=DAY.date().replace(day=1),
        account=account,
        provider=groq,
        model=MODEL,
        workload=workload,
        team=team,
        requests=whole.requests,
        errors=whole.errors,
        summary_requests=whole.summary_requests,
        performance=whole.as_json(),
    )  # the rollup keeps the report's in a row of its own: one row merges the same

    migrate(latest())

    from finops.models import UsageLine
    from finops.performance.selectors.performance import latency_verdict, performance_by
    from finops.performance.services.performance_rollup import performance_rollup_rebuild

    lines = UsageLine.objects.filter(account_id=account.id).order_by("period_start")
    assert sum(line.performance.requests for line in lines) == len(every)
    assert lines.last().performance == summary and lines.last().errors is None
    days = (DAY.date(), DAY.date() + dt.timedelta(days=2))

    def figures():
        (found,) = performance_by(None, *days).values()  # days of one month: the daily rows
        (month,) = performance_by(None, DAY.date().replace(day=1), dt.date(2026, 4, 1)).values()  # the monthly row
        return found, month

    converted = figures()  # the rollup rows as the migration converted them
    performance_rollup_rebuild(days={DAY.date(), DAY.date() + dt.timedelta(days=1)})  # … and rebuilt in SQL
    for found, month in (converted, figures()):
        assert found.as_json() == whole.as_json() and month.as_json() == whole.as_json()
        for q in (0.5, 0.9, 0.95, 0.99):
            assert found.p_ms(q) == whole.p_ms(q)
            assert abs(found.p_ms(q) - exact(every, q)) <= 0.01 * exact(every, q)
        assert (found.error_rate, found.output_tokens_per_s, found.share_over(10_000)) == (
            whole.error_rate,
            whole.output_tokens_per_s,
            whole.share_over(10_000),
        )
        verdict = latency_verdict(found, workload.sla_seconds)
        assert (verdict.status, verdict.p99_ms) == (
            "meets" if whole.p_ms(0.99) <= 10_000 else "fails",
            whole.p_ms(0.99),
        )

    old = migrate(BEFORE_CELLS)
    back = old.get_model("finops", "UsageLine").objects.filter(account_id=account.id).order_by("period_start")
    restored = Performance()
    for stored in back.values_list("latency", flat=True):
        restored.absorb(Performance.from_json(stored))
    restored.absorb(report)
    assert restored.as_json() == whole.as_json()
    (reported,) = old.get_model("finops", "ReportedPerformance").objects.values_list("performance", flat=True)
    assert Performance.from_json(reported) == report
