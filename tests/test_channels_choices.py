"""What chooses a channel and who may write one (issue 25): a cap, a contract and a workload choose channels in the
forms, the API and config, and their alerts go there; /api/v1/channels keeps the page's rules (admins every
channel, a team lead their teams', anyone else 404) and never answers a URL or a secret; names with control
characters are refused with the field named; deliveries to different receivers do not wait on each other across
events, with real local HTTP receivers."""

import datetime as dt
import io
import ipaddress
import json
import threading
import time

import pytest
from django.core.management import call_command

from finops.alerts.events import event_raise
from finops.alerts.services.channels import channel_save
from finops.config.apply import ConfigInvalid, config_apply
from finops.models import AlertEvent, AlertKind, Cap, Channel, ChannelKind, Contract, Workload
from finops.notify.deliver import events_deliver
from finops.notify.recipients import event_channels
from tests.conftest import make_user
from tests.fakes.webhook_server import FakeWebhookServer

SECRET = "whsec-choices-0987654321"
URL = "http://carol:pa55word@127.0.0.1:9/services/T0/B0/tok3n?x=1"
SECRET_BITS = ("carol", "pa55word", "tok3n", "/services", SECRET, SECRET[:4])
DAY = dt.date(2026, 11, 1)


@pytest.fixture
def local_receivers(settings):
    """The receivers listen on 127.0.0.1: allowed here, as an admin would for an internal receiver."""
    settings.FINOPS_EGRESS_ALLOWED_NETWORKS = [ipaddress.ip_network("127.0.0.0/8")]


def api(client, method, path, body=None):
    call = getattr(client, method)
    answer = call(path, json.dumps(body), content_type="application/json") if body is not None else call(path)
    return answer.status_code, (answer.json() if answer.content else None)


# --- the channel API ---


@pytest.mark.django_db
def test_the_channel_api_keeps_the_pages_rules_and_never_answers_a_url_or_secret(
    client_as, local_receivers, ada, sam, fiona, support_team, search_team
):
    admin, lead = client_as(ada), client_as(sam)
    status, made = api(
        admin,
        "post",
        "/api/v1/channels",
        {"name": "Ops hook", "kind": "webhook", "url": URL, "secret": SECRET, "kinds": ["spend_spike"]},
    )
    assert status == 201, made
    assert made["destination"] == "http://127.0.0.1:9/…" and made["secret_set"] is True
    status, team_slack = api(
        lead, "post", "/api/v1/channels", {"name": "Support Slack", "kind": "slack", "team": "support", "url": URL}
    )
    assert status == 201, team_slack
    # A lead writes their team's channels only: the organisation's and another team's are not theirs.
    assert api(lead, "post", "/api/v1/channels", {"name": "Mine", "kind": "slack", "url": URL})[0] == 403
    assert api(lead, "post", "/api/v1/channels", {"name": "X", "kind": "slack", "team": "search", "url": URL})[0] in (
        400,
        403,
    )
    assert api(lead, "patch", f"/api/v1/channels/{made['id']}", {"name": "Taken"})[0] == 404
    status, renamed = api(lead, "patch", f"/api/v1/channels/{team_slack['id']}", {"name": "Support alerts"})
    assert status == 200 and renamed["name"] == "Support alerts" and renamed["destination"] == "http://127.0.0.1:9/…"
    assert Channel.objects.get(pk=team_slack["id"]).url_label == "http://127.0.0.1:9/…"  # the URL was kept

    lead_list = api(lead, "get", "/api/v1/channels")[1]
    assert {c["name"] for c in lead_list} == {"Support alerts", "Support Platform: team leads"}
    admin_list = api(admin, "get", "/api/v1/channels")[1]
    assert {"Ops hook", "Support alerts", "Admins and finance"} <= {c["name"] for c in admin_list}
    mo = make_user("mo", "member", team=support_team, team_role="member")
    for user in (mo, fiona):  # members and finance: no channel at all
        client = client_as(user)
        assert api(client, "get", "/api/v1/channels")[0] == 404
        assert api(client, "get", f"/api/v1/channels/{team_slack['id']}")[0] == 404
        assert (
            api(client, "post", "/api/v1/channels", {"name": "n", "kind": "email", "addresses": ["ops@example.com"]})[0]
            == 404
        )
    for client in (admin, lead):
        for path in ("/api/v1/channels", f"/api/v1/channels/{team_slack['id']}"):
            text = client.get(path).content.decode()
            assert not [bit for bit in SECRET_BITS if bit in text]

    assert api(lead, "delete", f"/api/v1/channels/{team_slack['id']}")[0] == 204
    assert not Channel.objects.filter(pk=team_slack["id"]).exists()
    schema = admin.get("/api/schema/").content.decode()
    assert "/api/v1/channels" in schema and "/api/v1/channels/{id}" in schema


