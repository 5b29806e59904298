"""The monthly TCO report by email (issue 14): finance users and the addresses admins add receive last month's
report on their day, once, with the PDF attached and the summary in the body, at a real SMTP server (aiosmtpd);
failures are retried; the signed link in the email unsubscribes; the subscriptions page and who may open it."""

import datetime as dt
import re
import threading
from decimal import Decimal

import pytest
from django.core import signing
from django.db import connection
from django.test import Client

from finops.core import display
from finops.core.months import next_month
from finops.forecast.projection import forecast as forecast_of
from finops.forecast.projection import history_start
from finops.models import ReportDelivery, ReportSendAttempt, ReportSnapshot, ReportSubscription, User
from finops.notify import outbox
from finops.notify.base import NotifyError
from finops.notify.report_deliveries import reports_send, unsubscribe_token
from finops.reports.selectors.tco_report import TcoReport, tco_report
from finops.reports.services.subscriptions import SubscriptionError, subscription_add
from finops.spend.selectors.spend import daily_costs, visible_spend
from tests.conftest import make_user
from tests.fakes.smtp_server import FakeSmtpServer
from tests.report_helpers import OCTOBER, two_months_of_support_usage

THIRD = dt.datetime(2026, 11, 3, 8, 0, tzinfo=dt.UTC)
State = ReportDelivery.State


@pytest.fixture(autouse=True)
def site(settings):
    settings.SITE_URL = "https://finops.example.com"


@pytest.fixture
def frozen(time_machine):
    time_machine.move_to(THIRD, tick=False)
    return time_machine


@pytest.fixture
def spend(openai_account, support_agent):
    two_months_of_support_usage(openai_account, support_agent)


def report_of(snapshot: ReportSnapshot) -> TcoReport:
    return TcoReport.from_json(snapshot.figures)


def pdf_parts(message) -> list:
    return [part for part in message.iter_attachments() if part.get_content_type() == "application/pdf"]


def text_of(message) -> str:
    return message.get_body(("plain",)).get_content()


def html_of(message) -> str:
    return message.get_body(("html",)).get_content()


# --- the email ---


