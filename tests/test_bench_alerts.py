"""The alert bench's code paths at small scale (bench/alerts.py): a cap on every team and workload of the
page bench's organisation, a full evaluation and a one-day evaluation timed, its caps removed afterwards. Real
Postgres, the page bench's generator."""

import datetime as dt
import json

import pytest

from bench import alerts, pages
from finops.models import AlertEvent, Cap, Team, Workload
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


def test_every_team_and_workload_gets_a_cap_sized_from_its_last_month(generated):
    caps = alerts.caps_create()
    assert len(caps) == Team.objects.count() + Workload.objects.count() == 36
    assert {c.scope for c in caps} == {"team", "workload"} and all(c.amount > 0 for c in caps)
    assert alerts.caps_remove() == 36 and not Cap.objects.exists()


def test_the_bench_times_a_full_and_a_one_day_evaluation_and_removes_its_caps(generated):
    figures = alerts.measure(repeats=2, echo=lambda *_: None)
    assert figures["caps"] == 36 and sum(figures["cap_statuses"].values()) == 36
    assert len(figures["cap_statuses"]) >= 2  # amounts of 0.6–1.6 × last month: not every cap in one state
    assert figures["events_raised_first"] > 0  # the first evaluation raises what the caps' spend crossed …
    assert figures["full_events_raised"] == figures["one_day_events_raised"] == 0  # … and none again
    assert figures["full_s"]["runs"] == figures["one_day_s"]["runs"] == 2 and figures["full_s"]["median"] > 0
    assert figures["one_day_change"]["days"] == [(pages.today() - dt.timedelta(days=1)).isoformat()]
    assert len(figures["one_day_change"]["account_ids"]) == 1
    assert not Cap.objects.exists() and not AlertEvent.objects.exists()


def test_the_bench_writes_its_figures_with_the_targets_and_the_machine_load(generated, tmp_path):
    out = tmp_path / "alerts.json"
    alerts.run_bench(lines=LINES, out=out, reuse=True, repeats=1, echo=lambda *_: None)
    figures = json.loads(out.read_text())
    assert figures["generation"]["reused"] and figures["targets"] == {"full_s": 2.0, "one_day_s": 0.5}
    assert figures["alerts"]["caps"] == 36 and len(figures["loadavg_before"]) == 3 and "within_targets" in figures
