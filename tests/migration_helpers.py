"""Databases at an old migration for the upgrade tests (tests/test_migration*.py), the suite's own test database
left at the latest schema.

An upgrade test needs the schema an old install had, built by the real migrations, with old-shaped rows in it; it
then runs the real upgrade migrations (and, where it checks going back, the real downgrade). Migrating the suite's
database back to the old migration before each such test and forward again after it cost a minute or more a test on
a loaded 2-core machine: Django renders the project state again for every migration it unapplies or applies.

Here each test gets a scratch database, copied (CREATE DATABASE … TEMPLATE) from a template at its old migration,
and Django's default connection points at the scratch database for that test only. A template is built once per
test process and old migration, by the real migrations: forward from an empty database, or from the template of an
earlier migration of the same app built already (forward is cheaper than back). The suite's database never leaves
the latest schema, so nothing has to migrate it forward again afterwards. Every name starts with the process's test
database name, which pytest-xdist workers have each their own of; the scratch database is dropped after its test
and the templates when the process's session ends.
"""

import contextlib
import functools

import pytest
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.graph import MigrationGraph
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.state import ProjectState

Node = tuple[str, str]


def migrate(targets: list[Node]):
    """Migrate the default connection's database to `targets` by the real migrations; the models as they are there."""
    return _models_of(MigrationExecutor(connection).migrate(targets))


def _models_of(state: ProjectState):
    """The executor's state after a plan, rendered whole where it reloaded models lazily on the way (as the migrate
    command does before post_migrate): else a model's relation may point at an older render of its target."""
    state.clear_delayed_apps_cache()
    return state.apps


@functools.cache
def _graph() -> MigrationGraph:
    return MigrationLoader(None, ignore_no_migrations=True).graph


def latest() -> list[Node]:
    return _graph().leaf_nodes()


def targets_at(node: Node) -> list[Node]:
    """Every app at its last migration, except `node`'s app, which stops at `node`: what migrating the latest schema
    back to `node` leaves applied (the app's later migrations, and whatever depends on them, unapplied)."""
    graph = _graph()
    unapplied = set()
    for child in graph.node_map[node].children:
        if child.key[0] == node[0]:
            unapplied.update(graph.backwards_plan(child.key))  # the child and all that depends on it
    kept = set(graph.nodes) - unapplied
    return sorted(
        key
        for key in kept
        if not any(child.key[0] == key[0] and child.key in kept for child in graph.node_map[key].children)
    )


def _execute_outside_any_database(sql: str) -> None:
    with connection._nodb_cursor() as cursor:  # Django's own way in for CREATE/DROP DATABASE (tests' creation)
        cursor.execute(sql)


def _create(name: str, *, template: str | None) -> None:
    quoted = connection.ops.quote_name
    _drop(name)  # a process killed mid-test may have left it
    _execute_outside_any_database(
        f"CREATE DATABASE {quoted(name)}" + (f" TEMPLATE {quoted(template)}" if template else "")
    )


def _drop(name: str) -> None:
    _execute_outside_any_database(f"DROP DATABASE IF EXISTS {connection.ops.quote_name(name)} WITH (FORCE)")


@contextlib.contextmanager
def _connected_to(name: str):
    """The default connection on database `name` until the block ends, then on the one it was on. Content types
    are cached by id per connection alias: the cache is emptied on the way in and out, so no id of one database is
    taken for the other's."""
    previous = connection.settings_dict["NAME"]
    connection.close()
    connection.settings_dict["NAME"] = name
    ContentType.objects.clear_cache()
    try:
        yield
    finally:
        connection.close()
        connection.settings_dict["NAME"] = previous
        ContentType.objects.clear_cache()


class OldSchemas:
    """The templates of this test process, one per old migration, built when a test first asks for one."""

    def __init__(self) -> None:
        self.prefix = connection.settings_dict["NAME"]  # the test database: test_<name>, with _gwN under xdist
        self.templates: dict[Node, str] = {}
        self.models: dict[Node, object] = {}

    def _template(self, node: Node) -> str:
        if node not in self.templates:
            earlier = [built for built in self.templates if built in _graph().forwards_plan(node)]
            source = max(earlier, key=lambda built: len(_graph().forwards_plan(built)), default=None)
            name = f"{self.prefix}_at_{node[0]}_{node[1].partition('_')[0]}"
            _create(name, template=self.templates.get(source))
            with _connected_to(name):
                self.models[node] = _models_of(MigrationExecutor(connection).migrate(targets_at(node)))
            self.templates[node] = name
        return self.templates[node]

    @contextlib.contextmanager
    def scratch(self, node: Node):
        """A database of its own at `node`, the default connection on it while the block runs; the models there."""
        template = self._template(node)
        name = f"{self.prefix}_scratch"
        _create(name, template=template)
        try:
            with _connected_to(name):
                yield self.models[node]
        finally:
            _drop(name)

    def drop(self) -> None:
        for name in self.templates.values():
            _drop(name)


@pytest.fixture(scope="session")
def old_schemas(django_db_setup, django_db_blocker):
    schemas = OldSchemas()
    yield schemas
    with django_db_blocker.unblock():
        schemas.drop()


def database_at(targets: list[Node]):
    """A fixture: the models at the old migration `targets` names (one node), with the default connection on a
    scratch database at that migration for the test."""
    (node,) = targets

    @pytest.fixture
    def at_node(old_schemas, django_db_blocker):
        with django_db_blocker.unblock(), old_schemas.scratch(node) as apps:
            yield apps

    return at_node
