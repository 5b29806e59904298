"""Every page's query parameters, fuzzed the way schemathesis fuzzes the API (issue 26): NUL, lone surrogates and
undecodable bytes, huge and negative numbers, years 0 and 9999, repeated parameters, very long values — as an admin
and as a plain member. No answer may be a 500: a page answers 400 with its form's message, or ignores the value.

Like the access matrix (tests/test_access_matrix.py, whose PAGES rows give each page's URL kwargs), nothing can be
forgotten: every URL pattern of the resolver that is a page needs a row in PARAMS (its query parameters), or
`test_every_page_has_its_parameters_declared` fails naming it; and a page that reads a parameter its row does not
declare fails `test_the_declared_parameters_are_the_ones_each_page_reads` naming both (the parameters a page reads
are discovered by recording what the view asks of request.GET).
"""

import datetime as dt
import time

import pytest
import time_machine
from django.http import QueryDict
from django.test import Client
from django.urls import reverse

from tests.access_world import WorldOnce
from tests.test_access_matrix import ADMIN_NAMESPACE, API, BOTH, FORM, GET, OWN_TESTS, PAGES, url_patterns

pytestmark = pytest.mark.django_db

# Every page's navigation carries the reporting period (finops.web.context), so every page reads these.
NAV = ("period", "start", "end")
# url name -> the query parameters the page reads besides NAV (None: the page answers GET with 405).
PARAMS: dict[str, tuple[str, ...] | None] = {
    "overview": ("csv",),
    "team-list": ("csv",),
    "team-detail": ("csv",),
    "workload-list": ("csv",),
    "workload-detail": ("csv",),
    "workload-outcomes-upload": None,
    "provider-list": ("csv",),
    "provider-detail": ("csv",),
    "source-list": (),
    "source-upload": None,
    "source-create": (),
    "source-detail": ("page",),
    "source-sync": None,
    "source-edit": (),
    "source-test": None,
    "cap-list": (),
    "cap-create": (),
    "cap-detail": (),
    "cap-edit": (),
    "cap-delete": (),
    "contract-list": ("csv",),
    "contract-create": (),
    "contract-detail": ("csv",),
    "contract-edit": (),
    "explore": ("group_by", "team", "workload", "provider", "model", "account", "basis", "tag", "csv", "xlsx"),
    "unattributed": ("csv",),
    "rule-list": (),
    "rule-create": ("account", "api_key", "model", "project", "provider", "tags_text", "user", "workload"),
    "rule-edit": (),
    "rule-delete": None,
    "rule-move": None,
    "rule-job": (),
    "alert-list": ("kind", "team", "state", "page"),
    "channel-list": (),
    "channel-test": None,
    "channel-create": (),
    "channel-edit": (),
    "channel-delete": None,
    "demo-slack": (),
    "demo-slack-hook": None,
    "alert-mute": None,
    "scorecard": ("quarter", "team", "sort", "dir", "csv", "xlsx"),
    "whatif": (
        "requests",
        "input_tokens",
        "output_tokens",
        "cached_input_tokens",
        "workload",
        "provider",
        "batch_window_hours",
        "family",
        "preset",
        "sla_seconds",
    ),
    "offering-list": ("csv",),
    "offering-create": (),
    "offering-edit": (),
    "savings": ("csv",),
    "routing-export": (),
    "health": (),
    "healthz": (),
    "favicon": (),
    "api-docs": ("lang", "script", "format"),
    "api-redoc": ("lang", "version", "format"),
    "report-index": (),
    "report-month": ("version", "csv", "month"),
    "report-file": ("version",),
    "report-focus": ("version",),
    "report-publish": None,
    "report-subscriptions": (),
    "report-subscription-email": (),
    "source-focus-services": (),
    "report-subscription-email-html": (),
    "token-list": (),
    "audit-log": ("entity", "action", "actor", "q", "start", "end", "page", "csv"),
    # OWN_TESTS' pages (their kwargs are given here)
    "login": ("next",),
    "logout": None,
    "report-unsubscribe": (),
    "token-revoke": None,
}
OWN_KWARGS = {"report-unsubscribe": {"token": "1.abc:xyz:sig"}, "token-revoke": {"pk": 1}}

# Raw, already percent-encoded: what a hand-typed or fuzzed address carries.
VALUES = {
    "NUL inside": "a%00b",
    "lone surrogate": "%ED%A0%80",
    "undecodable": "%FF%FE",
    "huge": "9" * 40,
    "negative": "-1",
    "year 0": "0000-01-01",
    "year 9999": "9999-12-31",
    "quarter 9999": "9999Q4",
    "month 9999": "9999-12",
    "long": "x" * 10_000,
}
# Each parameter alone gets the values most likely to reach a query or date arithmetic unchecked (the run stays
# near a minute); all of a page's parameters at once get every value.
ALONE = ("lone surrogate", "huge", "year 0", "year 9999", "long")
ROLES = ("admin", "member_b")


