"""One status per account, the same on the Sources list, the account page and the overview's freshness table.

A failed pull (a refused key, a malformed page) puts its account in error until a later run of it succeeds; the
freshness of the data it already has is shown beside the error, on every page alike. A refused file is the
uploader's error and leaves the account's state as it was (tests/test_refused_uploads.py).
"""

import csv
import datetime as dt
import io

import pytest
from django.urls import reverse

from finops.models import Account, IngestRun, Provider
from finops.sources.selectors.account_status import account_status, account_statuses, by_urgency, status_of
from ingest.services import usage_file_import
from tests.clock import holding

TODAY = dt.datetime.now(dt.UTC).date()
_held_on_today = holding(TODAY)


def usage(*days_ago: int) -> bytes:
    rows = "".join(f"{(TODAY - dt.timedelta(days=n)).isoformat()},gpt-5-mini,1000,100,1.25\n" for n in days_ago)
    return ("day,model,input_tokens,output_tokens,cost\n" + rows).encode()


def import_file(account, content: bytes, name: str) -> IngestRun:
    return usage_file_import(account=account, stream=io.BytesIO(content), file_name=name)


def pages(client, account) -> dict[str, str]:
    return {
        "sources": client.get(reverse("source-list")).content.decode(),
        "account": client.get(reverse("source-detail", args=[account.pk])).content.decode(),
        "overview": client.get(reverse("overview")).content.decode(),
    }


@pytest.fixture
def healthy(openai_account):
    assert import_file(openai_account, usage(1, 2), "good.csv").status == "succeeded"
    return openai_account


def failed_pull(account, error: str = "costs page 2: HTTP 500 after 3 retries") -> IngestRun:
    return IngestRun.objects.create(account=account, trigger="schedule", status="failed", error=error)


PULL_REASON = "last run failed: costs page 2: HTTP 500 after 3 retries"


def test_a_failed_pull_puts_a_healthy_account_in_error_on_every_page_with_its_fresh_data_beside(
    client_as, fiona, healthy
):
    failed_pull(healthy)
    status = account_status(healthy, TODAY)
    assert (status.state, status.label, status.detail, status.freshness) == ("error", "error", PULL_REASON, "fresh")
    for name, page in pages(client_as(fiona), healthy).items():
        assert PULL_REASON in page, name
        assert '<span class="badge bad">error</span>' in page, name
        assert ">fresh</span>" in page or "Freshness: fresh" in page, name


def test_a_later_successful_run_clears_the_error_everywhere(client_as, fiona, healthy):
    failed_pull(healthy)
    assert import_file(healthy, usage(1), "fixed.csv").status == "succeeded"
    assert account_status(healthy, TODAY).state == "ok"
    for name, page in pages(client_as(fiona), healthy).items():
        assert PULL_REASON not in page and '<span class="badge bad">error</span>' not in page, name
        assert '<span class="badge ok">ok</span>' in page, name


def test_data_older_than_two_days_is_n_days_behind_on_sources_and_the_overview(client_as, fiona, openai_account):
    import_file(openai_account, usage(5), "old.csv")
    status = account_status(openai_account, TODAY)
    assert (status.state, status.label, status.lag_days) == ("stale", "5 days behind", 5)
    for name, page in pages(client_as(fiona), openai_account).items():
        assert "5 days behind" in page, name


def test_an_account_without_data_says_no_data_yet_and_why(healthy):
    Account.objects.create(name="groq-gw", provider=Provider.objects.get(slug="groq"), connector="gateway_log")
    Account.objects.create(name="anthropic", provider=Provider.objects.get(slug="anthropic"), connector="anthropic_api")
    statuses = {s.account.name: s for s in account_statuses(TODAY)}
    assert (statuses["groq-gw"].state, statuses["groq-gw"].label, statuses["groq-gw"].detail) == (
        "never",
        "no data yet",
        "No file imported yet.",
    )
    assert statuses["anthropic"].detail == "Waiting for its first pull."
    assert (
        statuses["openai-prod"].state == "ok"
        and statuses["openai-prod"].detail == f"Data up to {TODAY - dt.timedelta(days=1):%Y-%m-%d}."
    )


def test_a_disabled_account_says_so_with_the_failure_that_disabled_it(healthy):
    IngestRun.objects.create(account=healthy, trigger="schedule", status="failed", error="costs page 1: HTTP 401")
    Account.objects.filter(pk=healthy.pk).update(enabled=False)
    status = account_status(Account.objects.get(pk=healthy.pk), TODAY)
    assert status.state == "disabled" and status.badge == "bad"
    assert (
        status.detail
        == "Not pulled: last run failed: costs page 1: HTTP 401. Replace its key and enable it in its connection "
        "settings."
    )
    assert status.freshness == "fresh"


def test_a_queued_or_running_run_does_not_change_the_status_the_last_finished_run_decides(healthy):
    failed_pull(healthy)
    IngestRun.objects.create(account=healthy, trigger="manual", status="queued")
    IngestRun.objects.create(account=healthy, trigger="manual", status="running")
    assert account_status(healthy, TODAY).state == "error"


def test_the_overview_lists_the_accounts_needing_attention_first_and_its_csv_says_the_same(client_as, fiona, healthy):
    broken = Account.objects.create(name="zz-broken", provider=Provider.objects.get(slug="groq"), connector="usage_csv")
    failed_pull(broken, "bad.csv line 2: input_tokens is negative (-4)")
    assert [s.account.name for s in by_urgency(account_statuses(TODAY))] == ["zz-broken", "openai-prod"]
    body = client_as(fiona).get(reverse("overview"), {"csv": "freshness"}).content.decode()
    rows = list(csv.DictReader(io.StringIO(body)))
    assert [(r["Account"], r["Status"], r["Detail"]) for r in rows] == [
        ("zz-broken", "error", "last run failed: bad.csv line 2: input_tokens is negative (-4)"),
        ("openai-prod", "ok", f"Data up to {TODAY - dt.timedelta(days=1):%Y-%m-%d}."),
    ]


@pytest.mark.parametrize(
    "enabled, run_status, lag, state",
    [
        (False, None, 0, "disabled"),
        (True, "failed", 0, "error"),
        (True, "failed", None, "error"),
        (True, "succeeded", None, "never"),
        (True, None, None, "never"),
        (True, "succeeded", 3, "stale"),
        (True, "succeeded", 2, "ok"),
    ],
)
def test_the_states_in_order_of_urgency(db, enabled, run_status, lag, state):
    account = Account(name="a", provider=Provider.objects.get(slug="openai"), connector="openai_api", enabled=enabled)
    run = IngestRun(account=account, trigger="schedule", status=run_status, error="boom") if run_status else None
    latest = None if lag is None else TODAY - dt.timedelta(days=lag)
    assert status_of(account=account, latest_day=latest, last_run=run, today=TODAY).state == state
