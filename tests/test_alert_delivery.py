"""Alert delivery (issue 10): each raised event is claimed once and sent per channel to its recipients, by a real
SMTP server and a real HTTP receiver; every attempt leaves a Notification row; failures are retried with backoff
and block no other alert; mutes are honoured and recorded."""

import datetime as dt
import hashlib
import hmac
import io
import ipaddress
import json
import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection

from finops.alerts.events import event_raise
from finops.alerts.services.channels import cap_channels_sync
from finops.core import crypto
from finops.models import AlertEvent, AlertKind, AlertMute, AttributionRule, Cap, Notification, Team, User
from finops.notify import outbox
from finops.notify.deliver import event_claim, events_deliver
from finops.notify.recipients import event_addresses
from finops.spend.services.attribution import history_reattribute
from ingest.services import usage_file_import
from tests.conftest import make_user, stored_cap
from tests.fakes.smtp_server import FakeSmtpServer
from tests.fakes.webhook_server import FakeWebhookServer

ROOT = Path(__file__).resolve().parent.parent
NOW = dt.datetime(2026, 11, 22, 12, tzinfo=dt.UTC)
NOVEMBER = dt.date(2026, 11, 1)
State = AlertEvent.State

DETAILS = {
    "cap": "Support November",
    "scope": "Team: Support Platform",
    "period": "November 2026",
    "period_start": "2026-11-01",
    "period_end": "2026-12-01",
    "amount": "5000.00",
    "spent": "4100.00",
    "percent": "82.0",
    "unpriced_tokens": 2500000,
    "forecast": "6150.50",
    "forecast_low": "5900.00",
    "forecast_high": "6400.25",
    "forecast_percent": "123.0",
    "forecast_method": "by day of week with trend, from the last 56 days",
    "daily_rate": "256.25",
    "days_left": 8,
    "status": "warning",
    "currency": "USD",
    "drivers": {
        "workloads": [
            {"name": "Support agent", "cost": "3900.00", "unpriced_tokens": 0},
            {"name": "Ticket router", "cost": "200.00", "unpriced_tokens": 2500000},
        ],
        "models": [{"name": "GPT-5 mini", "model": "gpt-5-mini", "cost": "4100.00", "unpriced_tokens": 0}],
    },
}
TITLE = "Support Platform at 82% of its $5,000 November cap"


@pytest.fixture
def site(settings):
    settings.SITE_URL = "https://finops.example.com"


@pytest.fixture
def frozen(time_machine):
    time_machine.move_to(NOW, tick=False)
    return time_machine


@pytest.fixture
def support_cap(support_team):
    return stored_cap(
        name="Support November",
        scope="team",
        team=support_team,
        amount=Decimal("5000"),
        recipients=["role:team_leads", "role:finance"],
    )


def raise_cap_event(cap, threshold=80, title=TITLE, **fields) -> AlertEvent:
    return event_raise(
        kind=AlertKind.CAP_THRESHOLD,
        subject=f"cap:{cap.id}",
        period_start=NOVEMBER,
        threshold=threshold,
        title=title,
        details=DETAILS,
        cap=cap,
        team=cap.owning_team,
        **fields,
    )


def notifications(event) -> list[tuple]:
    return list(event.notifications.order_by("id").values_list("recipient", "status", "attempt"))


# --- email ---


def test_a_cap_alert_is_emailed_to_the_team_lead_and_finance_with_its_figures_and_a_link_to_the_cap(
    smtp, site, frozen, support_cap, sam, fiona, tess
):
    event = raise_cap_event(support_cap)

    assert events_deliver() == 1

    event.refresh_from_db()
    assert event.state == State.SENT and event.sent_at == NOW and event.attempts == 1
    assert sorted(r for m in smtp.envelopes for r in m) == ["fiona@example.com", "sam@example.com"]  # not tess
    message = smtp.to("sam@example.com")[0]
    assert message["Subject"] == "[FinOps] Support Platform at 82% of its $5,000 November cap"
    text = message.get_body(("plain",)).get_content()
    html = message.get_body(("html",)).get_content()
    for part in (text, html):
        assert "$4,100.00 of $5,000.00 (82%)" in part
        assert "$6,150.50 (range $5,900.00–$6,400.25), 123% of the cap" in part
        assert "by day of week with trend, from the last 56 days" in part and "$256.25 a day" in part
        assert "8 days left" in part
        assert "2.5M tokens" in part and "no known price" in part  # unpriced usage is a warning, never $0
        assert "Support agent" in part and "$3,900.00" in part and "GPT-5 mini" in part
        assert f"https://finops.example.com/caps/{support_cap.id}/" in part
    assert 'href="https://finops.example.com/caps/' in html and "<script" not in html and "http://" not in html
    assert notifications(event) == [("sam@example.com", "sent", 1), ("fiona@example.com", "sent", 1)]


