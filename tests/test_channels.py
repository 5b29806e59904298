"""Channels as rows (issue 25): every alert kind reaches an email, a webhook, a Slack and a Teams channel once under
two workers, through a real SMTP server and real local HTTP receivers; Slack and Teams payloads follow the shapes
their incoming webhooks document (tests/fixtures/slack, tests/fixtures/teams); the migration moves caps' recipients
and webhooks into channels with the same deliveries; a channel's URL is checked at save and at send; members see
no channel; "send a test message" reaches the channel."""

import hashlib
import hmac
import importlib
import io
import ipaddress
import json
import threading
from collections import Counter
from decimal import Decimal
from pathlib import Path

import pytest
from django.apps import apps as django_apps
from django.core.exceptions import ValidationError
from django.db import connection

from finops.alerts.services.channels import channel_save, channel_shown, channel_test_send
from finops.core import crypto
from finops.models import AlertEvent, AlertKind, Cap, Channel, ChannelKind, Notification
from finops.notify.base import NotifyError
from finops.notify.deliver import events_deliver
from finops.notify.recipients import event_targets
from finops.notify.slack import slack_payload
from finops.notify.teams import teams_payload
from finops.notify.webhook import webhook_label
from tests.fakes.webhook_server import FakeWebhookServer
from tests.test_alert_emails import ALL_KINDS, smtp, world  # noqa: F401  the world that raises every kind

FIXTURES = Path(__file__).resolve().parent / "fixtures"
SECRET = "whsec-channel-1234567890"


@pytest.fixture
def local_receivers(settings):
    """The fake receivers listen on 127.0.0.1, which the egress policy refuses: allowed here, as an admin would for
    an internal receiver (test_a_channel_url_is_refused_at_save_and_at_send proves the refusal)."""
    settings.FINOPS_EGRESS_ALLOWED_NETWORKS = [ipaddress.ip_network("127.0.0.0/8")]


def conforms(ours, documented, where="payload") -> None:
    """`ours` uses only keys the documented example has, with the same types; list items match a documented item
    of the same "type"."""
    if isinstance(documented, dict):
        assert isinstance(ours, dict), where
        extra = set(ours) - {k for k in documented if not k.startswith("_")}
        assert not extra, f"{where}: keys the documented shape does not have: {extra}"
        for key, value in ours.items():
            conforms(value, documented[key], f"{where}.{key}")
    elif isinstance(documented, list):
        assert isinstance(ours, list) and ours, where
        for n, item in enumerate(ours):
            kinds = [d for d in documented if not isinstance(d, dict) or d.get("type") == item.get("type")]
            assert kinds, f"{where}[{n}]: no documented item of type {item.get('type')!r}"
            failures = []
            for candidate in kinds:
                try:
                    conforms(item, candidate, f"{where}[{n}]")
                    break
                except AssertionError as exc:
                    failures.append(str(exc))
            else:
                raise AssertionError("; ".join(failures))
    elif documented is None:
        assert ours is None, where
    else:
        assert type(ours) is type(documented), f"{where}: {type(ours).__name__}, documented {type(documented).__name__}"


def test_slack_and_teams_payloads_follow_their_documented_shapes():
    link = "https://finops.example.com/caps/3/"
    title = "Support <Platform> & co at 82% of its $5,000 November cap " + "x" * 200
    slack = slack_payload(title=title, kind_label="Cap threshold crossed", link=link)
    conforms(slack, json.loads((FIXTURES / "slack/incoming_webhook_block_kit.json").read_text()))
    assert len(slack["blocks"][0]["text"]["text"]) <= 150  # Block Kit's header limit
    assert "&lt;Platform&gt; &amp; co" in slack["blocks"][1]["text"]["text"]  # no <!channel> smuggled in a name
    assert f"<{link}|Open in FinOps>" in slack["blocks"][1]["text"]["text"]
    teams = teams_payload(title=title, kind_label="Cap threshold crossed", link=link)
    conforms(teams, json.loads((FIXTURES / "teams/workflow_adaptive_card.json").read_text()))
    assert teams["attachments"][0]["content"]["actions"][0]["url"] == link


