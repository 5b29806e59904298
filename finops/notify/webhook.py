"""The webhook transport: a JSON POST signed with HMAC-SHA256 of the body and the channel's secret.

    X-FinOps-Signature: sha256=<hex hmac of the raw body>
    X-FinOps-Timestamp: <unix seconds>   (also inside the signed body as "timestamp", so a receiver can refuse
                                          replays by checking it against its clock)

Sent through finops/notify/http.py (the egress seam, its status rules). The URL is never recorded whole (it may
carry a token or credentials): Notification rows name `webhook_label(url)`, its scheme and host.
"""

import hashlib
import hmac
import time

from finops.core import crypto, egress
from finops.models import AlertEvent, Channel, ChannelKind
from finops.notify import emails

from . import http
from .base import NotifyError, Target, Transport, register

SIGNATURE_HEADER = "X-FinOps-Signature"
TIMESTAMP_HEADER = "X-FinOps-Timestamp"


def webhook_label(url: str) -> str:
    """Scheme and host only: never the credentials, path or query a URL may carry."""
    return egress.url_label(url)


def webhook_payload(event: AlertEvent, *, timestamp: int) -> dict:
    return {
        "id": event.id,
        "kind": event.kind,
        "title": event.title,
        "subject": event.subject,
        "period_start": event.period_start.isoformat(),
        "threshold": event.threshold,
        "team": event.team.slug if event.team_id else None,
        "cap": event.cap_id,
        "details": event.details,
        "link": emails.event_link(event),
        "timestamp": timestamp,
    }


def sign(body: bytes, secret: str) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def signed_post(channel: Channel, payload: dict, timestamp: int) -> None:
    body = http.json_body(payload)
    headers = {"User-Agent": "inference-finops-webhook/1", TIMESTAMP_HEADER: str(timestamp)}
    if channel.secret_ciphertext:
        try:
            headers[SIGNATURE_HEADER] = sign(body, crypto.decrypt(channel.secret_ciphertext))
        except crypto.CredentialError as exc:
            raise NotifyError(str(exc), permanent=True) from None
    http.post(http.channel_url(channel), body, headers)


@register
class WebhookTransport(Transport):
    name = ChannelKind.WEBHOOK

    def notify(self, event: AlertEvent, target: Target) -> None:
        if target.via is None:
            raise NotifyError("the webhook channel is gone", permanent=True)
        timestamp = int(time.time())
        signed_post(target.via, webhook_payload(event, timestamp=timestamp), timestamp)

    def test(self, channel: Channel, target: Target) -> None:
        timestamp = int(time.time())
        payload = {"id": None, "kind": "test", "title": f"Test message to {channel.name}", "timestamp": timestamp}
        signed_post(channel, payload, timestamp)