def test_on_the_third_finance_and_an_added_address_receive_octobers_report_with_the_pdf_and_its_summary(
    smtp, frozen, spend, ada, fiona, sam
):
    subscription_add(email="cfo@example.com", by=ada)

    sent = reports_send()

    assert len(sent) == 2 and len(smtp.messages) == 2
    assert sorted(r for rcpts in smtp.envelopes for r in rcpts) == [
        "cfo@example.com",
        "fiona@example.com",
    ]  # not ada, not sam
    snapshot = ReportSnapshot.objects.get()  # nothing was published: the schedule published October once
    assert (snapshot.month, snapshot.version, snapshot.published_by) == (OCTOBER, 1, None)
    report = report_of(snapshot)
    live = tco_report(fiona, OCTOBER, today=THIRD.date())
    summary = report.summary
    # The figures are the report's, which are the selectors' (the page fiona opens reads the same).
    assert summary["cost"] == live.summary["cost"] == Decimal("387.50")
    assert summary["previous_cost"] == Decimal("300.00")
    total, change = display.money_exact(summary["cost"]), display.percent_change(summary["change"])
    assert (total, change) == ("$387.50", "+29.2 %")

    message = smtp.to("fiona@example.com")[0]
    # 3 November: a file source has not yet passed its lookback after October's end, so the report is provisional.
    assert snapshot.provisional
    assert message["Subject"] == "TCO report, October 2026: $387.50 (+29.2 % from last month) [provisional]"
    (pdf,) = pdf_parts(message)
    content = pdf.get_content()
    assert content.startswith(b"%PDF") and len(content) > 1000
    assert pdf.get_filename() == "tco-report-2026-10-v1.pdf"
    november = next_month(OCTOBER)
    expected = forecast_of(
        daily_costs(visible_spend(fiona), history_start(november), november),
        start=november,
        end=next_month(november),
        as_of=november,
    )  # the one forecast, from the same days
    assert summary["forecast_next"] == expected.total
    forecast = display.money_exact(summary["forecast_next"])
    for body in (text_of(message), html_of(message)):
        assert total in body and change in body and "$300.00" in body and forecast in body
        assert "Support agent" in body and "+$87.50" in body  # the biggest mover and its change
        assert "https://finops.example.com/reports/2026-10/?version=1" in body
        assert "https://finops.example.com/reports/unsubscribe/" in body
        assert "rovisional" in body
    assert "<script" not in html_of(message)
    # (A long header is folded after its name; parsers drop that fold's whitespace, hence strip().)
    unsubscribe = re.fullmatch(
        r"<(https://finops\.example\.com/reports/unsubscribe/[^>]+/)>", message["List-Unsubscribe"].strip()
    )
    assert unsubscribe and unsubscribe[1] in text_of(message)
    assert message["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    assert message["X-FinOps-Report"] == "2026-10 v1" and message["Auto-Submitted"] == "auto-generated"

    assert reports_send() == [] and len(smtp.messages) == 2, "each month is sent once"
    attempts = ReportSendAttempt.objects.values_list("delivery__subscription__email", "attempt", "status")
    assert sorted(attempts) == [("cfo@example.com", 1, "sent"), ("fiona@example.com", 1, "sent")]
    assert set(ReportDelivery.objects.values_list("state", "sent_at")) == {(State.SENT, THIRD)}


def test_the_pdf_is_laid_out_once_per_version_for_every_recipient_run_and_download(
    smtp, frozen, spend, ada, fiona, monkeypatch, client_as
):
    from finops.reports import tco_pdf

    rendered = []
    real = tco_pdf.report_pdf
    monkeypatch.setattr(tco_pdf, "report_pdf", lambda report, **kw: rendered.append(report.key) or real(report, **kw))
    for address in ("cfo@example.com", "board@example.com", "audit@example.com"):
        subscription_add(email=address, by=ada)

    assert len(reports_send()) == 4
    late = subscription_add(email="late@example.com", by=ada)  # added after the run: sent by the next one
    assert late.email == "late@example.com" and len(reports_send()) == 1
    download = client_as(fiona).get("/reports/2026-10/report.pdf?version=1")

    assert rendered == ["2026-10"]
    pdfs = {pdf_parts(m)[0].get_content() for m in smtp.messages}
    assert len(smtp.messages) == 5 and len(pdfs) == 1, "every recipient got the same PDF"
    assert download.status_code == 200 and download.content in pdfs, "the download is the PDF that was sent"


def test_a_month_already_published_is_sent_as_its_latest_version_and_a_settled_one_is_not_labelled_provisional(
    smtp, time_machine, spend, fiona
):
    from finops.reports.services.reports import report_publish

    time_machine.move_to(dt.datetime(2026, 11, 5, 9, tzinfo=dt.UTC), tick=False)
    report_publish(report=tco_report(fiona, OCTOBER, today=dt.date(2026, 11, 5)), by=fiona)
    latest = report_publish(report=tco_report(fiona, OCTOBER, today=dt.date(2026, 11, 5)), by=fiona)

    reports_send()

    assert ReportSnapshot.objects.count() == 2, "the schedule published nothing more"
    (message,) = smtp.messages
    assert not latest.provisional
    assert message["Subject"] == "TCO report, October 2026: $387.50 (+29.2 % from last month)"
    assert "rovisional" not in text_of(message)
    assert (
        message["X-FinOps-Report"] == "2026-10 v2"
        and pdf_parts(message)[0].get_filename() == "tco-report-2026-10-v2.pdf"
    )
    assert ReportDelivery.objects.get().snapshot == latest


def test_each_subscription_is_sent_on_or_after_its_own_day_of_the_month(smtp, time_machine, spend, ada, fiona):
    on_the_5th = subscription_add(email="board@example.com", day_of_month=5, by=ada)

    time_machine.move_to(dt.datetime(2026, 11, 2, 23, 59, tzinfo=dt.UTC), tick=False)
    assert reports_send() == [] and not ReportSnapshot.objects.exists(), "nobody's day yet: nothing published either"

    time_machine.move_to(dt.datetime(2026, 11, 3, 0, 0, tzinfo=dt.UTC), tick=False)
    reports_send()
    assert [rcpts for rcpts in smtp.envelopes] == [["fiona@example.com"]]  # finance's default day: the 3rd

    time_machine.move_to(dt.datetime(2026, 11, 4, 23, 0, tzinfo=dt.UTC), tick=False)
    assert reports_send() == []

    time_machine.move_to(dt.datetime(2026, 11, 5, 0, 30, tzinfo=dt.UTC), tick=False)
    reports_send()
    assert smtp.envelopes[1:] == [["board@example.com"]]
    assert ReportDelivery.objects.get(subscription=on_the_5th).month == OCTOBER
    assert ReportSnapshot.objects.count() == 1, "the board gets the version fiona got"

    time_machine.move_to(dt.datetime(2026, 11, 28, tzinfo=dt.UTC), tick=False)
    assert reports_send() == [] and len(smtp.messages) == 2

    # (At 09:00, the hour the other tests send November's report at: the same document, laid out once a run.)
    time_machine.move_to(dt.datetime(2026, 12, 3, 9, tzinfo=dt.UTC), tick=False)
    reports_send()
    assert [m["Subject"].split(":")[0] for m in smtp.messages[2:]] == ["TCO report, November 2026"]


def test_the_task_run_twice_sends_once(smtp, frozen, spend, fiona):
    from finops.tasks import send_reports

    assert send_reports.delay().get() == 1
    assert send_reports.delay().get() == 0
    assert len(smtp.messages) == 1


def test_the_beat_sends_reports_every_hour_on_the_notify_queue_expiring_within_the_hour(settings):
    entry = settings.CELERY_BEAT_SCHEDULE["send-reports"]
    assert (entry["task"], entry["schedule"]) == ("finops.tasks.send_reports", 3600.0)
    assert 0 < entry["options"]["expires"] < entry["schedule"]
    assert settings.CELERY_TASK_ROUTES["finops.tasks.send_reports"] == {"queue": "notify"}


# --- failures ---


def test_when_the_smtp_server_is_down_the_attempt_fails_and_the_report_is_sent_exactly_once_when_it_is_back(
    settings, frozen, spend, ada, fiona
):
    subscription_add(email="cfo@example.com", by=ada)
    server = FakeSmtpServer()  # nothing listening on its port yet
    server.use(settings)

    assert reports_send() == []

    deliveries = list(ReportDelivery.objects.order_by("subscription__email"))
    assert [d.state for d in deliveries] == [State.FAILED, State.FAILED] and all(d.attempts == 1 for d in deliveries)
    assert all(
        THIRD + dt.timedelta(seconds=44) <= d.next_attempt_at <= THIRD + dt.timedelta(seconds=60) for d in deliveries
    )
    failed = list(ReportSendAttempt.objects.values_list("status", "error"))
    assert len(failed) == 2 and all(status == "failed" and "SMTP unavailable" in error for status, error in failed)

    server.start()
    try:
        assert reports_send() == [], "not due before its backoff"
        frozen.shift(dt.timedelta(hours=1))  # the next hourly run
        assert len(reports_send()) == 2
        assert reports_send() == []
    finally:
        server.stop()

    assert [len(server.to(a)) for a in ("cfo@example.com", "fiona@example.com")] == [1, 1]
    delivery = ReportDelivery.objects.get(subscription__email="fiona@example.com")
    assert (delivery.state, delivery.attempts) == (State.SENT, 2)
    assert list(delivery.send_attempts.order_by("attempt").values_list("attempt", "status")) == [
        (1, "failed"),
        (2, "sent"),
    ]
    assert ReportSnapshot.objects.count() == 1, "the retry sends the version the first attempt tried"


def test_an_address_refused_for_good_gives_up_at_once_and_after_eight_failures_a_delivery_gives_up(
    settings, smtp, frozen, spend, ada, fiona
):
    subscription_add(email="nobody@example.com", by=ada)
    smtp.refuse["nobody@example.com"] = "550 5.1.1 No such user"
    smtp.refuse["fiona@example.com"] = "451 4.3.0 Mailbox busy, try later"

    reports_send()
    nobody = ReportDelivery.objects.get(subscription__email="nobody@example.com")
    assert (nobody.state, nobody.next_attempt_at) == (State.GAVE_UP, None)

    fionas = ReportDelivery.objects.get(subscription__email="fiona@example.com")
    for attempt in range(1, outbox.MAX_ATTEMPTS):
        fionas.refresh_from_db()
        assert (fionas.state, fionas.attempts) == (State.FAILED, attempt)
        frozen.move_to(fionas.next_attempt_at, tick=False)
        reports_send()
    fionas.refresh_from_db()
    assert (fionas.state, fionas.attempts) == (State.GAVE_UP, outbox.MAX_ATTEMPTS)
    assert fionas.send_attempts.filter(status="failed").count() == outbox.MAX_ATTEMPTS
    assert smtp.messages == []


def test_a_delivery_left_sending_by_a_killed_sender_is_sent_once_after_the_outbox_lease(smtp, frozen, spend, fiona):
    """The report's deliveries go through the alerts' outbox: the same claim and lease (docs/report-email.md)."""
    from finops.notify.report_deliveries import OUTBOX, deliveries_create

    deliveries_create(THIRD)
    delivery = ReportDelivery.objects.get()
    dead = OUTBOX.claim(delivery.id, state=State.PENDING, claimed_at=None, now=THIRD)  # then the sender died
    assert dead

    assert reports_send() == []
    frozen.shift(outbox.LEASE - dt.timedelta(seconds=1))
    assert reports_send() == [], "still within the dead sender's lease"
    frozen.shift(dt.timedelta(seconds=2))
    assert reports_send() == [delivery.id]
    assert reports_send() == []

    # The first sender wakes up and settles with its old claim: the delivery the second one sent stays sent.
    OUTBOX.settle(delivery.id, token=dead, now=THIRD, error=NotifyError("woke up late"))
    delivery.refresh_from_db()
    assert (delivery.state, delivery.attempts) == (State.SENT, 1)
    assert smtp.envelopes == [["fiona@example.com"]]


def test_a_finance_user_who_became_a_member_is_not_sent_the_report(smtp, frozen, spend, fiona):
    from finops.org.services.users import user_set_role

    reports_send()  # October, to fiona as finance
    user_set_role(user=fiona, role=User.Role.MEMBER)
    frozen.move_to(dt.datetime(2026, 12, 3, 9, tzinfo=dt.UTC))

    reports_send()

    assert len(smtp.messages) == 1
    assert not ReportDelivery.objects.filter(month=dt.date(2026, 11, 1)).exists()


def test_a_retry_is_not_sent_to_someone_whose_role_changed_since_and_the_attempt_says_why(
    settings, frozen, spend, fiona
):
    from finops.org.services.users import user_set_role

    FakeSmtpServer().use(settings)  # down: the first attempt fails
    reports_send()
    user_set_role(user=fiona, role=User.Role.MEMBER)
    frozen.shift(dt.timedelta(hours=1))

    with FakeSmtpServer() as smtp:
        smtp.use(settings)
        reports_send()

    assert smtp.messages == []
    delivery = ReportDelivery.objects.get()
    assert delivery.state == State.GAVE_UP
    assert "fiona may no longer read the report (member" in delivery.send_attempts.get(attempt=2).error


# --- several senders at once ---


@pytest.mark.django_db(transaction=True)
def test_four_senders_at_once_publish_one_version_and_send_each_subscriber_one_email(
    reseeded, smtp, time_machine, openai_account, support_agent
):
    two_months_of_support_usage(openai_account, support_agent)
    make_user("fiona", User.Role.FINANCE)
    make_user("fred", User.Role.FINANCE)
    ReportSubscription.objects.create(email="cfo@example.com")
    time_machine.move_to(THIRD, tick=False)
    start, results, errors = threading.Barrier(4), [], []

    def sender():
        try:
            start.wait()
            results.append(reports_send())
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)
        finally:
            connection.close()  # each thread has its own database connection

    threads = [threading.Thread(target=sender) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)

    assert errors == []
    assert ReportSnapshot.objects.count() == 1, "one version published, however many senders raced"
    assert sorted(r for rcpts in smtp.envelopes for r in rcpts) == [
        "cfo@example.com",
        "fiona@example.com",
        "fred@example.com",
    ]
    assert len(results) == 4 and sum(map(len, results)) == 3, "each delivery sent by exactly one of the senders"
    assert ReportSendAttempt.objects.count() == 3 and ReportDelivery.objects.filter(state=State.SENT).count() == 3


