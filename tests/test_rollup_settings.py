"""A rollup rebuild plans its aggregates with its own Postgres settings (finops/spend/services/rollup_rows.py:
hash aggregates in memory, no sort, no nested loop, no JIT) and gives the caller's transaction back the settings
it had: they are set with set_config(…, true), which would otherwise last to the end of the caller's transaction."""

import datetime as dt

import pytest
from django.db import connection

from finops.spend.services.rollup_rows import aggregate_settings
from finops.spend.services.rollups import rollup_rebuild

NAMES = tuple(aggregate_settings.SETTINGS)


def current(names: tuple[str, ...] = NAMES) -> dict[str, str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT " + ", ".join("current_setting(%s)" for _ in names), names)
        return dict(zip(names, cursor.fetchone()))


@pytest.mark.django_db
def test_a_rebuild_uses_its_own_planner_settings_and_restores_the_callers():
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL work_mem = '7MB'; SET LOCAL enable_sort = on; SET LOCAL enable_nestloop = on")
        cursor.execute("SET LOCAL jit = on")
    before = current()
    assert before == {"work_mem": "7MB", "enable_sort": "on", "enable_nestloop": "on", "jit": "on"}

    with aggregate_settings():
        assert current() == aggregate_settings.SETTINGS
    assert current() == before

    rollup_rebuild(days={dt.date(2026, 10, 1)})
    assert current() == before


@pytest.mark.django_db
def test_a_parallel_scan_splits_over_two_workers_and_gives_back_the_pages_setting():
    """A re-attribution's scan of the moved lines (finops.spend.services.spend_delta) runs on two workers whatever
    the pages' DB_PARALLEL_WORKERS, and the caller's transaction keeps its own setting after it."""
    names = tuple(aggregate_settings.PARALLEL_SCAN)
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL max_parallel_workers_per_gather = 0")
    before = current(names)
    with aggregate_settings(parallel_scan=True):
        assert current(names) == aggregate_settings.PARALLEL_SCAN
        assert current() == aggregate_settings.SETTINGS
    assert current(names) == before
    assert before["max_parallel_workers_per_gather"] == "0"


@pytest.mark.django_db
def test_sorted_groups_nested_in_a_rebuild_give_the_rebuild_its_hash_aggregates_back():
    """A re-attribution's net change per rollup row is grouped by sorting (finops.spend.services.spend_delta),
    inside the rebuild's settings, which hash: after it, the rebuild's statements hash again."""
    names = tuple(aggregate_settings.SORTED_GROUPS)
    with aggregate_settings():
        assert current(names) == {"enable_sort": "off", "enable_hashagg": "on"}
        with aggregate_settings(sorted_groups=True):
            assert current(names) == aggregate_settings.SORTED_GROUPS
        assert current(names) == {"enable_sort": "off", "enable_hashagg": "on"}
