"""Admins connect an API account from the Sources page and test its key first; the key never comes back out.

The provider is the local fake server (tests/fakes/provider_server.py) playing OpenAI's Admin API with the
fixtures of tests/fixtures/openai_api (2026-06-12 … 06-15) and OpenRouter's /activity.
"""

import datetime as dt
import time

import pytest
from django.urls import reverse

from finops.models import Account, IngestRun, Provider, UsageLine
from finops.sources.services.accounts import account_credentials, account_set_credentials
from ingest.connection_check import account_connection_check, connection_check
from ingest.http import HttpClient
from tests.fakes.provider_server import FakeProviderServer, Reply
from tests.ingest.test_openai_api import COSTS
from tests.ingest.test_openrouter_api import ACTIVITY, fixture

SECRET = "sk-admin-connect-test-4b8d0f2a6c1e3a5b7d9f"
NEW_SECRET = "sk-admin-replacement-9e7c5a3b1d2f4e6a8c0b"


@pytest.fixture
def fake(fake_openai):
    return fake_openai


@pytest.fixture
def june_14(time_machine):
    # "Yesterday" is then 2026-06-13, the fixtures' fullest day (usage and billed costs).
    time_machine.move_to(dt.datetime(2026, 6, 14, 9, tzinfo=dt.UTC))


def form(fake, **overrides) -> dict:
    return {
        "connector": "openai_api",
        "name": "openai-prod",
        "provider": "",
        "base_url": fake.url + "/v1",
        "secret": SECRET,
        "sync_interval_minutes": "60",
        **overrides,
    }


def test_an_admin_connects_an_api_account_and_its_key_is_stored_encrypted_and_never_shown(client_as, ada, fake):
    response = client_as(ada).post(reverse("source-create"), {**form(fake), "action": "save"}, follow=True)
    account = Account.objects.get(name="openai-prod")
    assert response.redirect_chain[-1][0] == reverse("source-detail", args=[account.pk])
    assert (
        account.connector,
        account.provider.slug,
        account.base_url,
        account.sync_interval_minutes,
        account.enabled,
    ) == ("openai_api", "openai", fake.url + "/v1", 60, True)
    assert SECRET not in account.credentials_ciphertext and account_credentials(account=account) == SECRET
    page = response.content.decode()
    assert "openai-prod is connected (key sk-admin…)" in page and "press Sync now" in page
    for url in (
        reverse("source-list"),
        reverse("source-detail", args=[account.pk]),
        reverse("source-edit", args=[account.pk]),
    ):
        html = client_as(ada).get(url).content.decode()
        assert SECRET not in html and SECRET[9:] not in html, url
    assert not fake.requests, "connecting saves; it does not call the provider"


def test_test_connection_reports_what_the_key_reads_and_saves_nothing(client_as, ada, fake, june_14):
    response = client_as(ada).post(
        reverse("source-create"), {**form(fake), "action": "test"}, HTTP_ACCEPT="application/json"
    )
    answer = response.json()
    assert answer["ok"] is True
    assert answer["message"] == (
        f"OK: the key reads the OpenAI Admin API at {fake.url}/v1. On 2026-06-13 (UTC): 1 project, 7 lines, 33 "
        f"requests, "
        "2 models (gpt-5-2025-08-07, text-embedding-3-small), 3 other billed items; 1.88 USD billed."
    )
    assert {r.headers["Authorization"] for r in fake.requests} == {f"Bearer {SECRET}"}
    assert {r.query["start_time"][0] for r in fake.requests} == {
        str(int(dt.datetime(2026, 6, 13, tzinfo=dt.UTC).timestamp()))
    }
    assert not Account.objects.exists() and not IngestRun.objects.exists() and not UsageLine.objects.exists()


def test_a_refused_key_is_explained_and_never_echoed_even_when_the_provider_repeats_it(client_as, ada, fake, june_14):
    fake.route(COSTS, [Reply(401, {"error": {"message": f"Incorrect API key provided: {SECRET}"}})])
    answer = (
        client_as(ada)
        .post(reverse("source-create"), {**form(fake), "action": "test"}, HTTP_ACCEPT="application/json")
        .json()
    )
    assert answer == {
        "ok": False,
        "message": "The key was refused (HTTP 401): it needs an OpenAI Admin key (sk-admin-…, Settings → Organization "
        "→ Admin keys); project keys cannot read organisation usage and costs.",
    }
    # Without the page's script the form comes back with the answer, and an empty key field.
    html = client_as(ada).post(reverse("source-create"), {**form(fake), "action": "test"}).content.decode()
    assert "The key was refused (HTTP 401)" in html and 'role="alert"' in html and "Type the key again" in html
    assert SECRET not in html
    assert not Account.objects.exists()


