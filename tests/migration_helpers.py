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
the latest schema, so nothing has to migrate it forward again afterwards.

Most of a migration's time is Django's, not the database's: before each operation it renders the models again
(the state the operation reads). Those states depend only on which migrations are applied, never on the rows, so
StateReusingExecutor works each one out once per process and runs the real operations against it the next time
(forward, and back, which Django runs on the same states): the upgrade and downgrade SQL and data code run on
every test's database as before. tests/test_migrations.py checks that an install upgraded this way has the schema
of a new one made by Django's migrate command.

Every name starts with the process's test database name, which pytest-xdist workers have each their own of; the
scratch database is dropped after its test and the templates when the process's session ends.
"""

import contextlib
import functools
from itertools import pairwise

import pytest
from django.contrib.contenttypes.models import ContentType
from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.backends.base.creation import TEST_DATABASE_PREFIX
from django.db.migrations.exceptions import IrreversibleError
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.graph import MigrationGraph
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.migration import Migration
from django.db.migrations.state import ProjectState
from django.db.transaction import atomic

Node = tuple[str, str]

# (the migrations applied before one, that migration) -> the project states before its first operation and after
# each of its operations, as Django's Migration.apply and Migration.unapply work them out.
_OPERATION_STATES: dict[tuple[frozenset[Node], Node], list[ProjectState]] = {}


def _key(migration: Migration) -> Node:
    return (migration.app_label, migration.name)


class _WithKnownStates:
    """`migration`, with Migration.apply and Migration.unapply as Django writes them but on states worked out
    already (`states`: before its first operation, after each operation)."""

    def __init__(self, migration: Migration, states: list[ProjectState]) -> None:
        self._migration = migration
        self._states = states

    def __getattr__(self, name):
        return getattr(self._migration, name)

    def _run(self, schema_editor, operation, run) -> None:
        if not schema_editor.atomic_migration and (operation.atomic or (self.atomic and operation.atomic is not False)):
            with atomic(schema_editor.connection.alias):  # as Migration.apply: an atomic operation's transaction
                run()
        else:
            run()

    def apply(self, project_state, schema_editor, collect_sql=False):
        for operation, (before, after) in zip(self.operations, pairwise(self._states), strict=True):
            self._run(
                schema_editor,
                operation,
                lambda: operation.database_forwards(self.app_label, schema_editor, before, after),  # noqa: B023
            )
        return self._states[-1].clone()  # the next migration's states are worked out from a copy, never this one

    def unapply(self, project_state, schema_editor, collect_sql=False):
        for operation in self.operations:
            if not operation.reversible:
                raise IrreversibleError(f"Operation {operation} in {self._migration} is not reversible")
        steps = list(zip(self.operations, pairwise(self._states), strict=True))
        for operation, (before, after) in reversed(steps):
            self._run(
                schema_editor,
                operation,
                lambda: operation.database_backwards(self.app_label, schema_editor, after, before),  # noqa: B023
            )
        return project_state


class StateReusingExecutor(MigrationExecutor):
    """Django's executor, the states its migrations' operations run on worked out once per process."""

    def migrate(self, targets, plan=None, state=None, fake=False, fake_initial=False):
        self.applied = set(self.loader.applied_migrations)
        return super().migrate(targets, plan=plan, state=state, fake=fake, fake_initial=fake_initial)

    @staticmethod
    def operation_states(applied: set[Node], migration: Migration, state: ProjectState) -> list[ProjectState]:
        """The states `migration`'s operations run on, after `applied`, whose state is `state` (left unchanged)."""
        key = (frozenset(applied), _key(migration))
        if key not in _OPERATION_STATES:
            state = state.clone()
            state.apps  # noqa: B018 - rendered, as the executor renders before it applies or unapplies
            states = [state.clone()]
            for operation in migration.operations:
                operation.state_forwards(migration.app_label, state)
                states.append(state.clone())
            _OPERATION_STATES[key] = states
        return _OPERATION_STATES[key]

    def apply_migration(self, state, migration, fake=False, fake_initial=False):
        states = self.operation_states(self.applied, migration, state)
        state = super().apply_migration(
            state, _WithKnownStates(migration, states), fake=fake, fake_initial=fake_initial
        )
        self.applied.add(_key(migration))
        return state

    def _state_of(self, applied: set[Node], full_plan) -> ProjectState:
        state = self._create_project_state()
        for migration, _ in full_plan:
            if _key(migration) in applied:
                migration.mutate_state(state, preserve=False)
        return state

    def _migrate_all_backwards(self, plan, full_plan, fake):
        """Django's, its first pass (every state before each migration to unapply) answered from the states its
        operations ran on going forward where this process has them."""
        remaining = self.applied - {_key(migration) for migration, _ in plan}
        applied, state, states = set(remaining), None, {}
        for migration, _ in reversed(plan):  # the order they were applied in
            if (frozenset(applied), _key(migration)) not in _OPERATION_STATES and state is None:
                state = self._state_of(applied, full_plan)
            states[migration] = self.operation_states(applied, migration, state)
            state = states[migration][-1]
            applied.add(_key(migration))
        for migration, _ in plan:
            self.unapply_migration(None, _WithKnownStates(migration, states[migration]), fake=fake)
            self.applied.discard(_key(migration))
        return self._state_of(self.applied, full_plan)