def test_slack_and_teams_messages_carry_the_alerts_figures_as_the_email_does(world):  # noqa: F811
    """A platform team acts from the chat message: its reason and figures are the email's (one definition)."""
    from finops.notify.emails import CONTEXTS, event_summary

    for kind in ALL_KINDS:
        event = AlertEvent.objects.filter(kind=kind).first()
        summary = event_summary(event)
        assert summary["facts"], kind  # every kind says at least one figure
        slack = slack_payload(title=event.title, kind_label=kind, link=None, **summary)
        conforms(slack, json.loads((FIXTURES / "slack/incoming_webhook_block_kit.json").read_text()))
        fields = [f["text"] for b in slack["blocks"] if "fields" in b for f in b["fields"]]
        assert [f.split("\n", 1)[0].strip("*") for f in fields] == [label for label, _ in summary["facts"][:10]]
        teams = teams_payload(title=event.title, kind_label=kind, link=None, **summary)
        conforms(teams, json.loads((FIXTURES / "teams/workflow_adaptive_card.json").read_text()))
        card = teams["attachments"][0]["content"]["body"]
        assert [f["title"] for b in card if b["type"] == "FactSet" for f in b["facts"]] == [
            label for label, _ in summary["facts"]
        ]
        if kind in CONTEXTS:  # the email's own facts, the same strings
            email_facts = [(f["label"], f["value"]) for f in CONTEXTS[kind](event)["facts"]]
            assert summary["facts"] == email_facts


def test_the_shape_check_catches_a_payload_teams_would_refuse():
    with pytest.raises(AssertionError):
        conforms(
            {"type": "AdaptiveCard", "body": []},
            json.loads((FIXTURES / "teams/workflow_adaptive_card.json").read_text()),
        )


def _four_channels(webhook, slack, teams) -> None:
    """The organisation's defaults: every alert nobody routed elsewhere goes to all four."""
    channel_save(by=None, name="Ops email", kind=ChannelKind.EMAIL, addresses=["ops@example.com"], is_default=True)
    channel_save(
        by=None, name="Ops webhook", kind=ChannelKind.WEBHOOK, url=webhook.url + "/hook", secret=SECRET, is_default=True
    )
    channel_save(
        by=None, name="Platform Slack", kind=ChannelKind.SLACK, url=slack.url + "/services/T0/B0/x", is_default=True
    )
    channel_save(
        by=None, name="Platform Teams", kind=ChannelKind.TEAMS, url=teams.url + "/workflows/x", is_default=True
    )


def _deliver_with_two_workers() -> None:
    """Two workers deliver at once, each on its own database connection, until nothing is due."""
    barrier, errors = threading.Barrier(2), []

    def worker():
        try:
            barrier.wait()
            for _ in range(3):
                events_deliver()
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert errors == []


@pytest.fixture
def receivers(transactional_db, local_receivers):
    """The organisation's four default channels, set up before the world raises its alerts (its imports deliver
    some at once): the only ones, so every alert nobody routed elsewhere reaches all four. The migration's default
    channels go, and the world's teams are made without theirs."""
    from django.db.models.signals import post_save

    from finops.models import Team

    Channel.objects.all().delete()
    post_save.disconnect(sender=Team, dispatch_uid="finops.team_default_channel")
    with (
        FakeWebhookServer() as webhook,
        FakeWebhookServer() as slack,
        FakeWebhookServer(statuses=(202,)) as teams,  # a Teams workflow answers 202 Accepted
    ):
        _four_channels(webhook, slack, teams)
        try:
            yield webhook, slack, teams
        finally:
            from finops.alerts.services.channels import team_created

            post_save.connect(team_created, sender=Team, dispatch_uid="finops.team_default_channel")


@pytest.mark.django_db(transaction=True)
def test_every_alert_kind_reaches_an_email_a_webhook_a_slack_and_a_teams_channel_once_under_two_workers(
    receivers,
    smtp,  # noqa: F811
    world,  # noqa: F811
):
    webhook, slack, teams = receivers
    # The cap's own channels go too: its alerts fall through to the four.
    Channel.objects.exclude(name__in=("Ops email", "Ops webhook", "Platform Slack", "Platform Teams")).delete()
    _deliver_with_two_workers()

    events = AlertEvent.objects.all()
    sent = list(events.filter(state=AlertEvent.State.SENT))
    assert {e.kind for e in sent} == ALL_KINDS
    assert set(events.values_list("state", flat=True)) <= {AlertEvent.State.SENT, AlertEvent.State.SUPERSEDED}
    # Email: one message per sent event to the channel's address.
    assert {r for envelope in smtp.envelopes for r in envelope} == {"ops@example.com"}
    emailed = Counter(m["X-FinOps-Event"] for m in smtp.messages)
    assert emailed == Counter({str(e.id): 1 for e in sent})
    # Webhook: one signed POST per sent event.
    posted = [json.loads(body) for _path, _headers, body in webhook.received]
    assert Counter(p["id"] for p in posted) == Counter({e.id: 1 for e in sent})
    for _path, headers, body in webhook.received:
        expected = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
        assert hmac.compare_digest(headers["X-FinOps-Signature"], expected)
    # Slack and Teams: one message per sent event, in their documented shapes, with the event's title.
    slack_doc = json.loads((FIXTURES / "slack/incoming_webhook_block_kit.json").read_text())
    teams_doc = json.loads((FIXTURES / "teams/workflow_adaptive_card.json").read_text())
    for receiver, documented, title_of in (
        (slack, slack_doc, lambda p: p["text"].removeprefix("[FinOps] ")),
        (teams, teams_doc, lambda p: p["attachments"][0]["content"]["body"][0]["text"]),
    ):
        payloads = [json.loads(body) for _path, _headers, body in receiver.received]
        for payload in payloads:
            conforms(payload, documented)
        assert Counter(title_of(p) for p in payloads) == Counter(e.title for e in sent)
    # One sent notification per event and channel, each naming the channel row it went through.
    rows = Notification.objects.filter(status="sent")
    assert rows.count() == 4 * len(sent)
    assert set(rows.values_list("channel", flat=True)) == {"email", "webhook", "slack", "teams"}
    assert not rows.filter(via=None).exists()


