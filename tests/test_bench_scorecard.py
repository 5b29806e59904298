"""The scorecard bench's code paths at small scale (bench/scorecard.py): gateway-log accounts whose every
line carries measured latency, the performance rollup built from them, and the scorecard timed as an admin and a
team lead. Real Postgres, the page bench's generator and COPY path."""

import gc
import json

import pytest
from django.db.models import Sum

from bench import pages, scorecard
from bench.org import GATEWAY_ACCOUNTS
from finops.models import DailyPerformance, MonthlyPerformance, UsageLine
from finops.performance.measures import COLUMNS, Performance
from tests.data_once import pages_generated

LINES = 20_000


@pytest.fixture(scope="module")
def generated_once(django_db_setup, django_db_blocker):
    """The generator's output, built once for the module (tests/data_once.py): each test reads it in a savepoint
    rolled back after it, so what one test writes (caps, a re-run of the bench) never reaches the next."""
    with pages_generated(django_db_blocker, LINES) as shape:
        yield shape


@pytest.fixture
def generated(generated_once, db):
    return generated_once


def test_every_gateway_line_carries_a_performance_whose_requests_are_the_lines(generated):
    assert generated["shape"]["lines"] == UsageLine.objects.count() == LINES  # the gateways add no line to --lines
    timed = UsageLine.objects.filter(account__name__in=GATEWAY_ACCOUNTS)
    assert timed.count() > 0 and not timed.filter(errors__isnull=True).exists()
    assert not UsageLine.objects.exclude(account__name__in=GATEWAY_ACCOUNTS).filter(errors__isnull=False).exists()
    for line in timed[:200]:
        performance, requests = line.performance, line.requests
        assert performance.requests == requests == performance.e2e.count and performance.p_ms(0.99) > 0


def test_the_performance_rollup_holds_every_measured_request_and_cerebras_is_faster_than_groq(generated):
    lines = sum(line.performance.requests for line in UsageLine.objects.filter(errors__isnull=False))
    assert DailyPerformance.objects.aggregate(n=Sum("requests"))["n"] == lines
    assert MonthlyPerformance.objects.aggregate(n=Sum("requests"))["n"] == lines
    speeds = {}
    for slug in ("groq", "cerebras"):
        merged = Performance()
        for stored in MonthlyPerformance.objects.filter(provider__slug=slug).values_list(*COLUMNS):
            merged.absorb_columns(stored)
        speeds[slug] = merged.output_tokens_per_s[0]
    assert speeds["cerebras"] > 3 * speeds["groq"]


def test_the_bench_times_the_last_full_quarter_as_an_admin_and_a_lead_and_writes_its_figures(generated, tmp_path):
    out = tmp_path / "scorecard.json"
    try:
        scorecard.run_bench(lines=LINES, out=out, reuse=True, repeats=2, echo=lambda *_: None)
    finally:
        gc.unfreeze()  # it settles the process as a web process is (gc.freeze): not the test run's
    figures = json.loads(out.read_text())
    assert figures["gc_frozen"] > 0  # timed as a settled server process times it
    today = pages.today()
    assert figures["scorecard"]["quarter"] == scorecard.last_full_quarter(today).key
    assert figures["scorecard"]["quarter"] < scorecard.selectors.quarter_key(today)
    assert figures["generation"]["reused"] and figures["performance_rollup"]["days"] >= 365
    assert figures["business_facts"]["outcome_rows"] > 0 and figures["business_facts"]["eval_scores"] > 0
    admin, lead = figures["scorecard"]["by_user"]["admin"], figures["scorecard"]["by_user"]["team_lead"]
    assert admin["rows"] > lead["rows"] > 0
    for who in (admin, lead):
        assert who["scorecard"]["p50_ms"] > 0 and who["page"]["p95_ms"] >= who["page"]["p50_ms"]
        assert who["control_count_daily_rows"]["p50_ms"] > 0 and "meets_target" in who
    assert figures["targets"] == {"scorecard_p95_ms": 200}