@pytest.mark.django_db
@pytest.mark.parametrize("name", ["Ops\r\nBcc: everyone@example.com", "Ops\x00", "Ops\x85hook", "Ops\x1b[31m"])
def test_a_channel_name_with_control_characters_is_refused_on_every_write_path(client_as, ada, name, tmp_path):
    status, body = api(
        client_as(ada), "post", "/api/v1/channels", {"name": name, "kind": "email", "addresses": ["ops@example.com"]}
    )
    assert status == 400 and "name" in body, body
    made = channel_save(by=ada, name="Ops", kind=ChannelKind.EMAIL, addresses=["ops@example.com"])
    status, body = api(client_as(ada), "patch", f"/api/v1/channels/{made.pk}", {"name": name})
    assert status == 400 and "name" in body, body
    from django.core.exceptions import ValidationError

    with pytest.raises(ValidationError) as refused:
        channel_save(by=ada, channel=made, name=name, kind=ChannelKind.EMAIL, addresses=["ops@example.com"])
    assert "name" in refused.value.message_dict
    made.refresh_from_db()
    assert made.name == "Ops"


@pytest.mark.django_db
def test_the_channel_api_refuses_an_internal_address_with_the_field_named(client_as, ada):
    status, body = api(
        client_as(ada), "post", "/api/v1/channels", {"name": "Meta", "kind": "slack", "url": "http://169.254.169.254/"}
    )
    assert status == 400 and "Refused" in body["url"][0]


# --- choosing: caps, contracts, workloads ---


@pytest.mark.django_db
def test_a_cap_chooses_channels_in_its_form_and_the_api_and_a_lead_only_their_teams(
    client_as, local_receivers, ada, sam, support_team, search_team
):
    support_slack = channel_save(by=ada, name="Support Slack", kind=ChannelKind.SLACK, team=support_team, url=URL)
    search_slack = channel_save(by=ada, name="Search Slack", kind=ChannelKind.SLACK, team=search_team, url=URL)
    lead = client_as(sam)
    form = lead.get("/caps/new/").content.decode()
    assert "Support Slack" in form and "Search Slack" not in form and "127.0.0.1" not in form
    answer = lead.post(
        "/caps/new/",
        {
            "name": "Support monthly",
            "scope": "team:support",
            "period": "month",
            "amount": "5000",
            "thresholds": "80",
            "recipients": "role:team_leads",
            "channels": [support_slack.pk],
        },
    )
    assert answer.status_code == 302, answer.content.decode()[:2000]
    cap = Cap.objects.get(name="Support monthly")
    assert set(cap.channels.values_list("name", flat=True)) == {"Support Slack", "Support monthly: email"}

    status, body = api(lead, "patch", f"/api/v1/caps/{cap.pk}", {"channels": [search_slack.pk]})
    assert status == 400 and "channels" in body and "Search" not in json.dumps(body)
    status, body = api(lead, "patch", f"/api/v1/caps/{cap.pk}", {"channels": []})
    assert status == 200 and body["channels"] == []
    assert set(cap.channels.values_list("name", flat=True)) == {"Support monthly: email"}  # its recipients stay
    status, body = api(client_as(ada), "patch", f"/api/v1/caps/{cap.pk}", {"channels": [search_slack.pk]})
    assert status == 200 and body["channels"] == [{"id": search_slack.pk, "name": "Search Slack"}]
    assert "127.0.0.1" not in json.dumps(body)