def _migration():
    return importlib.import_module("finops.migrations.0034_cap_recipients_and_webhooks_to_channels")


@pytest.mark.django_db
def test_the_migration_moves_caps_recipients_and_webhooks_to_channels_with_the_same_deliveries(
    smtp,  # noqa: F811
    local_receivers,
    support_team,
    ada,
    fiona,
    sam,
):
    from finops.alerts.events import event_raise

    with FakeWebhookServer() as hook:
        # Caps as they were stored before channels: recipients and a webhook on the cap's row.
        team_cap = Cap.objects.create(
            name="Support November",
            scope="team",
            team=support_team,
            amount=Decimal("5000"),
            recipients=["role:team_leads", "role:finance", "pager@example.com"],
            webhook_url=hook.url + "/hooks/finops?token=abc",
            webhook_secret_ciphertext=crypto.encrypt(SECRET),
        )
        org_cap = Cap.objects.create(
            name="Everything", scope="org", amount=Decimal("90000"), recipients=["role:admins"]
        )
        events = [
            event_raise(
                kind=AlertKind.CAP_THRESHOLD,
                subject=f"cap:{cap.id}",
                period_start=cap.created_at.date().replace(day=1),
                threshold=80,
                title=f"{cap.name} at 80%",
                details={},
                cap=cap,
                team=cap.owning_team,
            )
            for cap in (team_cap, org_cap)
        ]
        # What the code before channels sent (its rules, written out): the cap's addresses and roles by email
        # (role:team_leads the cap's team's leads, role:finance, role:admins), its webhook's scheme and host.
        before = {
            events[0].id: [
                ("email", "fiona@example.com"),  # role:finance
                ("email", "pager@example.com"),
                ("email", "sam@example.com"),  # role:team_leads: Support's lead
                ("webhook", webhook_label(team_cap.webhook_url).lower()),
            ],
            events[1].id: [("email", "ada@example.com")],  # role:admins
        }

        _migration().caps_to_channels(django_apps, None)
        _migration().caps_to_channels(django_apps, None)  # run twice: the same rows

        assert Channel.objects.exclude(for_cap=None).count() == 3
        after = {e.id: sorted((t.channel, t.recipient.lower()) for t in event_targets(e)) for e in events}
        assert after == before
        events_deliver()
        assert len(hook.received) == 1 and json.loads(hook.received[0][2])["cap"] == team_cap.id
    told = sorted(r.lower() for envelope in smtp.envelopes for r in envelope)
    assert told == sorted(a for e in events for c, a in before[e.id] if c == "email")
    hooked = Channel.objects.get(kind="webhook")
    assert hooked.url_label == webhook_label(team_cap.webhook_url) and "token=abc" not in hooked.url_ciphertext
    assert crypto.decrypt(hooked.url_ciphertext) == team_cap.webhook_url


@pytest.mark.django_db
@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:18150/hook",
        "http://localhost:6379/",
        "http://169.254.169.254/latest/meta-data/",
        "http://10.0.0.1/hook",
        "http://[::1]/hook",
        "http://0.0.0.0/hook",
        "http://[fd00::1]/hook",
        "http://224.0.0.1/hook",
        "http://192.168.1.20/hook",
    ],
)
def test_a_channel_url_to_an_internal_address_is_refused_at_save(url):
    for kind in (ChannelKind.SLACK, ChannelKind.TEAMS, ChannelKind.WEBHOOK):
        with pytest.raises(ValidationError) as refused:
            channel_save(by=None, name="Hook", kind=kind, url=url, secret=SECRET)
        assert "url" in refused.value.message_dict and "Refused" in refused.value.message_dict["url"][0]
    assert not Channel.objects.exclude(kind=ChannelKind.EMAIL).exists()  # the default email channels only


