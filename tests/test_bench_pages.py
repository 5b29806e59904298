"""The page bench's generator at small scale: the shape the bench relies on (the organisation scaled down,
a year of lines, attribution as the rules say, rollup equal to raw) and a re-attribution moving about a fifth
of the lines. Real Postgres, the generator's own COPY path."""

import datetime as dt
import gc

import pytest
from django.db import connection
from django.db.models import F, Sum

from bench import page_profile, pages
from bench.org import Scale
from finops.models import DailySpend, UsageLine
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


def test_the_organisation_scales_down_with_the_same_shape(generated):
    scale = Scale.for_lines(LINES)
    shape = generated["shape"]
    assert (scale.teams, scale.workloads, scale.keys) == (4, 32, 160)
    assert shape["lines"] == UsageLine.objects.count() == LINES
    assert (shape["teams"], shape["workloads"], shape["api_keys"], shape["models"]) == (
        4,
        32,
        160,
        34,
    )  # 36, gpt-oss-120b thrice
    assert shape["accounts"] == 12 and shape["providers"] == 8  # two gateway logs (Groq, Cerebras)
    assert Scale.for_lines(10_000_000).workloads == 400 and Scale.for_lines(10_000_000).keys == 2000


def test_a_year_of_lines_some_unattributed_some_unpriced_costs_exact(generated):
    shape = generated["shape"]
    first, last = dt.datetime.fromisoformat(shape["first"]), dt.datetime.fromisoformat(shape["last"])
    assert (last - first).days == 365 and last.date() == pages.today()
    assert 0.01 < shape["unattributed_share"] < 0.15 and 0 < shape["unpriced_share"] < 0.1
    assert UsageLine.objects.filter(cost_basis="unpriced", cost__isnull=False).count() == 0
    hourly = UsageLine.objects.filter(account__name="bench-openai-prod").first()
    assert hourly.period_end - hourly.period_start == dt.timedelta(hours=1)
    daily = UsageLine.objects.filter(account__name="bench-bedrock-us").first()
    assert daily.period_end - daily.period_start == dt.timedelta(days=1) and daily.tags["app"]


def test_the_generated_attribution_is_what_the_rules_say(generated):
    assert generated["attribution_check"]["lines_changed"] == 0
    # Every attributed line's team is its workload's team.
    assert (
        not UsageLine.objects.exclude(signature__workload__isnull=True)
        .exclude(signature__team_id=F("signature__workload__team_id"))
        .exists()
    )


def test_the_rollup_equals_the_raw_lines(generated):
    check = pages.rollup_equals_raw()
    assert check["equal"] and check["days"] == 365 and check["raw_lines"] == LINES


def test_a_reorganisation_moves_about_a_fifth_of_the_lines_and_the_rollup_follows(generated):
    before = dict(DailySpend.objects.values_list("team_id").annotate(c=Sum("reporting_cost")).order_by())
    figures = pages.measure_reattribution(echo=lambda *_: None)  # pages.move_rules(), then history_reattribute()
    assert figures["rules"]["rules_changed"] > 0 and figures["days_rebuilt"] > 300
    assert abs(figures["share_moved"] - 0.20) <= 0.06, figures
    assert figures["phases"]["attribute_s"] > 0 and figures["phases"]["rollup_s"] > 0
    assert pages.rollup_equals_raw()["equal"]
    after = dict(DailySpend.objects.values_list("team_id").annotate(c=Sum("reporting_cost")).order_by())
    assert after != before and sum(after.values()) == sum(before.values())


def test_the_bench_refuses_a_database_it_does_not_own(db):
    assert not connection.settings_dict["NAME"].endswith("_bench")
    with pytest.raises(SystemExit, match="refusing database"):
        pages.guard()


def test_the_profile_switch_times_a_cold_page_and_names_where_its_time_went(generated):
    """bench_pages --reuse --profile PAGE: wall and CPU figures of cold requests, and a cProfile naming the view."""
    said = []
    try:
        figures = page_profile.profile_page("overview", requests=2, top=400, echo=said.append)
    finally:
        gc.unfreeze()  # it settles the process as a web process is (gc.freeze): not the test run's
    assert figures["p50_ms"] > 0 and figures["p95_ms"] >= figures["p50_ms"] and figures["python_cpu_ms"] > 0
    assert "overview as admin, 2 cold requests" in said[0]
    assert "finops/spend/views/pages.py" in said[-1] and "(overview)" in said[-1]
    with pytest.raises(SystemExit, match="no page 'nowhere'"):
        page_profile.profile_page("nowhere", requests=1, echo=said.append)
