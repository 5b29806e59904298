"""Latency percentiles over any period come from merged distributions (issue 12): a gateway log imported through
the real import path, rolled up by day and by month, and read back over periods of many hours.

The log is built so that averaging percentiles is visibly wrong: 47 quiet hours of fast requests and one busy
hour with a slow tail. The p99 of the whole period is set by the busy hour's tail; the mean of the 48 hourly
p99s is a fraction of it.
"""

import datetime as dt
import io
import json
import math
import random

import pytest

from finops.models import Account, AttributionRule, DailyPerformance, MonthlyPerformance, Provider
from finops.performance.measures import COLUMNS, Performance
from finops.performance.selectors.performance import (
    batch_verdict,
    day_hours,
    latency_verdict,
    month_split,
    performance_by,
    work_span_hours,
)
from finops.performance.services import merged_rows, performance_rollup
from finops.spend.services.attribution import history_reattribute
from ingest.services import usage_file_import

START = dt.datetime(2026, 10, 30, 0, tzinfo=dt.UTC)  # two days across a month boundary: Oct 30 – Nov 1


@pytest.fixture
def gateway(db):
    return Account.objects.create(name="gateway", provider=Provider.objects.get(slug="groq"), connector="gateway_log")


def request(
    at: dt.datetime,
    duration_ms: int,
    *,
    ttft_ms: int = 200,
    output: int = 100,
    status: str = "success",
    team: str = "support",
) -> dict:
    return {
        "request_id": f"r-{at.timestamp()}-{duration_ms}",
        "startTime": at.isoformat(),
        "endTime": (at + dt.timedelta(milliseconds=duration_ms)).isoformat(),
        "completionStartTime": (at + dt.timedelta(milliseconds=min(ttft_ms, duration_ms))).isoformat(),
        "model": "llama-3.3-70b-versatile",
        "custom_llm_provider": "groq",
        "prompt_tokens": 500,
        "completion_tokens": output,
        "api_key": "a" * 64,
        "team_id": team,
        "metadata": {},
        "request_tags": [],
        "status": status,
    }


def import_log(account, records: list[dict]):
    body = json.dumps(records).encode()
    run = usage_file_import(account=account, stream=io.BytesIO(body), file_name="spend_logs.json")
    assert run.status == "succeeded", run.error
    return run


def skewed_hours(rng: random.Random) -> tuple[list[dict], list[int], list[float]]:
    """48 hours: quiet ones of 200 requests at 300–700 ms; hour 30 has 2,000 requests, 5 % of them at 20–40 s."""
    records, durations, hourly_p99 = [], [], []
    for hour in range(48):
        at = START + dt.timedelta(hours=hour)
        busy = hour == 30
        these = []
        for n in range(2000 if busy else 200):
            slow = busy and n % 20 == 0
            ms = rng.randint(20_000, 40_000) if slow else rng.randint(300, 700)
            these.append(ms)
            records.append(request(at + dt.timedelta(seconds=n % 3600), ms, status="failure" if slow else "success"))
        durations += these
        hourly_p99.append(sorted(these)[math.ceil(0.99 * len(these)) - 1])
    return records, durations, hourly_p99


def exact(values: list[int], q: float) -> int:
    return sorted(values)[max(1, math.ceil(q * len(values))) - 1]


def test_the_p99_of_many_hours_is_the_p99_of_every_request_not_an_average_of_hourly_p99s(gateway, support_agent):
    AttributionRule.objects.create(workload=support_agent, priority=1, account=gateway)
    records, durations, hourly_p99 = skewed_hours(random.Random(12))
    import_log(gateway, records)

    found = performance_by(None, START.date(), START.date() + dt.timedelta(days=2))
    (performance,) = found.values()
    true_p99 = exact(durations, 0.99)
    assert abs(performance.p_ms(0.99) - true_p99) <= 0.01 * true_p99
    assert abs(performance.p_ms(0.5) - exact(durations, 0.5)) <= 0.01 * exact(durations, 0.5)
    averaged = sum(hourly_p99) / len(hourly_p99)
    assert abs(averaged - true_p99) > 0.5 * true_p99  # what averaging percentiles would have shown
    assert (performance.requests, performance.errors, performance.e2e.count) == (len(durations), 100, len(durations))
    # by provider and model too: the key names what it groups by
    assert list(found) == [(support_agent.id, gateway.provider_id, "llama-3.3-70b-versatile")]