@pytest.mark.parametrize(
    "reply, expected",
    [
        (
            Reply(403, {"error": {"message": "Missing scope api.usage.read"}}),
            "The key was refused (HTTP 403): it needs an OpenAI Admin key",
        ),
        (
            Reply(429, {"error": {"message": "Rate limit reached"}}, {"Retry-After": "0"}),
            "The provider is rate-limiting this key (HTTP 429); the key was not refused.",
        ),
        (
            Reply(429, {"error": {"code": "insufficient_quota", "message": "You exceeded your quota"}}),
            "The key was accepted, but the provider reports insufficient quota (HTTP 429)",
        ),
        (
            Reply(502, {"error": {"message": "bad gateway"}}, {"Retry-After": "0"}),
            "The provider answered with a server error; try again later.",
        ),
        (Reply(200, "<html>a login page</html>"), "Something answered at"),
    ],
)
def test_each_kind_of_failure_gets_its_own_explanation(fake, june_14, reply, expected):
    fake.route(COSTS, [reply])
    report = connection_check(connector="openai_api", base_url=fake.url + "/v1", secret=SECRET)
    assert not report.ok and report.message.startswith(expected), report.message


def test_a_base_url_that_is_not_the_api_says_so_and_names_the_default(fake, june_14):
    report = connection_check(connector="openai_api", base_url=fake.url + "/wrong", secret=SECRET)
    assert not report.ok
    assert report.message.startswith(
        f"{fake.url}/wrong answered 404 (not found): it does not look like the OpenAI Admin API. "
        "Check the base URL; the default is https://api.openai.com/v1."
    )


def test_a_host_that_does_not_answer_in_time_or_at_all_says_so(june_14):
    with FakeProviderServer() as slow:
        slow.route(COSTS, lambda query: time.sleep(1.0) or Reply(200, {"data": []}))
        report = connection_check(
            connector="openai_api",
            base_url=slow.url + "/v1",
            secret=SECRET,
            client=HttpClient(timeout=0.2, max_attempts=1),
        )
        assert not report.ok and f"{slow.url}/v1 did not answer in time" in report.message
        closed = slow.url  # once the server has stopped, nothing listens on its port
    report = connection_check(
        connector="openai_api", base_url=closed + "/v1", secret=SECRET, client=HttpClient(timeout=1, max_attempts=1)
    )
    assert (
        not report.ok
        and "could not be reached" in report.message
        and "the OpenAI Admin API default is https://api.openai.com/v1" in report.message
    )


def test_an_openrouter_key_is_tested_on_its_activity_for_yesterday(time_machine):
    time_machine.move_to(dt.datetime(2025, 8, 25, 9, tzinfo=dt.UTC))
    with FakeProviderServer() as server:
        server.route(ACTIVITY, [fixture("activity_2025-08-24.json")])
        report = connection_check(connector="openrouter_api", base_url=server.url + "/api/v1", secret="sk-or-v1-test")
        assert [r.query["date"] for r in server.requests] == [["2025-08-24"]]
    assert report.ok and report.lines > 0 and report.day == dt.date(2025, 8, 24)
    assert "openai/gpt-4.1" in report.models and "USD billed" in report.message


def test_a_quiet_day_is_still_a_working_key(fake, june_14):
    report = connection_check(
        connector="openai_api", base_url=fake.url + "/v1", secret=SECRET, today=dt.date(2026, 7, 30)
    )
    assert report.ok and report.lines == 0
    assert "It reports no usage on 2026-07-29 (UTC)" in report.message


def test_a_name_already_taken_or_a_missing_key_is_refused_on_the_form(client_as, ada, fake, openai_account):
    response = client_as(ada).post(reverse("source-create"), {**form(fake), "secret": "", "action": "save"})
    assert response.status_code == 400
    html = response.content.decode()
    assert "An account with this name exists; pick another name." in html and "This field is required." in html
    answer = (
        client_as(ada)
        .post(reverse("source-create"), {**form(fake), "secret": "", "action": "test"}, HTTP_ACCEPT="application/json")
        .json()
    )
    assert answer == {
        "ok": False,
        "message": "Fix the connector, base URL and key first: API key: This field is required.",
    }
    assert Account.objects.count() == 1


def test_every_field_of_the_connect_form_has_help_text_and_the_key_is_a_password_field(client_as, ada):
    response = client_as(ada).get(reverse("source-create"))
    form_ = response.context["form"]
    assert all(field.help_text for field in form_.fields.values())
    html = response.content.decode()
    assert 'type="password" name="secret"' in html
    assert 'placeholder="https://api.openai.com/v1"' in html  # the first connector's default, pre-filled as a hint
    assert [value for value, _ in form_.fields["connector"].choices] == [
        "openai_api",
        "anthropic_api",
        "openrouter_api",
        "litellm_api",
    ]