def test_an_alert_without_a_cap_says_why_in_words_and_links_to_the_page_that_explains_it(
    smtp, site, frozen, ada, fiona, sam
):
    event = event_raise(
        kind=AlertKind.SPEND_SPIKE,
        subject="workload:none",
        period_start=dt.date(2026, 11, 21),
        title="Unattributed spent $80.00 on 21 November 2026, 6.5× its usual $12.30 a day",
        details={
            "day": "2026-11-21",
            "cost": "80.00",
            "baseline_median": "12.30",
            "spread": "1.845",
            "k": "4",
            "threshold": "19.683",
            "min_change": "50.00",
            "ratio": "6.5",
            "days_with_spend": 28,
            "method": "median of the previous 28 days",
            "currency": "USD",
            "workload": "Unattributed",
            "team": "",
        },
    )

    events_deliver()

    assert sorted(r for m in smtp.envelopes for r in m) == ["ada@example.com", "fiona@example.com"]  # org-wide: not sam
    message = smtp.messages[0]
    # A long non-ASCII subject is folded after "Subject:" by Python's email package; clients drop that fold's space.
    assert (
        message["Subject"].strip()
        == "[FinOps] Unattributed spent $80.00 on 21 November 2026, 6.5× its usual $12.30 a day"
    )
    text = message.get_body(("plain",)).get_content()
    assert "Unattributed spent $80.00 on 21 November 2026, 6.5 times its usual $12.30 a day" in text
    assert "Spike above: $19.68" in text and "19.683" not in text
    assert "https://finops.example.com/unattributed/?start=2026-11-21&end=2026-11-22" in text
    event.refresh_from_db()
    assert event.state == State.SENT


def test_when_the_smtp_server_is_down_the_alert_fails_and_is_sent_exactly_once_when_it_is_back(
    settings, frozen, support_cap, sam, fiona, search_team, tess
):
    server = FakeSmtpServer()  # a free port with nothing listening
    server.use(settings)
    support = raise_cap_event(support_cap)
    search_cap = stored_cap(
        name="Search November", scope="team", team=search_team, amount=Decimal("900"), recipients=["role:team_leads"]
    )
    search = raise_cap_event(search_cap, title="Search at 91% of its $900 November cap")

    assert events_deliver() == 0

    for event in (support, search):  # the first failure did not stop the loop: both were tried
        event.refresh_from_db()
        assert event.state == State.FAILED and event.attempts == 1
        assert NOW + dt.timedelta(seconds=44) <= event.next_attempt_at <= NOW + dt.timedelta(seconds=60)
    assert event.notifications.get().status == Notification.Status.FAILED
    assert notifications(support) == [("sam@example.com", "failed", 1), ("fiona@example.com", "failed", 1)]
    assert all("SMTP unavailable: ConnectionRefusedError" in n.error for n in support.notifications.all())

    server.start()
    try:
        assert events_deliver() == 0, "not due before its backoff"
        frozen.shift(dt.timedelta(seconds=61))
        assert events_deliver() == 2
        assert events_deliver() == 0
    finally:
        server.stop()

    assert [len(server.to(f"{name}@example.com")) for name in ("sam", "fiona", "tess")] == [1, 1, 1]
    support.refresh_from_db()
    assert support.state == State.SENT and support.attempts == 2
    assert notifications(support) == [
        ("sam@example.com", "failed", 1),
        ("fiona@example.com", "failed", 1),
        ("sam@example.com", "sent", 2),
        ("fiona@example.com", "sent", 2),
    ]