@pytest.mark.django_db
def test_a_contract_chooses_channels_in_its_form_and_the_api_and_its_alerts_go_there(
    client_as, local_receivers, ada, fiona
):
    slack = channel_save(by=ada, name="Procurement Slack", kind=ChannelKind.SLACK, url=URL)
    body = {
        "name": "OpenAI enterprise",
        "provider": "openai",
        "start": "2026-01-01",
        "end": "2027-01-01",
        "commitment": "60000",
        "owner": "olga@example.com",
        "channels": [slack.pk],
    }
    status, made = api(client_as(ada), "post", "/api/v1/contracts", body)
    assert status == 201, made
    assert made["channels"] == [{"id": slack.pk, "name": "Procurement Slack"}]
    contract = Contract.objects.get(pk=made["id"])
    event = event_raise(
        kind=AlertKind.CONTRACT_NOTICE, subject=f"contract:{contract.id}", period_start=DAY, title="t", details={}
    )
    event.contract = contract
    event.save()
    assert [c.name for c in event_channels(event)] == ["Procurement Slack"]
    # The form shows the choice by name and keeps it.
    page = client_as(ada).get(f"/contracts/{contract.pk}/edit/").content.decode()
    assert "Procurement Slack" in page and "127.0.0.1" not in page
    status, body = api(client_as(fiona), "get", f"/api/v1/contracts/{contract.pk}")
    assert status == 200 and body["channels"] == [{"id": slack.pk, "name": "Procurement Slack"}]
    assert api(client_as(ada), "patch", f"/api/v1/contracts/{contract.pk}", {"channels": [999999]})[0] == 400
    contract.channels.clear()
    assert [c.name for c in event_channels(event)] == ["Contracts: owner and finance"]  # the default


CONFIG = """
teams:
  - {{name: Support Platform, slug: support}}
workloads:
  - name: Support agent
    slug: support-agent
    team: support
    latency_profile: interactive
{channels}
"""


@pytest.mark.django_db
def test_a_workload_chooses_channels_in_config_by_name_and_its_alerts_go_there(
    local_receivers, ada, tmp_path, support_team
):
    channel_save(by=None, name="Agent pager", kind=ChannelKind.EMAIL, addresses=["pager@example.com"])
    path = tmp_path / "finops.yaml"
    config_apply(path=path, text=CONFIG.format(channels="    channels: [Agent pager]"), environ={})
    workload = Workload.objects.get(slug="support-agent")
    assert [c.name for c in workload.channels.all()] == ["Agent pager"]
    event = event_raise(
        kind=AlertKind.SPEND_SPIKE,
        subject=f"workload:{workload.id}",
        period_start=DAY,
        title="Support agent spent $812.40",
        details={},
        workload=workload,
        team=workload.team,
    )
    assert [c.name for c in event_channels(event)] == ["Agent pager"]

    out = io.StringIO()
    call_command("export_config", stdout=out)
    assert "  channels:\n  - Agent pager\n" in out.getvalue() and "pager@example.com" not in out.getvalue()
    with pytest.raises(ConfigInvalid) as refused:
        config_apply(path=path, text=CONFIG.format(channels="    channels: [No such]"), environ={})
    assert "workloads[0] (slug=support-agent): channels: No channel 'No such'" in str(refused.value)
    config_apply(path=path, text=CONFIG.format(channels="    channels: []"), environ={})
    assert not workload.channels.exists()
    assert [c.name for c in event_channels(event)] == ["Support Platform: team leads"]  # the team's default


# --- across events, receivers do not wait on each other ---


@pytest.mark.django_db
def test_a_slow_receiver_on_one_event_does_not_delay_another_events_delivery(settings, local_receivers, support_team):
    settings.FINOPS_EGRESS_DEADLINE_SECONDS = 2.0
    slow_workload = Workload.objects.create(team=support_team, name="Slow", slug="slow")
    fast_workload = Workload.objects.create(team=support_team, name="Fast", slug="fast")
    with FakeWebhookServer(trickle_every=0.4, trickle_lines=25) as slow, FakeWebhookServer() as fast:
        slow_hook = channel_save(
            by=None, name="Slow hook", kind=ChannelKind.WEBHOOK, url=slow.url + "/h", secret=SECRET
        )
        fast_slack = channel_save(by=None, name="Fast Slack", kind=ChannelKind.SLACK, url=fast.url + "/s")
        slow_hook.workloads.add(slow_workload)
        fast_slack.workloads.add(fast_workload)
        events = [
            event_raise(  # raised first: one event after another, it would hold the other for the deadline
                kind=AlertKind.SPEND_SPIKE,
                subject=f"workload:{workload.id}",
                period_start=DAY,
                title=f"{workload.name} spiked",
                details={},
                workload=workload,
                team=support_team,
            )
            for workload in (slow_workload, fast_workload)
        ]
        arrived: list[float] = []

        def watch():
            while not arrived and time.monotonic() - started < 10:
                if fast.received:
                    arrived.append(time.monotonic() - started)
                time.sleep(0.01)

        started = time.monotonic()
        watcher = threading.Thread(target=watch)
        watcher.start()
        events_deliver()
        took = time.monotonic() - started
        watcher.join()
    assert 2.0 <= took < 4.0, took  # the slow receiver was cut at its deadline
    assert arrived and arrived[0] < 1.0, arrived  # the other event's receiver did not wait for it
    slow_event, fast_event = (AlertEvent.objects.get(pk=e.pk) for e in events)
    assert fast_event.state == AlertEvent.State.SENT
    assert slow_event.state == AlertEvent.State.FAILED and "timed out" in slow_event.notifications.get().error
    assert [p for p, _h, _b in fast.received] == ["/s"]


