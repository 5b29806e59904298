"""Pulling an API account end to end: the `sync` command and "Sync now" against a fake OpenAI, failures made visible."""

import datetime as dt
import io

import pytest
from django.core.management import CommandError, call_command
from django.db.models import Sum
from django.urls import reverse

from finops.models import Account, DailySpend, IngestRun, Provider, UsageLine
from finops.sources.services.accounts import account_set_credentials
from ingest.schedule import due_sync_runs, runs_abandoned_fail
from tests.fakes.provider_server import Reply
from tests.ingest.test_openai_api import COSTS, SECRET


@pytest.fixture
def openai_api_account(db, fake_openai):
    account = Account.objects.create(
        name="openai-prod",
        provider=Provider.objects.get(slug="openai"),
        connector="openai_api",
        base_url=fake_openai.url + "/v1",
    )
    account_set_credentials(account=account, secret=SECRET)
    return account


def sync(*args) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("sync", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def totals():
    return UsageLine.objects.aggregate(cost=Sum("reporting_cost"), output=Sum("output_tokens"), lines=Sum("requests"))


def test_the_sync_command_pulls_a_window_and_rolls_it_up(openai_api_account, fake_openai):
    out, _ = sync("--account", "openai-prod", "--start", "2026-06-12", "--end", "2026-06-16")
    assert "openai-prod 2026-06-12 → 2026-06-16: read" in out
    assert UsageLine.objects.filter(account=openai_api_account).exists()
    rollup = DailySpend.objects.aggregate(cost=Sum("reporting_cost"))["cost"]
    assert rollup == totals()["cost"] and rollup > 0
    assert all(r.headers["Authorization"] == f"Bearer {SECRET}" for r in fake_openai.requests)
    openai_api_account.refresh_from_db()
    assert openai_api_account.last_success_at is not None and openai_api_account.last_error == ""


def test_pulling_the_same_window_again_changes_no_total(openai_api_account):
    sync("--account", "openai-prod", "--start", "2026-06-12", "--end", "2026-06-16")
    first = totals()
    out, _ = sync("--account", "openai-prod", "--start", "2026-06-12", "--end", "2026-06-16")
    assert totals() == first
    run = IngestRun.objects.filter(account=openai_api_account).first()
    assert run.lines_written == run.lines_replaced > 0


def test_rejected_credentials_disable_the_account_and_say_why_on_its_page(
    openai_api_account, fake_openai, client_as, ada
):
    fake_openai.route(COSTS, [Reply(401, {"error": {"message": "Incorrect API key provided"}})])
    with pytest.raises(CommandError, match="1 run"):
        sync("--account", "openai-prod", "--start", "2026-06-12", "--end", "2026-06-16")
    openai_api_account.refresh_from_db()
    assert not openai_api_account.enabled
    assert "rejected the credentials (HTTP 401)" in openai_api_account.last_error
    page = client_as(ada).get(reverse("source-detail", args=[openai_api_account.pk])).content.decode()
    assert "rejected the credentials (HTTP 401)" in page and SECRET not in page
    # Nothing is pulled again until someone fixes the key and enables the account.
    assert due_sync_runs() == []


def test_a_failed_pull_leaves_the_earlier_data_untouched(openai_api_account, fake_openai):
    sync("--account", "openai-prod", "--start", "2026-06-12", "--end", "2026-06-16")
    before = totals()
    fake_openai.route(COSTS, [Reply(200, "{malformed")])
    with pytest.raises(CommandError):
        sync("--account", "openai-prod", "--start", "2026-06-12", "--end", "2026-06-16")
    assert totals() == before
    failed = IngestRun.objects.filter(account=openai_api_account, status="failed").get()
    assert "malformed response" in failed.error


def test_sync_refuses_bad_dates_and_unknown_accounts(db):
    with pytest.raises(CommandError, match="exclusive"):
        sync("--start", "2026-06-12", "--end", "2026-06-12")
    with pytest.raises(CommandError, match="No API account named 'nope'"):
        sync("--account", "nope")
    with pytest.raises(CommandError, match="both --start and --end"):
        sync("--start", "2026-06-12")


def test_the_schedule_backfills_a_new_account_and_then_looks_back(openai_api_account, time_machine):
    time_machine.move_to(dt.datetime(2026, 6, 20, 10, tzinfo=dt.UTC))
    runs = due_sync_runs()
    assert {r.trigger for r in runs} == {"backfill"}
    assert runs[0].window_start == dt.datetime(2026, 3, 23, tzinfo=dt.UTC) and runs[-1].window_end == dt.datetime(
        2026, 6, 21, tzinfo=dt.UTC
    )
    assert all((r.window_end - r.window_start).days <= 31 for r in runs)
    assert due_sync_runs() == []  # runs are pending: nothing is queued twice
    IngestRun.objects.update(status="succeeded")
    Account.objects.update(
        last_sync_at=dt.datetime(2026, 6, 20, 9, 30, tzinfo=dt.UTC),
        last_success_at=dt.datetime(2026, 6, 20, 9, 30, tzinfo=dt.UTC),
    )
    assert due_sync_runs() == []  # the hourly interval has not passed
    time_machine.move_to(dt.datetime(2026, 6, 20, 10, 31, tzinfo=dt.UTC))
    (run,) = due_sync_runs()
    assert (run.trigger, run.window_start, run.window_end) == (
        "schedule",
        dt.datetime(2026, 6, 18, tzinfo=dt.UTC),
        dt.datetime(2026, 6, 21, tzinfo=dt.UTC),
    )


def test_the_first_pull_of_a_day_rereads_the_month_to_date(openai_api_account, time_machine):
    time_machine.move_to(dt.datetime(2026, 6, 20, 0, 5, tzinfo=dt.UTC))
    Account.objects.update(
        last_sync_at=dt.datetime(2026, 6, 19, 23, 0, tzinfo=dt.UTC),
        last_success_at=dt.datetime(2026, 6, 19, 23, 0, tzinfo=dt.UTC),
    )
    (run,) = due_sync_runs()
    assert run.window_start == dt.datetime(2026, 6, 1, tzinfo=dt.UTC)


def test_a_run_whose_worker_died_is_marked_failed_once_its_lease_lapses(openai_api_account, time_machine):
    time_machine.move_to(dt.datetime(2026, 6, 20, 10, tzinfo=dt.UTC))
    run = IngestRun.objects.create(
        account=openai_api_account,
        trigger="schedule",
        status="running",
        started_at=dt.datetime(2026, 6, 20, 9, tzinfo=dt.UTC),
    )
    assert runs_abandoned_fail() == 1
    run.refresh_from_db()
    assert run.status == "failed" and "worker stopped" in run.error


def test_sync_now_on_the_page_queues_and_runs_the_scheduled_window(
    openai_api_account, client_as, ada, django_capture_on_commit_callbacks, time_machine
):
    time_machine.move_to(dt.datetime(2026, 6, 15, 12, tzinfo=dt.UTC))
    Account.objects.update(last_success_at=dt.datetime(2026, 6, 15, 11, tzinfo=dt.UTC))
    with django_capture_on_commit_callbacks(execute=True):
        response = client_as(ada).post(reverse("source-sync", args=[openai_api_account.pk]))
    assert response.status_code == 302
    run = IngestRun.objects.get(account=openai_api_account)
    assert (run.trigger, run.status) == ("manual", "succeeded")
    assert run.window_start == dt.datetime(2026, 6, 13, tzinfo=dt.UTC)


def test_only_admins_may_sync_or_upload(openai_api_account, client_as, fiona, sam):
    # Finance sees the sources but changes nothing: 403; a member does not see them: 404 (docs/access.md).
    for user, status in ((fiona, 403), (sam, 404)):
        assert client_as(user).post(reverse("source-sync", args=[openai_api_account.pk])).status_code == status
        assert client_as(user).post(reverse("source-upload")).status_code == status
    api = client_as(fiona).post(f"/api/v1/accounts/{openai_api_account.pk}/syncs", {}, content_type="application/json")
    assert api.status_code == 403


def test_the_api_queues_a_sync_and_reports_its_runs(
    openai_api_account, client_as, ada, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = client_as(ada).post(
            f"/api/v1/accounts/{openai_api_account.pk}/syncs",
            {"start": "2026-06-12", "end": "2026-06-16"},
            content_type="application/json",
        )
    assert response.status_code == 202
    (run,) = response.json()
    detail = client_as(ada).get(f"/api/v1/runs/{run['id']}").json()
    assert detail["status"] == "succeeded" and detail["lines_written"] > 0 and detail["account"] == "openai-prod"
    listed = client_as(ada).get(f"/api/v1/accounts/{openai_api_account.pk}/runs").json()["results"]
    assert [r["id"] for r in listed] == [run["id"]]


def test_a_second_writer_of_the_same_account_is_kept_out_while_the_first_writes(openai_api_account):
    """Two deliveries of one run share its lease; the advisory lock still lets only one write at a time."""
    import threading

    from django.db import connection, transaction

    from ingest.lease import AccountBusy, account_write_lock

    holding, release = threading.Event(), threading.Event()

    def first_writer():
        with transaction.atomic():
            account_write_lock(account_id=openai_api_account.id)
            holding.set()
            release.wait(10)
        connection.close()

    thread = threading.Thread(target=first_writer)
    thread.start()
    try:
        assert holding.wait(10)
        with pytest.raises(AccountBusy), transaction.atomic():
            account_write_lock(account_id=openai_api_account.id)
    finally:
        release.set()
        thread.join()