def migrate(targets: list[Node]):
    """Migrate the default connection's database to `targets` by the real migrations; the models as they are there."""
    return _models_of(StateReusingExecutor(connection).migrate(targets))


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
        # The suite's test database (test_<name>, _gwN under pytest-xdist), named by the settings pytest-django
        # gave it: it creates it only when a collected test asks for a database, which the upgrade tests do not.
        name = connection.settings_dict["NAME"]
        self.suite_database = name if name.startswith(TEST_DATABASE_PREFIX) else connection.creation._get_test_db_name()
        self.templates: dict[Node, str] = {}
        self.models: dict[Node, object] = {}

    def _template(self, node: Node) -> str:
        if node not in self.templates:
            earlier = [built for built in self.templates if built in _graph().forwards_plan(node)]
            source = max(earlier, key=lambda built: len(_graph().forwards_plan(built)), default=None)
            name = f"{self.suite_database}_at_{node[0]}_{node[1].partition('_')[0]}"
            _create(name, template=self.templates.get(source))
            with _connected_to(name):
                self.models[node] = _models_of(StateReusingExecutor(connection).migrate(targets_at(node)))
            self.templates[node] = name
        return self.templates[node]

    @contextlib.contextmanager
    def scratch(self, node: Node):
        """A database of its own at `node`, the default connection on it while the block runs; the models there."""
        template = self._template(node)
        name = f"{self.suite_database}_scratch"
        _create(name, template=template)
        try:
            with _connected_to(name):
                yield self.models[node]
        finally:
            _drop(name)

    def drop(self) -> None:
        for name in self.templates.values():
            _drop(name)


SCHEMA_SQL = """
    SELECT 'column', table_name, column_name,
           concat_ws(' ', data_type, character_maximum_length, numeric_precision, numeric_scale, is_nullable,
                     column_default, is_identity)
      FROM information_schema.columns WHERE table_schema = 'public'
    UNION ALL
    SELECT 'constraint', conrelid::regclass::text, conname, pg_get_constraintdef(oid)
      FROM pg_constraint WHERE connamespace = 'public'::regnamespace
    UNION ALL
    SELECT 'index', tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = 'public'
"""


def schema_of(database: str) -> set[tuple[str, str, str, str]]:
    """Every column (type, nullability, default), constraint and index of `database`'s public schema."""
    reader = connections[DEFAULT_DB_ALIAS].__class__(
        {**connection.settings_dict, "NAME": database}, alias=f"schema of {database}"
    )
    try:
        with reader.cursor() as cursor:
            cursor.execute(SCHEMA_SQL)
            return set(cursor.fetchall())
    finally:
        reader.close()


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
