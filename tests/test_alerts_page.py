"""The Alerts page (issue 10): every event the reader may see, newest first, filtered in the URL, each with its
send attempts; members see their teams' events only (organisation-wide ones are for finance and admins); anyone
mutes or unmutes the emails of a kind for themselves."""

import datetime as dt
from decimal import Decimal

import pytest
from django.urls import reverse

from finops.alerts.events import event_raise
from finops.models import AlertEvent, AlertKind, AlertMute, Notification
from tests.conftest import stored_cap

NOVEMBER = dt.date(2026, 11, 1)


@pytest.fixture(autouse=True)
def _frozen(time_machine):
    time_machine.move_to(dt.datetime(2026, 11, 22, 12, tzinfo=dt.UTC))


@pytest.fixture
def events(support_team, search_team, time_machine):
    """Raised an hour apart: a Support cap alert (sent after a failed attempt), a Search cap alert (failing), and
    an organisation-wide spike (pending)."""
    support_cap = stored_cap(name="Support November", scope="team", team=support_team, amount=Decimal("5000"))
    search_cap = stored_cap(name="Search November", scope="team", team=search_team, amount=Decimal("900"))
    time_machine.move_to(dt.datetime(2026, 11, 22, 9, tzinfo=dt.UTC))
    support = event_raise(
        kind=AlertKind.CAP_THRESHOLD,
        subject=f"cap:{support_cap.id}",
        period_start=NOVEMBER,
        threshold=80,
        title="Support Platform at 82% of its $5,000 November cap",
        details={},
        cap=support_cap,
        team=support_team,
    )
    Notification.objects.create(
        event=support,
        channel="email",
        recipient="sam@example.com",
        status="failed",
        error="SMTP unavailable: ConnectionRefusedError",
        attempt=1,
    )
    Notification.objects.create(event=support, channel="email", recipient="sam@example.com", status="sent", attempt=2)
    AlertEvent.objects.filter(id=support.id).update(state="sent", attempts=2)
    time_machine.move_to(dt.datetime(2026, 11, 22, 10, tzinfo=dt.UTC))
    search = event_raise(
        kind=AlertKind.CAP_FORECAST,
        subject=f"cap:{search_cap.id}",
        period_start=NOVEMBER,
        threshold=100,
        title="Search forecast to reach $1,200.00 (133%) of its $900 November cap",
        details={},
        cap=search_cap,
        team=search_team,
    )
    AlertEvent.objects.filter(id=search.id).update(state="failed", attempts=1)
    time_machine.move_to(dt.datetime(2026, 11, 22, 11, tzinfo=dt.UTC))
    spike = event_raise(
        kind=AlertKind.SPEND_SPIKE,
        subject="account:1",
        period_start=dt.date(2026, 11, 21),
        title="openai-prod spent $80.00 yesterday, 6.5× its usual $12.30",
        details={"baseline": "12.30"},
    )
    time_machine.move_to(dt.datetime(2026, 11, 22, 12, tzinfo=dt.UTC))
    return {"support": support, "search": search, "spike": spike}


def titles(response) -> list[str]:
    return [event.title for event in response.context["page"].object_list]


def test_finance_sees_every_alert_newest_first_with_each_send_attempt(client_as, fiona, events):
    response = client_as(fiona).get(reverse("alert-list"))

    assert titles(response) == [events["spike"].title, events["search"].title, events["support"].title]
    html = response.content.decode()
    assert "Organisation-wide" in html and "SMTP unavailable: ConnectionRefusedError" in html
    assert html.count('data-status="failed"') == 1 and html.count('data-status="sent"') == 1
    assert "attempt 2" in html and f'href="/caps/{events["support"].cap_id}/"' in html


def test_filters_in_the_url_narrow_by_kind_team_and_state(client_as, ada, events):
    client = client_as(ada)
    assert titles(client.get(reverse("alert-list"), {"kind": "cap_forecast"})) == [events["search"].title]
    assert titles(client.get(reverse("alert-list"), {"team": "support"})) == [events["support"].title]
    assert titles(client.get(reverse("alert-list"), {"state": "pending"})) == [events["spike"].title]
    assert titles(client.get(reverse("alert-list"), {"team": "search", "state": "sent"})) == []
    # Values that name nothing are no filter at all, never an error.
    assert len(titles(client.get(reverse("alert-list"), {"kind": "nonsense", "team": "nope"}))) == 3


def test_a_member_sees_only_their_teams_alerts_and_no_organisation_wide_ones(client_as, sam, events):
    client = client_as(sam)
    response = client.get(reverse("alert-list"))
    assert titles(response) == [events["support"].title]
    assert [team.slug for team in response.context["teams"]] == ["support"]
    # Asking for another team's alerts is no filter they can use: still only their own.
    assert titles(client.get(reverse("alert-list"), {"team": "search"})) == [events["support"].title]
    assert "Search" not in response.content.decode().split('id="alerts"')[1]


def test_the_page_is_in_everyones_navigation(client_as, sam):
    response = client_as(sam).get(reverse("overview"))
    assert {"label": "Alerts", "url": "/alerts/", "active": False} in response.context["nav_items"]


def test_with_no_alerts_the_page_says_what_raises_them(client_as, tess, events):
    response = client_as(tess).get(reverse("alert-list"), {"state": "sent"})
    assert (
        'id="no-alerts"' in response.content.decode() and "No alerts match these filters" in response.content.decode()
    )
    AlertEvent.objects.all().delete()
    response = client_as(tess).get(reverse("alert-list"))
    assert "No alerts yet" in response.content.decode()


def test_mute_this_kind_for_me_and_unmute_again(client_as, sam, events):
    client = client_as(sam)
    assert "Mute this kind for me" in client.get(reverse("alert-list")).content.decode()

    response = client.post(
        reverse("alert-mute"), {"kind": "cap_threshold", "muted": "1", "next": "/alerts/?team=support"}
    )
    assert response.status_code == 302 and response["Location"] == "/alerts/?team=support"
    assert list(AlertMute.objects.filter(user=sam).values_list("kind", flat=True)) == ["cap_threshold"]
    page = client.get(reverse("alert-list")).content.decode()
    assert "Unmute" in page and "Muted: Cap threshold crossed" in page

    client.post(reverse("alert-mute"), {"kind": "cap_threshold", "muted": "1"})  # twice is still once
    assert AlertMute.objects.filter(user=sam).count() == 1
    response = client.post(
        reverse("alert-mute"), {"kind": "cap_threshold", "muted": "0", "next": "https://evil.example.com/"}
    )
    assert response["Location"] == reverse("alert-list")  # never redirected off-site
    assert not AlertMute.objects.filter(user=sam).exists()


def test_muting_needs_a_post_and_a_real_kind(client_as, sam):
    client = client_as(sam)
    assert client.get(reverse("alert-mute")).status_code == 405
    assert client.post(reverse("alert-mute"), {"kind": "everything", "muted": "1"}).status_code == 400
    assert not AlertMute.objects.exists()


def test_fifty_alerts_a_page_keeping_the_filters(client_as, fiona, support_team):
    for n in range(55):
        event_raise(
            kind=AlertKind.UNPRICED_USAGE,
            subject=f"model:ft-{n}",
            period_start=NOVEMBER,
            title=f"Unpriced usage of ft-{n}",
            details={},
            team=support_team,
        )
    client = client_as(fiona)
    first = client.get(reverse("alert-list"), {"team": "support"})
    assert len(titles(first)) == 50 and 'href="?team=support&amp;page=2"' in first.content.decode()
    second = client.get(reverse("alert-list"), {"team": "support", "page": 2})
    assert len(titles(second)) == 5
