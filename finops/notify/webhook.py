"""The webhook channel: a JSON POST signed with HMAC-SHA256 of the body and the cap's secret.

    X-FinOps-Signature: sha256=<hex hmac of the raw body>
    X-FinOps-Timestamp: <unix seconds>   (also inside the signed body as "timestamp", so a receiver can refuse
                                          replays by checking it against its clock)

2xx is sent; 408, 429 and 5xx, timeouts and connection errors are retried; any other 4xx is final (the receiver
rejects this payload). The URL is never recorded whole (a Slack-style URL is itself a secret): Notification rows
name `webhook_label(url)`, its scheme and host.
"""

import hashlib
import hmac
import json
import time
from urllib.parse import urlsplit

import requests

from finops import crypto, emails
from finops.models import AlertEvent, Notification

from .base import Channel, NotifyError, register

TIMEOUT = (3.05, 10)  # connect, read (seconds)
RETRYABLE = {408, 429}
SIGNATURE_HEADER = "X-FinOps-Signature"
TIMESTAMP_HEADER = "X-FinOps-Timestamp"


def webhook_label(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}/…" if parts.path.strip("/") or parts.query else f"{parts.scheme}://{parts.netloc}"


def webhook_payload(event: AlertEvent, *, timestamp: int) -> dict:
    return {
        "id": event.id, "kind": event.kind, "title": event.title, "subject": event.subject,
        "period_start": event.period_start.isoformat(), "threshold": event.threshold,
        "team": event.team.slug if event.team_id else None, "cap": event.cap_id,
        "details": event.details, "link": emails.event_link(event), "timestamp": timestamp,
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
        headers = {"Content-Type": "application/json", "User-Agent": "inference-finops-webhook/1",
                   TIMESTAMP_HEADER: str(timestamp)}
        if cap.webhook_secret_ciphertext:
            try:
                headers[SIGNATURE_HEADER] = sign(body, crypto.decrypt(cap.webhook_secret_ciphertext))
            except crypto.CredentialError as exc:
                raise NotifyError(str(exc), permanent=True) from None
        try:
            response = requests.post(cap.webhook_url, data=body, headers=headers, timeout=TIMEOUT, allow_redirects=False)
        except requests.Timeout:
            raise NotifyError(f"{webhook_label(cap.webhook_url)} timed out") from None
        except requests.RequestException as exc:
            raise NotifyError(f"{webhook_label(cap.webhook_url)} unreachable: {type(exc).__name__}") from None
        if 200 <= response.status_code < 300:
            return
        permanent = response.status_code < 500 and response.status_code not in RETRYABLE
        raise NotifyError(f"{webhook_label(cap.webhook_url)} answered HTTP {response.status_code}", permanent=permanent)
