"""Personas and shared fixtures (docs/architecture.md: personas with names).

- ada: admin of the platform team (everything, Django admin)
- fiona: finance partner (reads everything)
- sam: lead of the Support team;  tess: lead of the Search team (each sees only their own team)
"""

import pytest
from django.test import Client
from hypothesis import HealthCheck, settings

from finops.alerts.services.channels import organisation_default_channels_create
from finops.models import Account, Membership, Provider, Team, User, Workload
from finops.services.prices import price_catalog_load
from finops.services.providers import providers_seed
from finops.services.users import user_set_role

# Hypothesis on a loaded 2-core machine (CI, parallel workers): no per-example deadline and no "too slow" health
# check. Neither changes what a property checks or how many examples it tries; they only stop a slow machine from
# failing a property that holds (test_the_three_effects_always_add_up_to_the_change did once).
settings.register_profile("finops", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("finops")

# Fixtures every test module may ask for by name without importing them (an import a linter would call unused).
pytest_plugins = ["tests.config_helpers", "tests.migration_helpers"]

PASSWORD = "correct-horse-battery-staple"


def reseed_reference_data() -> None:
    """Transactional tests (live server, real workers) flush the database, migrations' seed rows included;
    tests that need the seeded providers and catalog prices after one of those call this (idempotent). The
    organisation's default alert channels (migration 0037) come back too: they say who hears what nobody chose."""
    providers_seed()
    price_catalog_load()
    organisation_default_channels_create()


# Modules left out of `make test-fast` (marked slow; `make test` runs them): each costs tens of seconds to minutes.
SLOW_MODULES = {
    "tests/test_migrations.py": "real migrations up to old schemas, then the upgrades (tests/migration_helpers.py)",
    "tests/test_migration_latency.py": "the same",
    "tests/test_migration_audit.py": "the same",
    "tests/test_migration_webhook_labels.py": "the same",
    "tests/test_demo.py": "loads the whole demo, twice, and once on SQLite in a subprocess",
    "tests/test_demo_unit_economics.py": "loads the whole demo twice",
    "tests/test_demo_commands.py": "generates the demo's files several times",
    "tests/test_report_demo.py": "loads the whole demo and restates a month",
    "tests/test_focus_export_demo.py": "the demo's month through focus-validator, and the demo on SQLite",
    "tests/test_report_pdf.py": "the demo's report rendered to PDF and PNG pages",
    "tests/test_report_files.py": "the demo's report in every format",
    "tests/test_tco_report.py": "the demo's report, table by table",
    "tests/test_performance_pages_writers.py": "loads the whole demo, then re-imports its gateway logs by rows",
    "tests/test_api_fuzz.py": "schemathesis over every API operation",
    "tests/test_page_fuzz.py": "every page with generated parameters",
}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    """schemathesis gives every operation's test (test_x[GET /api/v1/teams]) its function's node id. pytest-xdist
    schedules by node id and would run one of them and silently drop the rest: give each its own id. Tests of
    SLOW_MODULES are marked slow."""
    for item in items:
        if item.nodeid.partition("::")[0] in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)
        module, _, function = item.nodeid.rpartition("::")
        if module and item.name != function:
            unique = f"{module}::{item.name}"
            if hasattr(item, "_id"):  # pytest 9 keeps the id parsed
                from _pytest.nodeid import NodeId

                item._id = NodeId.parse(unique)
            else:
                item._nodeid = unique


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """A transactional test ends with a flush that empties every table, the migrations' seeded providers and
    catalog prices included. Put them back at once, so the database is as migrated for whatever test this process
    runs next: serially pytest-django runs transactional tests last, but a pytest-xdist worker is handed files in
    any order, and a test file that reads the seed may come after one that flushed."""
    result = yield
    if nextitem is None:  # the last test: the session's teardown has just destroyed the test database
        return result
    marker = item.get_closest_marker("django_db")
    flushed = (
        "transactional_db" in getattr(item, "fixturenames", ())
        or "live_server" in getattr(item, "fixturenames", ())
        or (marker is not None and marker.kwargs.get("transaction"))
    )
    if flushed:
        from pytest_django.plugin import blocking_manager_key

        with item.config.stash[blocking_manager_key].unblock():
            reseed_reference_data()
    return result