def test_daily_and_monthly_rows_merge_to_the_same_distribution_over_any_split(gateway, support_agent):
    AttributionRule.objects.create(workload=support_agent, priority=1, account=gateway)
    records, durations, _ = skewed_hours(random.Random(3))
    import_log(gateway, records)

    days = DailyPerformance.objects.filter(workload=support_agent).order_by("day")
    assert [row.day for row in days] == [dt.date(2026, 10, 30), dt.date(2026, 10, 31)]
    assert sum(row.requests for row in days) == len(durations)
    assert days[1].hours == (1 << 24) - 1  # a request started in every hour of Oct 31
    months = MonthlyPerformance.objects.filter(workload=support_agent)
    assert [(m.month, m.requests) for m in months] == [(dt.date(2026, 10, 1), len(durations))]
    whole_month = performance_by([support_agent.id], dt.date(2026, 10, 1), dt.date(2026, 11, 1))
    two_days = performance_by([support_agent.id], dt.date(2026, 10, 30), dt.date(2026, 11, 1))
    assert [p.as_json() for p in whole_month.values()] == [p.as_json() for p in two_days.values()]
    one_day = performance_by([support_agent.id], dt.date(2026, 10, 31), dt.date(2026, 11, 1))
    assert next(iter(one_day.values())).requests == len(durations) - 24 * 200


def test_merged_rows_are_there_for_the_next_statement_that_reads_them_and_an_error_copies_none(gateway, support_agent):
    """A rebuild merges cells on a second thread while its next statement runs (merged_rows.OverlappedCopies):
    a statement that reads the merged table waits for their COPY, and a rebuild that fails copies nothing more."""
    AttributionRule.objects.create(workload=support_agent, priority=1, account=gateway)
    import_log(gateway, skewed_hours(random.Random(5))[0])

    def daily() -> list[tuple]:
        return list(DailyPerformance.objects.order_by("day").values_list("day", "requests", "hours", "latency"))

    imported = daily()
    assert len(imported) == 2
    limits = {"account_ids": None, "workload_ids": None}
    first, last = START.date(), START.date() + dt.timedelta(days=1)

    DailyPerformance.objects.all().delete()
    with merged_rows.OverlappedCopies():
        performance_rollup._days_merge(first, last, limits)  # its rows wait for the next statement
        assert daily() == imported  # which reads them: they are COPYed first

    DailyPerformance.objects.all().delete()
    with pytest.raises(RuntimeError), merged_rows.OverlappedCopies():
        performance_rollup._days_merge(first, last, limits)
        raise RuntimeError("the rebuild fails before its rows are read")
    assert not DailyPerformance.objects.exists()


def test_a_member_scope_reads_its_workloads_only(gateway, support_agent, search_ranker):
    AttributionRule.objects.create(workload=search_ranker, priority=1, account=gateway)
    import_log(gateway, [request(START, 400)])
    assert performance_by([support_agent.id], START.date(), START.date() + dt.timedelta(days=1)) == {}
    assert len(performance_by([search_ranker.id], START.date(), START.date() + dt.timedelta(days=1))) == 1


def test_re_attribution_moves_latency_with_spend(gateway, support_agent, search_ranker):
    rule = AttributionRule.objects.create(workload=support_agent, priority=1, account=gateway)
    import_log(gateway, [request(START + dt.timedelta(hours=h), 500) for h in range(3)])
    day = (START.date(), START.date() + dt.timedelta(days=1))
    assert list(performance_by(None, *day, keys=("workload_id",))) == [(support_agent.id,)]
    rule.workload = search_ranker
    rule.save()
    history_reattribute()
    assert list(performance_by(None, *day, keys=("workload_id",))) == [(search_ranker.id,)]
    assert performance_by(None, *day, keys=("workload_id",))[(search_ranker.id,)].requests == 3


def test_a_line_written_before_distributions_reads_as_summary_only_bounded_by_its_slowest_request():
    old = Performance.from_json(
        {"count": 40, "sum_ms": 20000, "p50_ms": 450, "p95_ms": 900, "max_ms": 1800, "ttft_sum_ms": 8000}
    )
    assert (old.summary_only, old.summary_requests, old.summary_p99_ms, old.p_ms(0.99)) == (True, 40, 1800.0, None)
    meets = latency_verdict(old, sla_seconds=2)
    assert (meets.status, meets.bound, meets.p99_ms) == ("meets", True, 1800.0)  # p99 ≤ max ≤ SLA: certain
    assert latency_verdict(old, sla_seconds=1).status == "unknown"  # the bound says nothing either way
    mixed = Performance()
    mixed.add_request(duration_ms=3000, ttft_ms=100, output_tokens=10, failed=False)
    mixed.absorb(old)  # measured requests and summaries: the p99 is the measured ones', the rest counted apart
    assert (mixed.summary_only, mixed.requests, mixed.summary_requests, mixed.all_requests) == (False, 1, 40, 41)
    assert abs(mixed.p_ms(0.99) - 3000) <= 30