# --- the channels page edits ---


@pytest.mark.django_db
def test_a_lead_makes_edits_and_deletes_their_teams_channel_on_the_page_and_a_member_cannot(
    client_as, local_receivers, sam, support_team
):
    lead = client_as(sam)
    form = lead.get("/alerts/channels/new/").content.decode()
    assert "Support Platform" in form and "The organisation" not in form  # a lead owns for their team only
    answer = lead.post(
        "/alerts/channels/new/", {"name": "Support\r\nSlack", "kind": "slack", "team": "support", "url": URL}
    )
    assert answer.status_code == 200 and "control character" in answer.content.decode().lower()
    answer = lead.post(
        "/alerts/channels/new/", {"name": "Support Slack", "kind": "slack", "team": "support", "url": URL}
    )
    assert answer.status_code == 302
    channel = Channel.objects.get(name="Support Slack")
    edit = lead.get(f"/alerts/channels/{channel.pk}/edit/").content.decode()
    assert "http://127.0.0.1:9/…" in edit and not [bit for bit in SECRET_BITS if bit in edit]
    answer = lead.post(
        f"/alerts/channels/{channel.pk}/edit/",
        {"name": "Support alerts", "kind": "slack", "team": "support", "url": "", "kinds": ["spend_spike"]},
    )
    assert answer.status_code == 302
    channel.refresh_from_db()
    assert (channel.name, channel.kinds, channel.url_label) == (
        "Support alerts",
        ["spend_spike"],
        "http://127.0.0.1:9/…",
    )
    mo = make_user("mo", "member", team=support_team, team_role="member")
    member = client_as(mo)
    assert member.get(f"/alerts/channels/{channel.pk}/edit/").status_code == 404
    assert member.post(f"/alerts/channels/{channel.pk}/delete/").status_code == 404
    assert lead.post(f"/alerts/channels/{channel.pk}/delete/").status_code == 302
    assert not Channel.objects.filter(pk=channel.pk).exists()


@pytest.mark.django_db
def test_the_demo_slack_stand_in_records_a_slack_message_only_in_the_demo(client_as, settings, tmp_path, ada):
    from django.test import Client

    settings.FINOPS_DEMO_SLACK_LOG = str(tmp_path / "slack.jsonl")
    from finops.notify.slack import slack_payload

    message = slack_payload(
        title="Support <Platform> spent twice its usual",
        kind_label="Spend spike",
        link="http://testserver/alerts/",
        reason="Yesterday's spend was 2.1 times the day-of-week average.",
        facts=[("Yesterday", "$8,124.40"), ("Usual", "$3,868.76")],
    )
    anonymous = Client()
    assert anonymous.post("/demo/slack/hook", message, content_type="application/json").status_code == 404
    assert client_as(ada).get("/demo/slack/").status_code == 404
    settings.FINOPS_DEMO_SLACK = True
    assert anonymous.post("/demo/slack/hook", {"blocks": []}, content_type="application/json").status_code == 400
    assert anonymous.post("/demo/slack/hook", message, content_type="application/json").status_code == 200
    page = client_as(ada).get("/demo/slack/").content.decode()
    # As Slack shows it: the header, the reason with the link as its label, the figures, the kind; names unescaped.
    for shown in ("Support &lt;Platform&gt; spent twice its usual", "2.1 times", "Open in FinOps", "$8,124.40"):
        assert shown in page
    assert "<dt>Usual</dt><dd>$3,868.76</dd>" in page and "Spend spike" in page
    assert "[FinOps]" not in page and "http://testserver/alerts/|" not in page  # no fallback text, no raw mrkdwn