@pytest.mark.django_db
def test_a_channel_whose_address_became_internal_is_refused_at_send_and_not_retried(settings, smtp):  # noqa: F811
    from finops.alerts.events import event_raise

    with FakeWebhookServer() as slack:
        settings.FINOPS_EGRESS_ALLOWED_NETWORKS = [ipaddress.ip_network("127.0.0.0/8")]
        channel_save(by=None, name="Slack", kind=ChannelKind.SLACK, url=slack.url + "/services/x", is_default=True)
        settings.FINOPS_EGRESS_ALLOWED_NETWORKS = []  # the admin withdrew the allowance (or DNS moved) since the save
        event = event_raise(
            kind=AlertKind.UNPRICED_USAGE, subject="model:x/y", period_start=settings_day(), title="t", details={}
        )
        events_deliver()
        assert slack.received == []
    event.refresh_from_db()
    assert event.state == AlertEvent.State.GAVE_UP
    (row,) = event.notifications.all()
    assert row.status == "failed" and "refused" in row.error and "/services/x" not in row.error


def settings_day():
    import datetime as dt

    return dt.date(2000, 1, 1)


@pytest.mark.django_db
def test_send_a_test_message_reaches_each_kind_of_channel(smtp, local_receivers, ada, support_team):  # noqa: F811
    with FakeWebhookServer() as hook:
        email = channel_save(by=ada, name="Finance", kind=ChannelKind.EMAIL, addresses=["cfo@example.com"])
        slack = channel_save(by=ada, name="Platform", kind=ChannelKind.SLACK, url=hook.url + "/services/T/B/x")
        teams = channel_save(by=ada, name="Platform Teams", kind=ChannelKind.TEAMS, url=hook.url + "/wf")
        webhook = channel_save(by=ada, name="Hook", kind=ChannelKind.WEBHOOK, url=hook.url + "/h", secret=SECRET)
        assert channel_test_send(channel=email, by=ada) == ["cfo@example.com"]
        for channel in (slack, teams, webhook):
            assert channel_test_send(channel=channel, by=ada) == [channel.url_label]
            assert channel.url_label.startswith("http://127.0.0.1:") and "/services" not in channel.url_label
        assert [path for path, _h, _b in hook.received] == ["/services/T/B/x", "/wf", "/h"]
    assert smtp.messages[0]["Subject"] == "[FinOps] Test message to Finance"
    with pytest.raises(NotifyError):  # a receiver gone: the button says so
        channel_test_send(channel=slack, by=ada)


@pytest.mark.django_db
def test_only_who_may_edit_a_channel_sees_its_scheme_and_host_and_nobody_its_secret(
    local_receivers, ada, sam, fiona, support_team
):
    channel = channel_save(
        by=ada,
        name="Support hook",
        kind=ChannelKind.WEBHOOK,
        team=support_team,
        url="http://user:pw@127.0.0.1:9/x?t=1",
        secret=SECRET,
    )
    assert channel_shown(ada, channel) == "http://127.0.0.1:9/…"
    from tests.conftest import make_user

    mo = make_user("mo", "member", team=support_team, team_role="member")  # a plain member of the team
    assert channel_shown(sam, channel) == "http://127.0.0.1:9/…"  # the team's lead edits its channels
    assert channel_shown(mo, channel) == "" and channel_shown(fiona, channel) == ""
    assert "user" not in channel.url_label and SECRET not in channel.secret_ciphertext
    with pytest.raises(Exception, match="may not"):
        channel_test_send(channel=channel, by=mo)