# --- unsubscribing ---


def test_the_emails_unsubscribe_link_confirms_then_unsubscribes_and_nothing_more_is_sent(
    smtp, frozen, spend, ada, fiona
):
    subscription_add(email="cfo@example.com", by=ada)
    reports_send()
    link = re.fullmatch(
        r"<https://finops\.example\.com(/[^>]+)>", smtp.to("fiona@example.com")[0]["List-Unsubscribe"].strip()
    )[1]
    anonymous = Client()

    confirm = anonymous.get(link)

    assert confirm.status_code == 200
    assert "Stop emailing the monthly TCO report to <strong>fiona@example.com</strong>?" in confirm.content.decode()
    assert ReportSubscription.objects.get(email="fiona@example.com").active, "opening the link changes nothing"

    done = anonymous.post(link)

    assert done.status_code == 200 and "is unsubscribed" in done.content.decode()
    fionas = ReportSubscription.objects.get(email="fiona@example.com")
    assert not fionas.active and fionas.unsubscribed_at == THIRD

    frozen.move_to(dt.datetime(2026, 12, 3, 9, tzinfo=dt.UTC))
    reports_send()
    assert [m["Subject"].split(":")[0] for m in smtp.to("fiona@example.com")] == ["TCO report, October 2026"]
    assert [m["Subject"].split(":")[0] for m in smtp.to("cfo@example.com")] == [
        "TCO report, October 2026",
        "TCO report, November 2026",
    ]
    assert not ReportSubscription.objects.get(email="fiona@example.com").active, "the default never resubscribes her"


