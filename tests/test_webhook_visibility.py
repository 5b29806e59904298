"""A cap's webhook URL and signing secret are write-only outside the Django admin (docs/access.md): those who may edit
the cap see its scheme and host, nobody sees the secret or any part of it after the form that set it, and a plain
member, finance and another team's lead see no webhook at all: on the cap page, in the API, on the Alerts page,
in `export_config` and in the audit log."""

import datetime as dt

import pytest
from django.urls import reverse

from finops.alerts.events import event_raise
from finops.alerts.services.caps import cap_create
from finops.core import crypto
from finops.models import AlertKind, AuditEntry, Notification, User
from tests.config_helpers import export
from tests.conftest import make_user

SECRET = "s3cr-whsec-visibility-7Hq"
URL = "https://hookuser:hookpass@hooks.example.com/services/T0/B0/tok-XYZ?sig=abc"
SHOWN = "https://hooks.example.com/…"
NEVER = ["s3cr", "hookuser", "hookpass", "tok-XYZ", "sig=abc", "/services/"]


@pytest.fixture
def hooked(ada, support_team):
    return cap_create(
        by=ada,
        name="Support monthly",
        scope="team",
        target="support",
        amount="100",
        recipients=["role:team_leads"],
        webhook_url=URL,
        webhook_secret=SECRET,
    )


@pytest.fixture
def mo(support_team):
    """A plain member of Support: sees the team's caps, edits none."""
    return make_user("mo", User.Role.MEMBER, team=support_team, team_role="member")


def shows_nothing_secret(text: str) -> bool:
    return not any(part in text for part in NEVER)


def test_the_cap_page_shows_the_webhook_as_scheme_and_host_to_its_editors_only(client_as, hooked, ada, sam, mo, fiona):
    for editor in (ada, sam):  # the admin, and Support's lead
        page = client_as(editor).get(reverse("cap-detail", args=[hooked.pk])).content.decode()
        assert f"<code>{SHOWN}</code>" in page and shows_nothing_secret(page)

    for reader in (mo, fiona):  # a member of the team, finance: they read the cap, not its webhook
        page = client_as(reader).get(reverse("cap-detail", args=[hooked.pk])).content.decode()
        assert "hooks.example.com" not in page and 'id="cap-webhook"' not in page and shows_nothing_secret(page)


def test_the_api_returns_scheme_and_host_to_editors_and_no_webhook_to_a_member(client_as, hooked, sam, mo):
    lead = client_as(sam).get(f"/api/v1/caps/{hooked.pk}")
    assert (lead.json()["webhook"], lead.json()["webhook_secret_set"]) == (SHOWN, True)
    assert shows_nothing_secret(lead.content.decode())

    for response in (client_as(mo).get(f"/api/v1/caps/{hooked.pk}"), client_as(mo).get("/api/v1/caps")):
        body = response.content.decode()
        assert response.status_code == 200 and "hooks.example.com" not in body and shows_nothing_secret(body)
    member = client_as(mo).get(f"/api/v1/caps/{hooked.pk}").json()
    assert member["webhook"] is None and member["webhook_secret_set"] is None and "webhook_url" not in member


def test_export_config_prints_no_webhook_url_and_applying_it_keeps_the_webhook(hooked, tmp_path):
    from tests.config_helpers import apply, write

    exported = export()
    assert "hooks.example.com" not in exported and "webhook" not in exported and shows_nothing_secret(exported)

    output = apply(write(tmp_path, exported, "exported.yaml"))
    hooked.refresh_from_db()
    assert "caps: 0 created, 0 updated, 1 unchanged" in output
    assert hooked.webhook_url == URL and crypto.decrypt(hooked.webhook_secret_ciphertext) == SECRET


def test_the_alerts_page_names_the_receiver_by_scheme_and_host_for_editors_and_hides_it_from_a_member(
    client_as, hooked, sam, mo
):
    event = event_raise(
        kind=AlertKind.CAP_THRESHOLD,
        subject=f"cap:{hooked.id}",
        period_start=dt.date(2026, 11, 1),
        threshold=80,
        title="Support is at 82 %",
        details={},
        team=hooked.team,
        cap=hooked,
    )
    Notification.objects.create(
        event=event,
        channel=Notification.Channel.WEBHOOK,
        recipient=SHOWN,
        status=Notification.Status.FAILED,
        error=f"{SHOWN} answered HTTP 500",
    )

    lead = client_as(sam).get(reverse("alert-list")).content.decode()
    assert f"Webhook · {SHOWN}" in lead and f"{SHOWN} answered HTTP 500" in lead and shows_nothing_secret(lead)

    member = client_as(mo).get(reverse("alert-list")).content.decode()
    assert "Support is at 82 %" in member and "Webhook · the channel's receiver" in member
    assert "hooks.example.com" not in member and "HTTP 500" not in member


def test_the_audit_log_records_the_webhook_by_scheme_and_host_and_the_url_only_as_set_or_changed(hooked, ada):
    from finops.alerts.services.caps import cap_update

    cap_update(cap=hooked, by=ada, webhook_url="https://hooks.example.com/services/T0/B0/tok-NEW")
    created, changed = AuditEntry.objects.filter(entity_type=AuditEntry.Entity.CAP).order_by("id")

    assert created.after["webhook"] == SHOWN and created.after["webhook_url"] == "set"
    assert changed.changed == ["webhook_url"] and changed.after["webhook_url"] == "changed"
    assert shows_nothing_secret(str(created.after) + str(changed.before) + str(changed.after))
    assert "tok-NEW" not in str(changed.after)


def test_the_secret_is_never_shown_after_the_form_that_set_it_not_even_its_first_characters(client_as, sam, hooked):
    client = client_as(sam)
    for url in (reverse("cap-edit", args=[hooked.pk]), reverse("cap-detail", args=[hooked.pk]), "/api/v1/caps"):
        body = client.get(url).content.decode()
        assert SECRET[:4] not in body and "(secret " not in body