def page_names():
    return [name for name, _ in url_patterns() if name not in API and not name.startswith(ADMIN_NAMESPACE + ":")]


def test_every_page_has_its_parameters_declared():
    missing = [name for name in page_names() if name not in PARAMS]
    assert not missing, f"pages with no row in tests/test_page_fuzz.py PARAMS: {', '.join(missing)}"
    stale = sorted(set(PARAMS) - set(page_names()))
    assert not stale, f"PARAMS rows for URL names that no longer exist: {stale}"


@pytest.fixture(scope="module")
def world(django_db_setup, django_db_blocker):
    """The module runs at one instant, today's: the subscription email's preview lays out the report's PDF, whose
    document names the minute it was generated, and the test suite lays out each distinct document once a process
    (tests/conftest.py). With the clock running, a minute turning between the preview pages (two in each test)
    meant another layout: one when quiet, up to four in a slow run (a quarter of a profiled run's time); held,
    they are one document, laid out once. Which values reach which page is unchanged: every page still computes
    its periods from today."""
    with time_machine.travel(dt.datetime.now(dt.UTC), tick=False), WorldOnce(django_db_blocker) as built:
        yield built


def url_of(world, name) -> str:
    if name in OWN_KWARGS:
        return reverse(name, kwargs=OWN_KWARGS[name])
    row = PAGES.get(name)
    return reverse(name, kwargs=row.kwargs(world, world.a) if row and row.kwargs else None)


def clients(world) -> dict[str, Client]:
    signed_in = {}
    for role in ROLES:
        signed_in[role] = Client(raise_request_exception=False)
        signed_in[role].force_login(world.users[role])
    return signed_in


READ = set()


class RecordingQueryDict(QueryDict):
    """request.GET that remembers every parameter name a view asks for."""

    def __getitem__(self, key):
        READ.add(key)
        return super().__getitem__(key)

    def get(self, key, default=None):
        READ.add(key)
        return super().get(key, default)

    def getlist(self, key, default=None):
        READ.add(key)
        return super().getlist(key, default)

    def __contains__(self, key):
        READ.add(key)
        return super().__contains__(key)


GET_PAGES = [
    name
    for name in PARAMS
    if PARAMS[name] is not None and (name in OWN_TESTS or PAGES[name].methods in (GET, BOTH, FORM))
]


def test_the_declared_parameters_are_the_ones_each_page_reads(world, monkeypatch):
    monkeypatch.setattr("django.core.handlers.wsgi.QueryDict", RecordingQueryDict)
    client = clients(world)["admin"]
    undeclared = {}
    for name in GET_PAGES:
        READ.clear()
        answer = client.get(url_of(world, name))
        assert answer.status_code < 500, name
        if extra := READ - set(PARAMS[name]) - set(NAV):
            undeclared[name] = sorted(extra)
    assert not undeclared, f"pages reading query parameters their PARAMS row does not declare: {undeclared}"


def queries(params: tuple[str, ...], *, each: bool) -> list[str]:
    """The ALONE values for each parameter alone (`each`), or every value for all of them at once; then the parameters
    repeated, and one request with all of them NUL (answered by finops.web.middleware.UnreadableQueryMiddleware)."""
    found = (
        [f"{p}={VALUES[v]}" for p in params for v in ALONE]
        if each
        else ["&".join(f"{p}={v}" for p in params) for v in VALUES.values()]
    )
    return found + [
        "&".join(f"{p}=2026-01&{p}={VALUES['huge']}" for p in params),
        "&".join(f"{p}=%00" for p in (*params, "unknown")),
    ]


def test_no_page_answers_500_to_any_fuzzed_parameter(world):
    """The navigation's period parameters are one reading for every page (finops.web.context): fuzzed one by one
    on the overview, and with each page's own parameters everywhere else. An admin tries each parameter alone; a
    member, who sees less, all of a page's parameters at once."""
    started, failures = time.monotonic(), []
    for role, client in clients(world).items():
        for name, own in PARAMS.items():
            url = url_of(world, name)
            if own is None:
                sent = ["period=%00", f"start={VALUES['year 9999']}"]  # GET is a 405 before any parameter is read
            else:
                params = (*NAV, *own) if name == "overview" else own
                sent = queries(params, each=role == "admin") if params else [f"period={VALUES['year 9999']}"]
            for query in sent:
                answer = client.generic("GET", url, QUERY_STRING=query)
                if answer.status_code >= 500:
                    failures.append(f"{role} GET {url}?{query[:80]} -> {answer.status_code}")
    assert not failures, "\n".join(failures)
    print(f"page fuzz: {time.monotonic() - started:.1f} s")