@pytest.mark.django_db
def test_a_member_sees_no_channel_url_or_secret_on_the_page_or_in_export_config(
    client_as, local_receivers, ada, sam, fiona, support_team
):
    from django.core.management import call_command

    from tests.conftest import make_user

    url = "http://alice:pa55word@127.0.0.1:9/services/T0/B0/tok3n?x=1"
    channel_save(by=ada, name="Support Slack", kind=ChannelKind.SLACK, team=support_team, url=url, is_default=True)
    channel_save(by=ada, name="Ops hook", kind=ChannelKind.WEBHOOK, url=url, secret=SECRET)
    secret_bits = ("alice", "pa55word", "tok3n", "/services", SECRET, SECRET[:4] + "…")

    admin_page = client_as(ada).get("/alerts/channels/").content.decode()
    assert "Support Slack" in admin_page and "Ops hook" in admin_page and "http://127.0.0.1:9/…" in admin_page
    lead_page = client_as(sam).get("/alerts/channels/").content.decode()  # Support's lead: the team's channel only
    assert "Support Slack" in lead_page and "Ops hook" not in lead_page
    for page in (admin_page, lead_page):
        assert not [bit for bit in secret_bits if bit in page]
    mo = make_user("mo", "member", team=support_team, team_role="member")
    for user in (mo, fiona):
        assert client_as(user).get("/alerts/channels/").status_code == 404
        assert client_as(user).post(f"/alerts/channels/{Channel.objects.first().pk}/test/").status_code == 404
    out = io.StringIO()
    call_command("export_config", stdout=out)
    assert not [bit for bit in (*secret_bits, "127.0.0.1:9") if bit in out.getvalue()]


@pytest.mark.django_db
def test_the_alerts_page_names_a_slack_delivery_by_host_only_for_the_channels_editors(
    client_as,
    smtp,  # noqa: F811
    local_receivers,
    ada,
    sam,
    support_team,
    support_agent,
):
    from finops.alerts.events import event_raise
    from tests.conftest import make_user

    with FakeWebhookServer() as slack:
        channel_save(
            by=ada,
            name="Support Slack",
            kind=ChannelKind.SLACK,
            team=support_team,
            url=slack.url + "/services/T0/B0/tok3n",
            is_default=True,
        )
        event_raise(
            kind=AlertKind.SPEND_SPIKE,
            subject=f"workload:{support_agent.id}",
            period_start=settings_day(),
            title="Support agent spent $812.40",
            details={},
            workload=support_agent,
            team=support_team,
        )
        events_deliver()
        assert len(slack.received) == 1
    mo = make_user("mo", "member", team=support_team, team_role="member")
    member = client_as(mo).get("/alerts/").content.decode()
    lead = client_as(sam).get("/alerts/").content.decode()
    assert "Support agent spent $812.40" in member and "Slack · the channel's receiver" in member
    assert "127.0.0.1" not in member and "tok3n" not in member
    assert "Slack · http://127.0.0.1:" in lead and "tok3n" not in lead


@pytest.mark.django_db
def test_a_trickling_receiver_is_cut_at_the_deadline_and_retried_while_the_others_are_delivered_meanwhile(
    settings,
    smtp,  # noqa: F811
    local_receivers,
):
    import time

    from finops.alerts.events import event_raise

    settings.FINOPS_EGRESS_DEADLINE_SECONDS = 1.5
    with (
        FakeWebhookServer(trickle_every=0.4, trickle_lines=25) as slow,  # each read quick: only a deadline cuts it
        FakeWebhookServer() as fast,
    ):
        channel_save(
            by=None, name="Slow hook", kind=ChannelKind.WEBHOOK, url=slow.url + "/h", secret=SECRET, is_default=True
        )
        channel_save(by=None, name="Fast Slack", kind=ChannelKind.SLACK, url=fast.url + "/s", is_default=True)
        channel_save(by=None, name="Fast Teams", kind=ChannelKind.TEAMS, url=fast.url + "/t", is_default=True)
        channel_save(
            by=None, name="Fast hook", kind=ChannelKind.WEBHOOK, url=fast.url + "/w", secret=SECRET, is_default=True
        )
        channel_save(by=None, name="Email", kind=ChannelKind.EMAIL, addresses=["ops@example.com"], is_default=True)
        event = event_raise(
            kind=AlertKind.UNPRICED_USAGE, subject="model:x/y", period_start=settings_day(), title="t", details={}
        )
        started = time.monotonic()
        events_deliver()
        took = time.monotonic() - started
        # Four slow receivers one after another would take 4 × 1.5 s; at the same time, one deadline.
        assert 1.5 <= took < 3.5, took
        assert sorted(path for path, _h, _b in fast.received) == ["/s", "/t", "/w"] and len(smtp.messages) == 1
        event.refresh_from_db()
        assert event.state == AlertEvent.State.FAILED and event.next_attempt_at is not None  # retried, not sent
        (cut,) = event.notifications.filter(status="failed")
        assert cut.error == f"{slow.url}/… timed out after 1.5 s"

        # The retry posts to the slow receiver only: everyone told already is not told twice.
        AlertEvent.objects.filter(id=event.id).update(next_attempt_at=None)
        events_deliver()
        assert len(slow.received) == 2 and len(fast.received) == 3 and len(smtp.messages) == 1