def test_a_mail_clients_one_click_post_unsubscribes_without_a_csrf_token(smtp, frozen, spend, fiona):
    reports_send()
    link = smtp.messages[0]["List-Unsubscribe"].strip().strip("<>").removeprefix("https://finops.example.com")

    response = Client(enforce_csrf_checks=True).post(
        link, "List-Unsubscribe=One-Click", content_type="application/x-www-form-urlencoded"
    )

    assert response.status_code == 200
    assert not ReportSubscription.objects.get(email="fiona@example.com").active


def test_a_tampered_or_stale_unsubscribe_link_answers_400_with_a_page_saying_so(fiona, ada):
    subscription = subscription_add(email="cfo@example.com", by=ada)
    token = unsubscribe_token(subscription)
    anonymous = Client()

    value, stamp, signature = token.split(":")
    tampered = anonymous.post(f"/reports/unsubscribe/{value}:{stamp}:{signature[:-2]}xx/")
    another_subscription = anonymous.post(
        f"/reports/unsubscribe/{subscription.id + 1}{value[len(str(subscription.id)) :]}:{stamp}:{signature}/"
    )
    other_salt = anonymous.get(f"/reports/unsubscribe/{signing.Signer(salt='elsewhere').sign(value)}/")

    for response in (tampered, another_subscription, other_salt):
        assert response.status_code == 400
        assert "This unsubscribe link is not valid" in response.content.decode()
    assert ReportSubscription.objects.get(email="cfo@example.com").active

    subscription.email = "finance-team@example.com"  # the address changed since that email was sent
    subscription.save()
    stale = anonymous.post(f"/reports/unsubscribe/{token}/")
    assert stale.status_code == 400 and "no longer matches a subscription" in stale.content.decode()
    assert ReportSubscription.objects.get(email="finance-team@example.com").active


