"""The webhook channel: a JSON POST signed with HMAC-SHA256 of the body and the cap's secret.

    X-FinOps-Signature: sha256=<hex hmac of the raw body>
    X-FinOps-Timestamp: <unix seconds>   (also inside the signed body as "timestamp", so a receiver can refuse
                                          replays by checking it against its clock)

2xx is sent; 408, 429 and 5xx, timeouts and connection errors are retried; any other 4xx or a 3xx (redirects are
not followed) is final (the receiver rejects this payload). The POST goes through finops/egress.py: an address the
egress policy refuses (loopback, private, metadata, …; checked again at send, since DNS may have changed since the
cap was saved) is final too, and its message names the rule. One attempt ends at FINOPS_EGRESS_DEADLINE_SECONDS on
the wall clock. The URL is never recorded whole (a Slack-style URL is itself a secret, a URL may carry credentials):
Notification rows name `webhook_label(url)`, its scheme and host.
"""

import hashlib
import hmac
import json
import time

from finops import crypto, egress, emails
from finops.models import AlertEvent, Notification

from .base import Channel, NotifyError, register

RETRYABLE = {408, 429}
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


@register
class WebhookChannel(Channel):
    name = Notification.Channel.WEBHOOK

    def notify(self, event: AlertEvent, recipient: str) -> None:
        cap = event.cap
        if cap is None or not cap.webhook_url:
            raise NotifyError("the event's cap has no webhook any more", permanent=True)
        timestamp = int(time.time())
        body = json.dumps(webhook_payload(event, timestamp=timestamp), separators=(",", ":"), sort_keys=True).encode()
        headers = {
            "Content-Type": "application/json",
            "User-Agent": "inference-finops-webhook/1",
            TIMESTAMP_HEADER: str(timestamp),
        }
        if cap.webhook_secret_ciphertext:
            try:
                headers[SIGNATURE_HEADER] = sign(body, crypto.decrypt(cap.webhook_secret_ciphertext))
            except crypto.CredentialError as exc:
                raise NotifyError(str(exc), permanent=True) from None
        label = webhook_label(cap.webhook_url)
        try:
            response = egress.post(cap.webhook_url, body=body, headers=headers)
        except egress.EgressRefused as exc:
            raise NotifyError(f"{label} refused: {exc}", permanent=True) from None
        except egress.EgressFailed as exc:
            raise NotifyError(f"{label} {exc}") from None
        if 200 <= response.status < 300:
            return
        permanent = response.status < 500 and response.status not in RETRYABLE
        redirect = " (redirects are not followed)" if 300 <= response.status < 400 else ""
        raise NotifyError(f"{label} answered HTTP {response.status}{redirect}", permanent=permanent)