@pytest.fixture
def disabled_api_account(db, fake):
    account = Account.objects.create(
        name="openai-prod",
        provider=Provider.objects.get(slug="openai"),
        connector="openai_api",
        base_url=fake.url + "/v1",
        enabled=False,
    )
    account_set_credentials(account=account, secret=SECRET)
    return account


def test_an_admin_replaces_a_refused_key_and_enables_the_account_from_its_page(
    client_as, ada, disabled_api_account, fake
):
    url = reverse("source-edit", args=[disabled_api_account.pk])
    data = {
        "base_url": fake.url + "/v1",
        "secret": NEW_SECRET,
        "sync_interval_minutes": "30",
        "enabled": "on",
        "action": "save",
    }
    response = client_as(ada).post(url, data, follow=True)
    account = Account.objects.get(pk=disabled_api_account.pk)
    assert (
        account.enabled and account.sync_interval_minutes == 30 and account_credentials(account=account) == NEW_SECRET
    )
    html = response.content.decode()
    assert "openai-prod saved (key replaced, enabled)." in html and NEW_SECRET not in html and SECRET not in html
    # Saved without a new key: the stored one stays.
    client_as(ada).post(url, {**data, "secret": ""})
    assert account_credentials(account=Account.objects.get(pk=account.pk)) == NEW_SECRET


def test_test_connection_on_the_account_page_uses_the_stored_key(client_as, ada, disabled_api_account, fake, june_14):
    response = client_as(ada).post(reverse("source-test", args=[disabled_api_account.pk]), follow=True)
    assert "OK: the key reads the OpenAI Admin API" in response.content.decode()
    assert {r.headers["Authorization"] for r in fake.requests} == {f"Bearer {SECRET}"}
    # On the settings page a key typed there is tested instead of the stored one.
    fake.requests.clear()
    client_as(ada).post(
        reverse("source-edit", args=[disabled_api_account.pk]),
        {"base_url": fake.url + "/v1", "secret": NEW_SECRET, "sync_interval_minutes": "60", "action": "test"},
        HTTP_ACCEPT="application/json",
    )
    assert {r.headers["Authorization"] for r in fake.requests} == {f"Bearer {NEW_SECRET}"}
    assert account_credentials(account=Account.objects.get(pk=disabled_api_account.pk)) == SECRET, (
        "a test saves nothing"
    )


def test_an_unreadable_stored_key_is_reported_not_raised(disabled_api_account):
    Account.objects.filter(pk=disabled_api_account.pk).update(credentials_ciphertext="not-a-fernet-token")
    report = account_connection_check(account=Account.objects.get(pk=disabled_api_account.pk))
    assert not report.ok and "cannot be decrypted" in report.message and "Paste the key again" in report.message


def test_finance_sees_sources_without_the_buttons_and_cannot_act(client_as, fiona, disabled_api_account, fake):
    sources = client_as(fiona).get(reverse("source-list")).content.decode()
    account_page = client_as(fiona).get(reverse("source-detail", args=[disabled_api_account.pk])).content.decode()
    assert "openai-prod" in sources and "Connect an API account" not in sources
    assert (
        "Test connection" not in account_page
        and "Connection settings" not in account_page
        and "Sync now" not in account_page
    )
    pk = disabled_api_account.pk
    for method, url in [
        ("get", reverse("source-create")),
        ("post", reverse("source-create")),
        ("get", reverse("source-edit", args=[pk])),
        ("post", reverse("source-edit", args=[pk])),
        ("post", reverse("source-test", args=[pk])),
    ]:
        # Finance sees sources, so is refused rather than told they do not exist (docs/access.md).
        assert getattr(client_as(fiona), method)(url, form(fake)).status_code == 403, (method, url)
    assert Account.objects.count() == 1 and not fake.requests


def test_members_get_404_on_every_sources_page(client_as, sam, disabled_api_account):
    pk = disabled_api_account.pk
    for url in (
        reverse("source-list"),
        reverse("source-create"),
        reverse("source-edit", args=[pk]),
        reverse("source-detail", args=[pk]),
    ):
        assert client_as(sam).get(url).status_code == 404, url
    assert client_as(sam).post(reverse("source-test", args=[pk])).status_code == 404


def test_file_accounts_have_no_connection_settings_or_test(client_as, ada, openai_account):
    assert client_as(ada).get(reverse("source-edit", args=[openai_account.pk])).status_code == 404
    assert client_as(ada).post(reverse("source-test", args=[openai_account.pk])).status_code == 404
