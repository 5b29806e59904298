""" "Sync now" with tasks inline (the demo, these tests): no worker retries later, so every run ends, and says how.

The provider is the local fake OpenAI server; the test settings run Celery tasks eagerly, as the demo does. The
page tests commit for real (transactional database), so the queued task runs when "Sync now" commits, inside
the request, exactly as in the demo.
"""

import datetime as dt

import pytest
from django.urls import reverse

from finops.models import Account, IngestRun, Provider, UsageLine
from finops.sources.services.accounts import account_set_credentials
from ingest.lease import lease_claim
from tests.fakes.provider_server import Reply
from tests.ingest.test_openai_api import COSTS, SECRET

NOW = dt.datetime(2026, 6, 16, 12, tzinfo=dt.UTC)  # the fixtures' window is 2026-06-12 … 06-16


@pytest.fixture
def api_account(reseeded, fake_openai, time_machine):
    time_machine.move_to(NOW)
    account = Account.objects.create(
        name="openai-prod",
        provider=Provider.objects.get(slug="openai"),
        connector="openai_api",
        base_url=fake_openai.url + "/v1",
    )
    account_set_credentials(account=account, secret=SECRET)
    # Synced an hour ago: "Sync now" reads the last 3 days, one run.
    Account.objects.filter(pk=account.pk).update(last_success_at=NOW - dt.timedelta(hours=1))
    return account


def press_sync_now(client, account):
    return client.post(reverse("source-sync", args=[account.pk]), follow=True)


def costs_requests(server) -> int:
    return sum(1 for r in server.requests if r.path == COSTS)


@pytest.mark.parametrize(
    "reply, shown",
    [
        (Reply(500, {"error": {"message": "upstream exploded"}}, {"Retry-After": "0"}), "HTTP 500: upstream exploded"),
        (
            Reply(429, {"error": {"message": "Rate limit reached"}}, {"Retry-After": "0"}),
            "HTTP 429: Rate limit reached",
        ),
    ],
)
def test_a_transient_provider_error_on_sync_now_fails_the_run_with_its_message_instead_of_a_server_error(
    api_account, fake_openai, client_as, ada, reply, shown
):
    fake_openai.route(COSTS, [reply])
    response = press_sync_now(client_as(ada), api_account)
    assert response.status_code == 200 and response.redirect_chain[-1][0] == reverse(
        "source-detail", args=[api_account.pk]
    )
    run = IngestRun.objects.get(account=api_account)
    assert run.status == "failed" and shown in run.error and "will retry" not in run.error
    page = response.content.decode()
    assert f"Sync of openai-prod (2026-06-14 → 2026-06-17 UTC) failed: costs page 1: {shown}" in page
    assert "Failed" in page and shown in page
    # Inline, the pull gives up after the quick client's two attempts: no Celery retry re-runs it in the request.
    assert costs_requests(fake_openai) == 2
    api_account.refresh_from_db()
    assert api_account.enabled, "a transient failure does not disable the account"


def test_a_refused_key_on_sync_now_fails_the_run_and_disables_the_account(api_account, fake_openai, client_as, ada):
    fake_openai.route(COSTS, [Reply(401, {"error": {"message": "Incorrect API key provided"}})])
    response = press_sync_now(client_as(ada), api_account)
    run = IngestRun.objects.get(account=api_account)
    assert run.status == "failed" and "rejected the credentials (HTTP 401)" in run.error
    assert costs_requests(fake_openai) == 1, "a permanent error is not retried"
    api_account.refresh_from_db()
    assert not api_account.enabled
    page = response.content.decode()
    assert "rejected the credentials (HTTP 401)" in page and SECRET not in page
    assert 'id="account-status" class="error" role="alert"' in page and ">disabled</span>" in page


def test_a_successful_sync_now_says_how_many_lines_it_wrote_and_the_run_succeeded(api_account, client_as, ada):
    response = press_sync_now(client_as(ada), api_account)
    run = IngestRun.objects.get(account=api_account)
    assert run.status == "succeeded" and run.lines_written == UsageLine.objects.count() > 0
    page = response.content.decode()
    assert f"Synced openai-prod (2026-06-14 → 2026-06-17 UTC): {run.lines_written} line(s) written." in page
    assert "Succeeded" in page


def test_sync_now_while_another_run_holds_the_account_fails_at_once_saying_so(api_account, client_as, ada):
    other = IngestRun.objects.create(account=api_account, trigger="schedule", status="running")
    lease_claim(account_id=api_account.id, run_id=other.id)
    response = press_sync_now(client_as(ada), api_account)
    run = IngestRun.objects.exclude(pk=other.pk).get(account=api_account)
    assert run.status == "failed" and run.error.startswith(f"Not started: another run holds account {api_account.id}")
    assert "Try again when it has finished" in response.content.decode()


def test_sync_now_on_a_disabled_account_says_why_it_did_not_run(api_account, client_as, ada):
    Account.objects.filter(pk=api_account.pk).update(enabled=False)
    response = press_sync_now(client_as(ada), api_account)
    assert "Not synced: openai-prod is disabled; replace its key and enable it first." in response.content.decode()
    assert not IngestRun.objects.exists()


def test_the_api_sync_answers_with_the_failed_run_and_its_error_rather_than_a_server_error(
    api_account, fake_openai, client_as, ada
):
    fake_openai.route(COSTS, [Reply(503, {"error": {"message": "try later"}}, {"Retry-After": "0"})])
    response = client_as(ada).post(f"/api/v1/accounts/{api_account.pk}/syncs", {}, content_type="application/json")
    assert response.status_code == 202
    (run,) = response.json()
    assert run["status"] == "failed" and "HTTP 503: try later" in run["error"]
    assert client_as(ada).get(f"/api/v1/runs/{run['id']}").json()["status"] == "failed"


def test_the_api_sync_reports_the_runs_finished_when_tasks_run_inline(api_account, client_as, ada):
    response = client_as(ada).post(f"/api/v1/accounts/{api_account.pk}/syncs", {}, content_type="application/json")
    assert response.status_code == 202
    assert [run["status"] for run in response.json()] == ["succeeded"]


def test_a_file_import_inline_while_the_account_is_busy_fails_saying_so_instead_of_a_server_error(
    client_as, ada, openai_account, django_capture_on_commit_callbacks, settings, tmp_path
):
    from django.core.files.uploadedfile import SimpleUploadedFile

    settings.MEDIA_ROOT = tmp_path
    other = IngestRun.objects.create(account=openai_account, trigger="upload", status="running")
    lease_claim(account_id=openai_account.id, run_id=other.id)
    csv = b"day,model,input_tokens,output_tokens,cost\n2026-06-15,gpt-5-mini,1000,100,1.25\n"
    with django_capture_on_commit_callbacks(execute=True):
        response = client_as(ada).post(
            reverse("source-upload"),
            {"file": SimpleUploadedFile("u.csv", csv), "account": openai_account.pk},
            HTTP_ACCEPT="application/json",
        )
    assert response.status_code == 202
    run = IngestRun.objects.get(pk=response.json()["run"])
    assert run.status == "failed" and run.error.startswith("Not started: another run holds account")