def test_one_recipient_refused_for_now_blocks_no_other_alert_and_is_not_sent_twice(
    smtp, frozen, support_cap, sam, fiona, search_team, tess
):
    smtp.refuse["fiona@example.com"] = "451 4.3.0 Mailbox busy, try later"
    support = raise_cap_event(support_cap)  # to sam and fiona
    search_cap = stored_cap(
        name="Search November", scope="team", team=search_team, amount=Decimal("900"), recipients=["role:team_leads"]
    )
    search = raise_cap_event(search_cap, title="Search at 91% of its $900 November cap")

    assert events_deliver() == 1

    search.refresh_from_db()
    support.refresh_from_db()
    assert search.state == State.SENT and len(smtp.to("tess@example.com")) == 1
    assert support.state == State.FAILED
    assert "451" in support.notifications.get(status="failed").error

    smtp.refuse.clear()
    frozen.shift(dt.timedelta(minutes=2))
    assert events_deliver() == 1
    assert len(smtp.to("sam@example.com")) == 1, "sam was told on the first attempt and is not told again"
    assert len(smtp.to("fiona@example.com")) == 1
    assert notifications(support) == [
        ("sam@example.com", "sent", 1),
        ("fiona@example.com", "failed", 1),
        ("fiona@example.com", "sent", 2),
    ]


def test_an_address_refused_for_good_gives_up_at_once(smtp, frozen, support_cap, sam):
    support_cap.recipients = ["nobody@example.com"]
    support_cap.save()
    cap_channels_sync(support_cap)  # what the cap service does on a change
    smtp.refuse["nobody@example.com"] = "550 5.1.1 No such user"
    event = raise_cap_event(support_cap)

    events_deliver()

    event.refresh_from_db()
    assert event.state == State.GAVE_UP and event.next_attempt_at is None


def test_after_eight_failed_attempts_the_alert_gives_up(settings, frozen, support_cap, sam):
    FakeSmtpServer().use(settings)  # never up
    event = raise_cap_event(support_cap)
    for attempt in range(1, outbox.MAX_ATTEMPTS + 1):
        events_deliver()
        event.refresh_from_db()
        assert event.attempts == attempt
        if attempt < outbox.MAX_ATTEMPTS:
            assert event.state == State.FAILED
            frozen.move_to(event.next_attempt_at, tick=False)
    assert event.state == State.GAVE_UP and event.next_attempt_at is None
    assert event.notifications.filter(status="failed").count() == outbox.MAX_ATTEMPTS


def test_backoff_doubles_with_jitter_and_stays_under_an_hour():
    for attempt in range(1, 12):
        seconds = outbox.backoff(attempt).total_seconds()
        expected = min(3600, 60 * 2 ** (attempt - 1))
        assert 0.75 * expected <= seconds <= expected


# --- claims ---


def test_only_one_of_two_workers_claiming_the_same_event_wins(frozen, support_cap):
    event = raise_cap_event(support_cap)
    first = event_claim(event.id, state=State.PENDING, claimed_at=None, now=NOW)
    second = event_claim(event.id, state=State.PENDING, claimed_at=None, now=NOW)
    assert first and second is None
    event.refresh_from_db()
    assert event.state == State.SENDING and event.claim_token == first


def test_an_alert_left_sending_by_a_killed_worker_is_sent_after_the_lease(smtp, frozen, support_cap, sam):
    event = raise_cap_event(support_cap)
    assert event_claim(event.id, state=State.PENDING, claimed_at=None, now=NOW)  # then the worker died

    assert events_deliver() == 0
    frozen.shift(outbox.LEASE - dt.timedelta(seconds=1))
    assert events_deliver() == 0, "still within the dead worker's lease"
    frozen.shift(dt.timedelta(seconds=2))
    assert events_deliver() == 1
    assert len(smtp.to("sam@example.com")) == 1


# --- recipients and mutes ---


