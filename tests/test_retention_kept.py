"""Retention beside the rest of the product: a rule change after a prune, the setting that keeps everything, and the
lock that lets one prune run at a time (ingest/retention.py).

The history of tests/test_retention.py, built once for the module (tests/data_once.py): neither test here needs the
prune's batches committed — a re-attribution after the prune and a second prune behind another session's lock read
and write in one transaction as well as in several — so each runs in a savepoint over one history instead of
importing and re-attributing it again and flushing it after. tests/test_retention.py keeps the prune whose batches
commit one by one, as in production (transactional).
"""

from types import SimpleNamespace

import pytest
import time_machine

from finops.models import AttributionRule, DailySpend, MonthlySpend, UsageLine
from finops.spend.services.attribution import history_reattribute
from ingest.retention import usage_lines_prune
from tests.conftest import make_search_ranker, make_search_team, make_support_agent, make_support_team
from tests.data_once import built_once, world_rows
from tests.test_retention import CUTOFF, NOW, build_history, lines_before

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _frozen(time_machine):
    time_machine.move_to(NOW)


@pytest.fixture(scope="module")
def world(django_db_setup, django_db_blocker):
    with built_once(django_db_blocker), time_machine.travel(NOW):
        support_agent = make_support_agent(make_support_team())
        search_ranker = make_search_ranker(make_search_team())
        build_history(support_agent, search_ranker)
        yield SimpleNamespace(support_agent=support_agent, search_ranker=search_ranker)


@pytest.fixture
def history(world, db, settings):
    """The module's history is there (built once by `world`), under a retention of 25 months."""
    settings.FINOPS_USAGE_RETENTION_MONTHS = 25


(search_ranker,) = world_rows("search_ranker")


def test_a_rule_change_after_a_prune_moves_the_kept_history_and_leaves_the_pruned_months_as_they_were(
    history, search_ranker
):
    usage_lines_prune()
    old_months = {
        row["month"]: row
        for row in MonthlySpend.objects.filter(month__lt=CUTOFF.date())
        .values("month", "workload_id", "reporting_cost")
        .order_by("month", "workload_id")
    }
    # Everything of the support project moves to the search ranker.
    AttributionRule.objects.filter(project="support").update(workload=search_ranker)
    history_reattribute()

    assert {
        row["month"]: row
        for row in MonthlySpend.objects.filter(month__lt=CUTOFF.date())
        .values("month", "workload_id", "reporting_cost")
        .order_by("month", "workload_id")
    } == old_months
    recent = DailySpend.objects.filter(day__gte=CUTOFF.date(), model="gpt-5-mini")
    assert set(recent.values_list("workload_id", flat=True)) == {search_ranker.id}


def test_retention_zero_keeps_everything_and_a_second_prune_at_once_does_nothing(history, settings):
    settings.FINOPS_USAGE_RETENTION_MONTHS = 0
    lines, old = UsageLine.objects.count(), lines_before(CUTOFF)
    assert usage_lines_prune().cutoff is None
    assert UsageLine.objects.count() == lines

    # Another prune holds the lock (a second beat, or the command beside the beat): this one does nothing.
    from django.db import connections

    other = connections.create_connection("default")
    try:
        with other.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_lock(7304, 0)")
        result = usage_lines_prune(months=25)
        assert (result.skipped, result.deleted) == (True, 0)
        assert UsageLine.objects.count() == lines
    finally:
        with other.cursor() as cursor:  # explicitly: a closed connection's backend lets go of it a moment later
            cursor.execute("SELECT pg_advisory_unlock(7304, 0)")
        other.close()
    result = usage_lines_prune(months=25)  # the lock released, the next prune does the work
    assert (result.skipped, result.deleted) == (False, old), prune_lock_holders()


def prune_lock_holders() -> list:
    """Who holds the prune's advisory lock, for a failure message."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT a.pid, a.application_name, a.state, a.query FROM pg_locks l JOIN pg_stat_activity a USING (pid) "
            "WHERE l.locktype = 'advisory' AND l.classid = 7304 AND l.objid = 0"
        )
        return cursor.fetchall()