# --- subscriptions: the service and the page ---


def test_finance_users_are_subscribed_by_default_at_the_send_but_never_again_once_unsubscribed(
    smtp, frozen, spend, fiona, sam
):
    assert not ReportSubscription.objects.exists()
    reports_send()
    fionas = ReportSubscription.objects.get()
    assert (fionas.user, fionas.email, fionas.day_of_month, fionas.active) == (fiona, "fiona@example.com", 3, True)

    make_user("fred", User.Role.FINANCE)  # created after the send: subscribed at the next one
    fionas.active = False
    fionas.save()
    frozen.move_to(dt.datetime(2026, 12, 3, 9, tzinfo=dt.UTC))
    reports_send()
    assert [rcpts for rcpts in smtp.envelopes] == [["fiona@example.com"], ["fred@example.com"]]


def test_the_service_refuses_a_bad_address_a_duplicate_a_members_address_and_a_day_outside_1_to_28(ada, fiona, sam):
    subscription_add(email="cfo@Example.COM", by=ada)
    cases = {
        "not-an-address": "is not an email address",
        "CFO@example.com": "already subscribed",
        "sam@example.com": "only admins and finance receive it",
    }
    for email, words in cases.items():
        with pytest.raises(SubscriptionError, match=words):
            subscription_add(email=email, by=ada)
    for day in (0, 29, "third"):
        with pytest.raises(SubscriptionError, match="1 to 28|from 1 to 28"):
            subscription_add(email="board@example.com", day_of_month=day, by=ada)
    assert list(ReportSubscription.objects.values_list("email", flat=True)) == ["cfo@example.com"]