def test_a_user_who_muted_the_kind_gets_no_email_and_a_skipped_notification_says_so(
    smtp, frozen, support_cap, sam, fiona
):
    AlertMute.objects.create(user=fiona, kind=AlertKind.CAP_THRESHOLD)
    event = raise_cap_event(support_cap)

    events_deliver()

    assert smtp.to("fiona@example.com") == [] and len(smtp.to("sam@example.com")) == 1
    assert notifications(event) == [("sam@example.com", "sent", 1), ("fiona@example.com", "skipped", 1)]
    event.refresh_from_db()
    assert event.state == State.SENT


def test_team_leads_of_a_cap_without_a_team_are_the_admins_and_addresses_are_kept_once(ada, fiona, sam, support_team):
    org_cap = stored_cap(
        name="Everything",
        scope="org",
        amount=Decimal("10000"),
        recipients=["role:team_leads", "role:finance", "cfo@example.com", "FIONA@example.com"],
    )
    event = raise_cap_event(org_cap)
    assert event_addresses(event) == ["ada@example.com", "fiona@example.com", "cfo@example.com"]

    member = make_user("mo", User.Role.MEMBER, team=support_team, team_role="member")  # not a lead
    team_event = event_raise(
        kind=AlertKind.UNPRICED_USAGE,
        subject="model:acme-ft",
        period_start=NOVEMBER,
        title="Unpriced usage of acme-ft",
        details={},
        team=support_team,
    )
    assert event_addresses(team_event) == ["sam@example.com"] and member.email not in event_addresses(team_event)


# --- webhook ---


@pytest.fixture
def local_receivers(settings):
    """The fake receivers listen on 127.0.0.1, a loopback address the egress policy refuses: allow it, as an admin
    would for an internal receiver (tests/test_egress.py proves the refusal without it)."""
    settings.FINOPS_EGRESS_ALLOWED_NETWORKS = [ipaddress.ip_network("127.0.0.0/8")]


def _webhook_cap(team: Team, url: str) -> Cap:
    cap = stored_cap(
        name="Hooked",
        scope="team",
        team=team,
        amount=Decimal("5000"),
        recipients=[],
        webhook_url=url,
        webhook_secret_ciphertext=crypto.encrypt("whsec-test-1234567890"),
    )
    cap_channels_sync(cap)  # what the migration to channels (0034) does with such a row
    return cap


def test_a_webhook_receives_the_event_as_json_signed_with_the_caps_secret(site, frozen, support_team, local_receivers):
    with FakeWebhookServer() as hook:
        cap = _webhook_cap(support_team, hook.url + "/hooks/finops?token=abc")
        event = raise_cap_event(cap)
        assert events_deliver() == 1

    ((path, headers, body),) = hook.received
    assert path == "/hooks/finops?token=abc" and headers["Content-Type"] == "application/json"
    expected = hmac.new(b"whsec-test-1234567890", body, hashlib.sha256).hexdigest()
    assert headers["X-FinOps-Signature"] == f"sha256={expected}"
    payload = json.loads(body)
    assert payload["id"] == event.id and payload["kind"] == "cap_threshold" and payload["title"] == TITLE
    assert payload["details"]["spent"] == "4100.00" and payload["link"] == f"https://finops.example.com/caps/{cap.id}/"
    assert str(payload["timestamp"]) == headers["X-FinOps-Timestamp"] == str(int(NOW.timestamp()))
    # The URL (it may carry a token) is never recorded whole.
    assert notifications(event) == [(hook.url + "/…", "sent", 1)]


def test_a_webhook_answering_500_is_retried_and_sent_on_the_next_attempt(frozen, support_team, local_receivers):
    with FakeWebhookServer(statuses=[500, 204]) as hook:
        cap = _webhook_cap(support_team, hook.url + "/hook")
        event = raise_cap_event(cap)
        events_deliver()
        event.refresh_from_db()
        assert event.state == State.FAILED and "HTTP 500" in event.notifications.get().error
        frozen.shift(dt.timedelta(minutes=2))
        events_deliver()

    event.refresh_from_db()
    assert event.state == State.SENT and len(hook.received) == 2
    assert [n[1:] for n in notifications(event)] == [("failed", 1), ("sent", 2)]


