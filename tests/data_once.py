"""Data built once per test module, for modules whose tests all read the same organisation.

pytest-django gives each test its own transaction, rolled back at the end, so a function-scoped fixture that
imports files and re-attributes history runs again for every test of the module (test_scorecard.py's data took
~1 s a test on a quiet 2-core machine). `built_once` is Django's `TestCase.setUpTestData` for pytest: the module
fixture builds inside a transaction that is rolled back when the module is done, and each test's own transaction
(the `db` fixture) is a savepoint inside it, so whatever a test writes is undone before the next one and nothing
leaks to other modules.

What a module gives up: on-commit callbacks never run (as under `db` anyway), and a test of such a module cannot
be transactional (`transactional_db`, `live_server`): its flush would empty the module's data. Objects handed to
tests are fetched again per test (`fresh`), so a test that changes one in memory does not change it for the next.
"""

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import transaction


@contextmanager
def built_once(blocker) -> Iterator[None]:
    """`with built_once(django_db_blocker): build…; yield …` in a module-scoped fixture."""
    with blocker.unblock():
        atomic = transaction.atomic()
        atomic.__enter__()
        try:
            yield
        finally:
            transaction.set_rollback(True)
            atomic.__exit__(None, None, None)


def fresh(instance):
    """The same row, read again: the module's object as the database has it in this test."""
    return type(instance)._default_manager.get(pk=instance.pk)


def world_rows(*names: str) -> tuple:
    """Function fixtures that hand each test the module world's rows of those names, read again (`fresh`), in
    place of conftest's fixtures of the same names: `ada, fiona = world_rows("ada", "fiona")` in a module whose
    module-scoped `world` fixture holds `ada` and `fiona`."""
    import pytest

    def fixture_for(name: str):
        @pytest.fixture(name=name)
        def row(world, db):
            return fresh(getattr(world, name))

        return row

    return tuple(fixture_for(name) for name in names)


@contextmanager
def pages_generated(blocker, lines: int) -> Iterator[dict]:
    """The page bench's generator at `lines` (bench/pages.py), built once for a module and held on the day its year
    of lines ends (tests/clock.py): the benches' tests read pages and figures relative to that day, and a run
    crossing midnight would otherwise read them a day later than the data."""
    from bench import pages
    from tests.clock import held_on

    with held_on(pages.today()), built_once(blocker):
        yield pages.generate(lines, echo=lambda *_: None)