def test_members_cannot_open_the_subscriptions_page(client_as, sam):
    assert client_as(sam).get("/reports/subscriptions/").status_code == 404
    assert (
        client_as(sam)
        .post("/reports/subscriptions/", {"action": "add", "email": "x@example.com", "day_of_month": 3})
        .status_code
        == 404
    )
    assert not ReportSubscription.objects.exists()


def test_an_admin_adds_an_address_changes_its_day_and_removes_it_with_clear_errors(client_as, ada, fiona):
    admin = client_as(ada)

    page = admin.get("/reports/subscriptions/").content.decode()
    assert "Subscribed by default (finance)" in page and "fiona@example.com" in page
    assert "The UTC day of each month the previous month&#x27;s report is emailed" in page  # the form's help

    added = admin.post(
        "/reports/subscriptions/", {"action": "add", "email": "cfo@example.com", "day_of_month": 7}, follow=True
    )
    assert "cfo@example.com will receive the report on day 7 of each month." in added.content.decode()
    cfo = ReportSubscription.objects.get(email="cfo@example.com")
    assert (cfo.day_of_month, cfo.added_by, cfo.active) == (7, ada, True)

    duplicate = admin.post("/reports/subscriptions/", {"action": "add", "email": "CFO@example.com", "day_of_month": 3})
    assert duplicate.status_code == 400 and "cfo@example.com is already subscribed." in duplicate.content.decode()
    bad = admin.post("/reports/subscriptions/", {"action": "add", "email": "cfo at example", "day_of_month": 3})
    assert bad.status_code == 400 and "is not an email address" in bad.content.decode()
    late = admin.post("/reports/subscriptions/", {"action": "add", "email": "x@example.com", "day_of_month": 31})
    assert late.status_code == 400 and "must be from 1 to 28" in late.content.decode()

    admin.post("/reports/subscriptions/", {"action": "day", "id": cfo.id, "day_of_month": 12})
    admin.post("/reports/subscriptions/", {"action": "deactivate", "id": cfo.id})
    cfo.refresh_from_db()
    assert (cfo.day_of_month, cfo.active) == (12, False)
    admin.post("/reports/subscriptions/", {"action": "remove", "id": cfo.id})
    assert not ReportSubscription.objects.filter(email="cfo@example.com").exists()


def test_a_finance_user_sees_and_changes_only_their_own_subscription(client_as, ada, fiona):
    other = subscription_add(email="cfo@example.com", by=ada)
    finance = client_as(fiona)

    page = finance.get("/reports/subscriptions/").content.decode()
    assert "fiona@example.com" in page and "cfo@example.com" not in page and "Add an address" not in page

    finance.post("/reports/subscriptions/", {"action": "mine", "change": "day", "day_of_month": 10})
    own = ReportSubscription.objects.get(user=fiona)
    assert (own.email, own.day_of_month, own.active) == ("fiona@example.com", 10, True)

    assert finance.post("/reports/subscriptions/", {"action": "deactivate", "id": other.id}).status_code == 404
    assert (
        finance.post(
            "/reports/subscriptions/", {"action": "add", "email": "me2@example.com", "day_of_month": 3}
        ).status_code
        == 404
    )
    finance.post("/reports/subscriptions/", {"action": "deactivate", "id": own.id})
    own.refresh_from_db()
    other.refresh_from_db()
    assert not own.active and other.active
    assert finance.post("/reports/subscriptions/", {"action": "remove", "id": own.id}).status_code == 404
    finance.post("/reports/subscriptions/", {"action": "activate", "id": own.id})
    own.refresh_from_db()
    assert own.active, "she subscribed again herself"


def test_a_finance_users_subscription_follows_their_new_address_and_an_address_added_earlier_becomes_theirs(
    smtp, frozen, spend, ada
):
    subscription_add(email="freda@example.com", day_of_month=1, by=ada)  # before freda had an account
    freda = make_user("freda", User.Role.FINANCE)
    fiona = make_user("fiona", User.Role.FINANCE)
    reports_send()
    fiona.email = "fiona.new@example.com"
    fiona.save()
    frozen.move_to(dt.datetime(2026, 12, 3, 9, tzinfo=dt.UTC))

    reports_send()

    assert ReportSubscription.objects.get(email="freda@example.com").user == freda
    assert ReportSubscription.objects.get(user=fiona).email == "fiona.new@example.com"
    assert [m["Subject"].split(":")[0] for m in smtp.to("fiona.new@example.com")] == ["TCO report, November 2026"]
    assert ReportSubscription.objects.count() == 2