@pytest.fixture
def smtp(settings):
    """A real SMTP server (aiosmtpd) that Django's email settings point at, for the test: `.messages`,
    `.envelopes`. A module that needs more (its SITE_URL) overrides it, asking for this one by the same name."""
    from tests.fakes.smtp_server import FakeSmtpServer

    server = FakeSmtpServer().start()
    server.use(settings)
    yield server
    server.stop()


@pytest.fixture
def reseeded(transactional_db):
    """A transactional test's database with the seeded providers and prices back (an earlier transactional
    test may have flushed them). Name it before fixtures that need them."""
    reseed_reference_data()


def stored_cap(**fields):
    """A cap stored as its rows are (not through the cap service, to set up states it would refuse or to skip its
    checks), with its own channels as the service keeps them: its recipients' email channel and its webhook's
    channel, which route its alerts (finops/notify/recipients.py has no other rule)."""
    from finops.alerts.services.channels import cap_channels_sync
    from finops.models import Cap

    cap = Cap.objects.create(**fields)
    cap_channels_sync(cap)
    return cap


def make_user(username: str, role: str, *, team: Team | None = None, team_role: str = "lead") -> User:
    user = User.objects.create_user(username=username, email=f"{username}@example.com", password=PASSWORD)
    user_set_role(user=user, role=role)
    if team is not None:
        Membership.objects.create(user=user, team=team, role=team_role)
    return user


@pytest.fixture
def support_team(db):
    return Team.objects.create(name="Support Platform", slug="support", cost_center="CC-410")


@pytest.fixture
def search_team(db):
    return Team.objects.create(name="Search", slug="search", cost_center="CC-520")


@pytest.fixture
def support_agent(support_team):
    return Workload.objects.create(
        team=support_team,
        name="Support agent",
        slug="support-agent",
        latency_profile="realtime",
        sla_seconds=4,
        outcome_unit="ticket resolved",
    )


@pytest.fixture
def search_ranker(search_team):
    return Workload.objects.create(
        team=search_team, name="Search ranker", slug="search-ranker", latency_profile="batch"
    )


@pytest.fixture
def ada(db):
    return make_user("ada", User.Role.ADMIN)


@pytest.fixture
def fiona(db):
    return make_user("fiona", User.Role.FINANCE)


@pytest.fixture
def sam(support_team):
    return make_user("sam", User.Role.MEMBER, team=support_team)


@pytest.fixture
def tess(search_team):
    return make_user("tess", User.Role.MEMBER, team=search_team)


@pytest.fixture
def client_as():
    """client_as(user) -> a test client signed in as that user."""

    def signed_in(user: User) -> Client:
        client = Client()
        client.force_login(user)
        return client

    return signed_in


@pytest.fixture
def openai_account(db):
    return Account.objects.create(
        name="openai-prod", provider=Provider.objects.get(slug="openai"), connector="usage_csv"
    )


@pytest.fixture
def fake_openai():
    """A real local HTTP server faking the OpenAI Admin API with the fixtures' usage and cost pages."""
    from tests.fakes.provider_server import FakeProviderServer
    from tests.ingest.test_openai_api import standard_routes

    with FakeProviderServer() as server:
        standard_routes(server)
        yield server


@pytest.fixture(scope="session", autouse=True)
def _no_stray_sessions_at_teardown(django_db_setup, django_db_blocker):
    """Live-server and worker tests can leave an idle connection behind, which would stop pytest-django from
    dropping the test database. End them (on the test database only) before it is torn down."""
    yield
    from django.db import connection
    from django.db.backends.base.creation import TEST_DATABASE_PREFIX

    # pytest-django made no test database when no collected test asked for one (the upgrade tests use their own,
    # tests/migration_helpers.py): the name is then the configured database's, never to be touched.
    if connection.vendor != "postgresql" or not connection.settings_dict["NAME"].startswith(TEST_DATABASE_PREFIX):
        return
    with django_db_blocker.unblock(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
