"""A refused file is the uploader's error (issue 24): a healthy account stays healthy on every page, nobody is emailed
"source failing", and the uploader sees why on the upload and in the account's runs. A source that does fail is the
platform team's to fix: its alert goes to the admins, and to finance only when someone there asked for it."""

import datetime as dt

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from finops.alerts.evaluate import alerts_evaluate
from finops.models import Account, AlertEvent, AlertKind, IngestRun, Provider
from finops.notify.deliver import events_deliver
from finops.sources.selectors.account_status import account_status

NOW = dt.datetime(2026, 11, 24, 9, 30, tzinfo=dt.UTC)
GOOD = b"day,model,input_tokens,output_tokens,cost\n2026-11-23,gpt-5-mini,1000,100,1.25\n"
BAD = b"day,model,input_tokens,output_tokens,cost\n2026-11-23,gpt-5-mini,-4,100,1.25\n"


def upload(client, account, name: str, content: bytes) -> dict:
    response = client.post(
        reverse("source-upload"),
        {"file": SimpleUploadedFile(name, content), "account": account.pk},
        HTTP_ACCEPT="application/json",
    )
    assert response.status_code == 202, response.content
    return response.json()


def test_a_refused_upload_leaves_a_healthy_account_healthy_and_emails_nobody(
    smtp, time_machine, client_as, ada, fiona, openai_account, django_capture_on_commit_callbacks
):
    time_machine.move_to(NOW, tick=False)
    admin = client_as(ada)
    with django_capture_on_commit_callbacks(execute=True):
        upload(admin, openai_account, "good.csv", GOOD)
    openai_account.refresh_from_db()
    before = openai_account.last_success_at
    with django_capture_on_commit_callbacks(execute=True):
        refused = upload(admin, openai_account, "bad.csv", BAD)

    # Shown to the uploader: the upload's status and the account's runs say why.
    status = admin.get(refused["status_url"]).json()
    assert status["status"] == "failed" and "input_tokens is negative" in status["error"]
    account_page = admin.get(reverse("source-detail", args=[openai_account.pk])).content.decode()
    assert "bad.csv line 2: input_tokens is negative (-4)" in account_page
    # The account is what its last import that changed data says: healthy, on every page.
    assert account_status(openai_account, NOW.date()).state == "ok"
    openai_account.refresh_from_db()
    assert openai_account.last_success_at == before
    for url in (reverse("source-list"), reverse("overview")):
        page = client_as(fiona).get(url).content.decode()
        assert '<span class="badge bad">error</span>' not in page and "input_tokens is negative" not in page, url
    assert '<span class="badge ok">ok</span>' in account_page
    # No alert, no email.
    alerts_evaluate()
    events_deliver()
    assert not AlertEvent.objects.filter(kind=AlertKind.SOURCE_FAILING).exists()
    assert [m for m in smtp.messages if m["X-FinOps-Kind"] == AlertKind.SOURCE_FAILING] == []


@pytest.fixture
def failing_api_source(db, time_machine):
    time_machine.move_to(NOW, tick=False)
    account = Account.objects.create(
        name="openai-api",
        provider=Provider.objects.get(slug="openai"),
        connector="openai_api",
        sync_interval_minutes=60,
        last_success_at=NOW - dt.timedelta(hours=20),
    )
    IngestRun.objects.create(
        account=account,
        trigger=IngestRun.Trigger.SCHEDULE,
        status=IngestRun.Status.FAILED,
        error="costs page 2: HTTP 500 after 3 retries",
    )
    return account


def test_a_failing_source_emails_the_admins_not_finance(smtp, failing_api_source, ada, fiona, sam):
    alerts_evaluate()
    events_deliver()

    (event,) = AlertEvent.objects.filter(kind=AlertKind.SOURCE_FAILING)
    assert event.state == AlertEvent.State.SENT
    assert sorted(r for envelope in smtp.envelopes for r in envelope) == ["ada@example.com"]


def test_finance_who_asked_for_failing_sources_gets_them_and_can_stop(
    smtp, failing_api_source, client_as, ada, fiona, sam
):
    finance = client_as(fiona)
    page = finance.get(reverse("alert-list")).content.decode()
    assert 'data-subscribe="source_failing"' in page and "Email them to me too" in page
    assert 'data-subscribe="' not in client_as(ada).get(reverse("alert-list")).content.decode()  # admins get them
    assert 'data-subscribe="' not in client_as(sam).get(reverse("alert-list")).content.decode()  # not a member's to see
    response = finance.post(reverse("alert-mute"), {"kind": AlertKind.SOURCE_FAILING, "subscribed": "1"})
    assert response.status_code == 302
    assert "Stop these emails" in finance.get(reverse("alert-list")).content.decode()

    alerts_evaluate()
    events_deliver()

    assert sorted(r for envelope in smtp.envelopes for r in envelope) == ["ada@example.com", "fiona@example.com"]
    finance.post(reverse("alert-mute"), {"kind": AlertKind.SOURCE_FAILING, "subscribed": "0"})
    assert not fiona.alert_subscriptions.exists()
    refused = finance.post(reverse("alert-mute"), {"kind": AlertKind.SPEND_SPIKE, "subscribed": "1"})
    assert refused.status_code == 400  # only the kinds a role does not get by default can be asked for