def test_a_webhook_refusing_the_payload_with_a_400_is_not_retried(frozen, support_team, local_receivers):
    with FakeWebhookServer(statuses=[400]) as hook:
        event = raise_cap_event(_webhook_cap(support_team, hook.url + "/hook"))
        events_deliver()
    event.refresh_from_db()
    assert event.state == State.GAVE_UP and len(hook.received) == 1


# --- evaluation and delivery end to end: the command, and several processes at once ---


def _usage_in_support(openai_account, support_agent):
    """November 1–21 at $10 a day for Support (no cap exists yet, so nothing is raised while importing)."""
    rows = ["day,model,input_tokens,output_tokens,cost,project"]
    rows += [f"2026-11-{day:02d},gpt-5-mini,1000000,0,10,support" for day in range(1, 22)]
    run = usage_file_import(account=openai_account, stream=io.BytesIO("\n".join(rows).encode()), file_name="u.csv")
    assert run.status == "succeeded", run.error
    AttributionRule.objects.create(workload=support_agent, priority=1, project="support")
    history_reattribute()


def test_the_command_prints_what_it_raised_and_sent(smtp, openai_account, support_agent, sam):
    _usage_in_support(openai_account, support_agent)
    cap = stored_cap(
        name="Support November",
        scope="team",
        team=support_agent.team,
        amount=Decimal("250"),
        recipients=["role:team_leads"],
        alert_on_forecast=False,
    )
    out = io.StringIO()

    call_command("evaluate_alerts", "--today", "2026-11-22", stdout=out)

    printed = out.getvalue()
    sent = AlertEvent.objects.get(cap=cap, threshold=80)
    assert "Raised 2 event(s)." in printed and f"raised #{sent.id} cap_threshold: Support Platform at 84%" in printed
    assert "Sent 1 event(s)." in printed and f"sent #{sent.id} cap_threshold to 1 recipient(s)" in printed
    assert [m["Subject"] for m in smtp.messages] == ["[FinOps] Support Platform at 84% of its $250 November cap"]

    again = io.StringIO()
    call_command("evaluate_alerts", "--today", "2026-11-22", stdout=again)
    assert "Raised 0 event(s)." in again.getvalue() and "Sent 0 event(s)." in again.getvalue()
    assert len(smtp.messages) == 1


def _child_env(smtp: FakeSmtpServer) -> dict:
    db = connection.settings_dict
    url = (
        f"postgres://{db['USER']}:{db['PASSWORD'] or ''}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
    )
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "finops.settings_test",
        "DATABASE_URL": url,
        "EMAIL_URL": smtp.url,
        "CELERY_EAGER": "1",
        "SITE_URL": "https://finops.example.com",
    }


