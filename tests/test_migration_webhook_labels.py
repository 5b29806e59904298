"""Upgrading scrubs credentials from webhook notifications recorded before the egress policy (migration 0029): a
label kept `scheme://user:password@host`, and its errors quoted it; after the upgrade both read scheme and host."""

import datetime as dt

from tests.migration_helpers import database_at, latest, migrate

BEFORE = [("finops", "0028_usage_line_invoice_id")]


at_0028 = database_at(BEFORE)  # a scratch database there, for the test


def test_upgrading_removes_credentials_from_recorded_webhook_labels_and_errors(at_0028):
    get = lambda name: at_0028.get_model("finops", name)  # noqa: E731
    event = get("AlertEvent").objects.create(
        kind="cap_threshold", subject="cap:1", period_start=dt.date(2026, 11, 1), threshold=80, title="Support at 82 %"
    )
    old = "http://hookuser:hookpass@hooks.example.com:8443/…"
    Notification = get("Notification")
    leaked = Notification.objects.create(
        event=event, channel="webhook", recipient=old, status="failed", error=f"{old} answered HTTP 500"
    )
    plain = Notification.objects.create(
        event=event, channel="webhook", recipient="https://hooks.example.com", status="sent"
    )
    email = Notification.objects.create(event=event, channel="email", recipient="lead@example.com", status="sent")

    new = migrate(latest()).get_model("finops", "Notification")

    scrubbed = new.objects.get(id=leaked.id)
    assert scrubbed.recipient == "http://hooks.example.com:8443/…"
    assert scrubbed.error == "http://hooks.example.com:8443/… answered HTTP 500"
    assert new.objects.get(id=plain.id).recipient == "https://hooks.example.com"
    assert new.objects.get(id=email.id).recipient == "lead@example.com"