def test_latency_verdicts_read_p99_and_the_share_over_the_sla():
    performance = Performance()
    for n in range(1000):
        performance.add_request(duration_ms=5000 if n < 15 else 1000, ttft_ms=100, output_tokens=10, failed=False)
    fails = latency_verdict(performance, sla_seconds=4)  # 1.5 % of requests over 4 s: p99 is 5 s
    assert fails.status == "fails" and abs(fails.p99_ms - 5000) <= 50 and fails.share_over == pytest.approx(0.015)
    assert latency_verdict(performance, sla_seconds=6).status == "meets"
    assert latency_verdict(performance, sla_seconds=None).status == "no-sla"
    assert latency_verdict(None, sla_seconds=4).status == "no-data"


@pytest.mark.parametrize(
    ("hours", "span"),
    [
        ([], 0),
        ([3], 1),
        ([1, 2, 3, 4], 4),
        ([0, 23], 2),
        ([22, 23, 0, 1, 2, 3, 4, 5], 8),
        ([0, 12], 13),
        (list(range(24)), 24),
    ],
)
def test_a_days_work_span_is_the_smallest_window_wrapping_midnight(hours, span):
    assert work_span_hours(sum(1 << h for h in hours)) == span


def test_a_batch_workload_fails_when_any_days_work_overruns_its_window():
    night = sum(1 << h for h in (22, 23, 0, 1, 2, 3))
    long_night = night | (1 << 9)
    ok = batch_verdict({dt.date(2026, 11, 1): night, dt.date(2026, 11, 2): night}, 8)
    assert (ok.status, ok.longest_span_hours, ok.days_over, ok.days) == ("meets", 6, 0, 2)
    over = batch_verdict({dt.date(2026, 11, 1): night, dt.date(2026, 11, 2): long_night}, 8)
    assert (over.status, over.longest_span_hours, over.days_over) == ("fails", 12, 1)
    assert batch_verdict({}, 8).status == "no-data"
    assert batch_verdict({dt.date(2026, 11, 1): night}, None).status == "no-sla"


def test_day_hours_ors_every_provider_of_a_workload(gateway, search_ranker):
    AttributionRule.objects.create(workload=search_ranker, priority=1, account=gateway)
    import_log(gateway, [request(START + dt.timedelta(hours=h), 500) for h in (1, 2, 5)])
    assert day_hours([search_ranker.id], START.date(), START.date() + dt.timedelta(days=1)) == {
        search_ranker.id: {START.date(): (1 << 1) | (1 << 2) | (1 << 5)},
    }


def test_a_period_splits_into_whole_months_and_edge_days():
    assert month_split(dt.date(2026, 10, 1), dt.date(2027, 1, 1)) == (
        [dt.date(2026, 10, 1), dt.date(2026, 11, 1), dt.date(2026, 12, 1)],
        [],
    )
    assert month_split(dt.date(2026, 10, 15), dt.date(2026, 12, 3)) == (
        [dt.date(2026, 11, 1)],
        [(dt.date(2026, 10, 15), dt.date(2026, 11, 1)), (dt.date(2026, 12, 1), dt.date(2026, 12, 3))],
    )


def test_merging_stored_columns_in_place_equals_merging_built_performances():
    rng = random.Random(5)

    def some() -> Performance:
        performance = Performance()
        for _ in range(rng.randint(1, 300)):
            duration = rng.choice([0, rng.randint(1, 60_000)])
            performance.add_request(
                duration_ms=duration,
                ttft_ms=min(duration, rng.randint(0, 2000)),
                output_tokens=rng.randint(0, 900),
                failed=rng.random() < 0.05,
            )
        return performance

    parts = [some() for _ in range(20)] + [
        Performance(summary_requests=40, summary_p99_ms=1800.0, summary_errors=2, summary_counted=40)
    ]
    built, in_place = Performance(), Performance()
    for part in parts:
        built.absorb(Performance.from_json(part.as_json()))
        in_place.absorb_columns(tuple(part.columns()[name] for name in COLUMNS))
    assert in_place == built
    # a usage line's columns: its requests are the line's own; a line from before distributions stays a summary
    for part in parts[:20]:
        assert Performance.of_line(part.requests, part.line_columns()) == part
    v1 = Performance.from_json({"count": 3, "sum_ms": 900, "p50_ms": 250, "p95_ms": 400, "max_ms": 700})
    assert Performance.of_line(3, v1.line_columns()) == v1 and Performance.of_line(3, (None,) * 8) is None
