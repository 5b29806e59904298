"""The API against its own OpenAPI schema (issue 16): schemathesis generates requests for every operation as an
admin and as a plain member of team B; no answer is a 5xx, and every answer (status code, content type, body) is
one the schema documents (finops/api/schema.py adds the refusals every operation shares).

Bounded: the admin run has schemathesis' coverage phase (every boundary and invalid value the schema defines, once)
plus MAX_EXAMPLES generated cases per operation; the member run only the generated cases (the same coverage cases
would mostly meet the same 403/404). Half the schema-valid cases name a real object in the path (team A's for the
admin, team B's for the member) instead of a random id, so the fuzzing reaches the validation behind the lookup.

Unsafe operations are fuzzed too, and cannot damage anything: each test runs in a savepoint inside the module's
rolled-back transaction (tests/access_world.py), the API account's base URL is a closed local port (a sync fails
fast), uploads go to a temporary MEDIA_ROOT, and tasks run inline.
"""

import functools
import zlib

import pytest
import schemathesis
import schemathesis.generation.case
import schemathesis.generation.hypothesis.builder as schemathesis_builder
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from drf_spectacular.generators import SchemaGenerator
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings

from finops.models import ApiToken
from finops.org.services.api_tokens import api_token_create
from tests.access_world import WorldOnce

MAX_EXAMPLES = 6
# pytest-django creates the test database only for modules that declare they use it.
pytestmark = pytest.mark.django_db

# Every check schemathesis has, but two that cannot hold here by design:
# - positive_data_acceptance wants every schema-valid request accepted; the API refuses, with a 400 naming the field,
#   what no schema can say (an end before its start, a workload slug that names nothing you may see);
# - unsupported_method (member only) wants 405 for an undeclared method; an operation hidden from a member
#   (accounts, rules, contracts) answers 404 to every method, so a member learns nothing about it (docs/access.md).
CHECKS_OFF = {"positive_data_acceptance": {"enabled": False}}
ADMIN_CONFIG = {"checks": CHECKS_OFF, "phases": {"coverage": {"enabled": True}}}
MEMBER_CONFIG = {
    "checks": {**CHECKS_OFF, "unsupported_method": {"enabled": False}},
    "phases": {"coverage": {"enabled": False}},
}


class _CoverageCases(list):
    """An operation's coverage-phase cases, built when Hypothesis first reads them (when its test runs), not when
    pytest collects it. schemathesis builds them at collection, for every operation of the admin run, in every process
    that collects this module: both pytest-xdist workers, though one runs it (~7 s of a ~10 s collection)."""

    def __init__(self, earlier: list, build):
        super().__init__(earlier)
        self._build = build

    def _built(self):
        if self._build is not None:
            build, self._build = self._build, None
            self.extend(build())
        return self

    def __iter__(self):
        return list.__iter__(self._built())

    def __reversed__(self):
        return list.__reversed__(self._built())

    def __len__(self):
        return list.__len__(self._built())

    def __bool__(self):
        return list.__len__(self._built()) > 0

    def __getitem__(self, index):
        return list.__getitem__(self._built(), index)


_add_coverage_now = schemathesis_builder.add_coverage


def _add_coverage_when_run(test, *args, **kwargs):
    def build() -> list:
        def holder():
            pass

        _add_coverage_now(holder, *args, **kwargs)  # attaches the cases to holder, as @example does
        unserializable = schemathesis_builder.UnserializablePayloadMark.get(holder)
        if unserializable is not None:  # read after the test ran, to warn of a media type left untested
            schemathesis_builder.UnserializablePayloadMark.set(test, unserializable)
        return getattr(holder, "hypothesis_explicit_examples", [])

    # Hypothesis runs explicit examples last attached first: the coverage cases after any the schema gave.
    test.hypothesis_explicit_examples = _CoverageCases(getattr(test, "hypothesis_explicit_examples", []), build)
    return test


schemathesis_builder.add_coverage = _add_coverage_when_run


def _schema(config: dict):
    # The schema /api/schema/ serves, generated in process (no database needed) so each operation is its own test.
    loaded = schemathesis.openapi.from_dict(
        SchemaGenerator().get_schema(request=None, public=True), config=schemathesis.Config.from_dict(config)
    )
    loaded.app = WSGIHandler()
    return loaded