@pytest.mark.slow  # left out of make test-fast (tests/conftest.py says why)
@pytest.mark.django_db(transaction=True)
def test_several_processes_evaluating_and_delivering_the_same_caps_at_once_send_each_alert_once(
    reseeded, smtp, openai_account, support_agent, sam, fiona
):
    _usage_in_support(openai_account, support_agent)
    caps = [
        stored_cap(
            name=f"Support {amount}",
            scope="team",
            team=support_agent.team,
            amount=Decimal(amount),
            recipients=["role:team_leads", "role:finance"],
        )
        for amount in ("250", "400", "2000")
    ]
    env = _child_env(smtp)

    # --skip-checks: Django's system checks cost each child ~2.5 s of CPU here and are not what this test is about
    # (`manage.py check` runs them); each child still evaluates and delivers in a process of its own.
    children = [
        subprocess.Popen(
            [sys.executable, "manage.py", "evaluate_alerts", "--skip-checks", "--today", "2026-11-22"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    outputs = [child.communicate(timeout=120) for child in children]
    assert all(child.returncode == 0 for child in children), [err for _out, err in outputs]

    events = AlertEvent.objects.filter(cap__in=caps)
    sent = list(events.filter(state=State.SENT))
    assert sent and set(events.values_list("state", flat=True)) <= {State.SENT, State.SUPERSEDED}
    # Each event once: one kind × cap × threshold, and one email per event and recipient, whoever sent it.
    told = sorted((m["X-FinOps-Event"], rcpt) for m, rcpts in zip(smtp.messages, smtp.envelopes) for rcpt in rcpts)
    expected = sorted((str(e.id), address) for e in sent for address in ("fiona@example.com", "sam@example.com"))
    assert told == expected
    assert Notification.objects.filter(event__in=events, status="sent").count() == len(expected)
    assert events.filter(kind=AlertKind.CAP_THRESHOLD, cap=caps[0], threshold=80).exists()
    assert sum("Raised" in out for out, _err in outputs) == 4


def test_a_cap_email_without_enough_history_says_so_instead_of_a_forecast(smtp, frozen, support_cap, sam):
    details = {
        **DETAILS,
        "forecast": "",
        "forecast_percent": "",
        "daily_rate": "",
        "forecast_method": "not enough history",
    }
    event_raise(
        kind=AlertKind.CAP_THRESHOLD,
        subject=f"cap:{support_cap.id}",
        period_start=NOVEMBER,
        threshold=80,
        title=TITLE,
        details=details,
        cap=support_cap,
        team=support_cap.owning_team,
    )

    events_deliver()

    text = smtp.messages[0].get_body(("plain",)).get_content()
    assert "Forecast for the period: not enough history" in text and "a day" not in text and "—" not in text


def test_with_a_broker_the_command_queues_the_delivery_on_the_notify_queue(
    settings, openai_account, support_agent, sam
):
    import redis

    _usage_in_support(openai_account, support_agent)
    stored_cap(
        name="Support November",
        scope="team",
        team=support_agent.team,
        amount=Decimal("250"),
        recipients=["role:team_leads"],
        alert_on_forecast=False,
    )
    broker = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    broker.delete("notify")
    settings.CELERY_TASK_ALWAYS_EAGER = False  # as with REDIS_URL set outside tests (the Celery app reads it)
    try:
        out = io.StringIO()
        call_command("evaluate_alerts", "--today", "2026-11-22", stdout=out)
    finally:
        queued = [json.loads(raw) for raw in broker.lrange("notify", 0, -1)]
        broker.delete("notify")

    assert "Raised 2 event(s)." in out.getvalue() and "Delivery queued on the notify queue" in out.getvalue()
    assert [message["headers"]["task"] for message in queued] == ["finops.tasks.deliver_alerts"]
    assert queued[0]["headers"]["expires"], "a queued delivery expires rather than piling up"
    assert AlertEvent.objects.filter(state=State.PENDING).count() == 1, "nothing was sent by the command itself"


def test_the_beat_evaluates_every_15_minutes_and_retries_deliveries_every_minute_each_expiring_within_its_period(
    settings,
):
    beat = settings.CELERY_BEAT_SCHEDULE
    assert (beat["evaluate-alerts"]["task"], beat["evaluate-alerts"]["schedule"]) == (
        "finops.tasks.evaluate_alerts",
        900.0,
    )
    assert (beat["deliver-alerts"]["task"], beat["deliver-alerts"]["schedule"]) == ("finops.tasks.deliver_alerts", 60.0)
    assert all(0 < entry["options"]["expires"] < entry["schedule"] for entry in beat.values())
    assert settings.CELERY_TASK_ROUTES["finops.tasks.deliver_alerts"] == {"queue": "notify"}


def test_the_evaluation_task_raises_and_then_sends_through_the_delivery_task(
    smtp, openai_account, support_agent, sam, time_machine
):
    from finops.tasks import evaluate_alerts

    time_machine.move_to(dt.datetime(2026, 11, 22, 8, tzinfo=dt.UTC), tick=False)
    _usage_in_support(openai_account, support_agent)
    stored_cap(
        name="Support November",
        scope="team",
        team=support_agent.team,
        amount=Decimal("250"),
        recipients=["role:team_leads"],
        alert_on_forecast=False,
    )

    assert evaluate_alerts.delay().get() == 2
    assert [m["Subject"] for m in smtp.messages] == ["[FinOps] Support Platform at 84% of its $250 November cap"]