admin_schema = _schema(ADMIN_CONFIG)
member_schema = _schema(MEMBER_CONFIG)


@pytest.fixture(scope="module")
def world(django_db_setup, django_db_blocker):
    with WorldOnce(django_db_blocker) as built:
        yield built


@pytest.fixture(scope="module")
def connection_kept():
    """Requests go through the WSGI handler, whose request signals close the database connection (and with it the
    test's transaction); Django's test Client unhooks them the same way."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture(scope="module")
def tokens(world, django_db_blocker) -> dict[str, str]:
    """A read-write API token per role, made as users make theirs (api_token_create: knox's token and the ApiToken
    that authentication requires beside it), in the module's rolled-back transaction. A bare knox token is refused
    with 401 "Invalid token." (finops/api/authentication.py): made that way, every request stopped at
    authentication and no view ran."""
    with django_db_blocker.unblock():
        return {
            role: api_token_create(user=world.users[role], name=f"fuzz {role}", scope=ApiToken.Scope.WRITE)[1]
            for role in ("admin", "member_b")
        }


AUTH_ENFORCED: set[str] = set()


@pytest.fixture(scope="module")
def auth_checked_once_per_operation():
    """schemathesis' ignored_auth check answers every 2xx by sending the request again without credentials and with
    invalid ones. Enforcement is a property of the operation, and schemathesis' own runner confirms it once per
    operation and run (the check's context carries the operations already confirmed,
    CheckContext.auth_enforced_operations); its pytest integration passes none, so every success was probed again
    (the caps and teams operations, --hypothesis-seed=1: 150 probes without credentials, 6 now; 992 -> 848 requests).
    The same set here, shared by both roles' tests: the probes carry no credentials, so who asked first changes
    nothing, and every operation that answers a 2xx is still probed once."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(
            schemathesis.generation.case,
            "CheckContext",
            functools.partial(schemathesis.generation.case.CheckContext, auth_enforced_operations=AUTH_ENFORCED),
        )
        yield


@pytest.fixture
def call(world, tokens, connection_kept, auth_checked_once_per_operation, db, settings, tmp_path):
    """call(case, role): send the case as that role (its read-write API token), a real object in the path for half
    the schema-valid cases, and validate the answer."""
    settings.MEDIA_ROOT = tmp_path

    def send(case, role: str):
        if case.meta and case.meta.generation.mode.is_positive and zlib.crc32(repr(case.body).encode()) % 2 == 0:
            case.path_parameters = {**(case.path_parameters or {}), **real_path(case.path, world, role)}
        response = case.call_and_validate(headers={"Authorization": f"Token {tokens[role]}"})
        # The token is valid: an answer of 401 means the request never reached the view it fuzzes.
        assert response.status_code != 401, response.text[:200]

    return send


def real_path(path: str, world, role: str) -> dict:
    own = world.a if role == "admin" else world.b
    if "{slug}" in path:
        return {"slug": own.team.slug if path.startswith("/api/v1/teams") else own.workload.slug}
    if "{id}" not in path:
        return {}
    ids = {
        "/api/v1/accounts/{id}/syncs": world.api_account.pk,
        "/api/v1/accounts/": world.file_account.pk,
        "/api/v1/caps/": own.team_cap.pk,
        "/api/v1/channels/": own.team.channels.filter(is_default=True).values_list("pk", flat=True).first(),
        "/api/v1/contracts/": world.contract.pk,
        "/api/v1/rules/": own.rule.pk,
        "/api/v1/runs/": world.run.pk,
        "/api/v1/reattributions/": world.job.pk,
    }
    return {"id": next(pk for prefix, pk in ids.items() if path.startswith(prefix))}


@admin_schema.parametrize()
@hypothesis_settings(max_examples=MAX_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
def test_api_answers_an_admin_as_its_schema_says(case, call):
    call(case, "admin")


@member_schema.parametrize()
@hypothesis_settings(max_examples=MAX_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
def test_api_answers_a_member_as_its_schema_says(case, call):
    call(case, "member_b")
