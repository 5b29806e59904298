"""One POST of a JSON body to a channel's URL through the egress seam (finops/core/egress.py): the URL decrypted only
here, the host checked against the egress policy again at send (DNS may have changed since the channel was saved),
one DNS lookup, no redirects, a wall-clock deadline. 2xx is sent; 408, 429, 5xx, timeouts and connection errors are
retried; a refused address, a 3xx and any other 4xx are final. Errors name the scheme and host, never the URL."""

import json

from finops.core import crypto, egress
from finops.models import Channel

from .base import NotifyError

RETRYABLE = {408, 429}


def channel_url(channel: Channel) -> str:
    try:
        return crypto.decrypt(channel.url_ciphertext)
    except crypto.CredentialError as exc:
        raise NotifyError(str(exc), permanent=True) from None


def json_body(payload: dict) -> bytes:
    return json.dumps(payload, separators=(",", ":"), sort_keys=True).encode()


def post(url: str, body: bytes, headers: dict[str, str]) -> egress.Response:
    label = egress.url_label(url)
    try:
        response = egress.post(url, body=body, headers={"Content-Type": "application/json", **headers})
    except egress.EgressRefused as exc:
        raise NotifyError(f"{label} refused: {exc}", permanent=True) from None
    except egress.EgressFailed as exc:
        raise NotifyError(f"{label} {exc}") from None
    if 200 <= response.status < 300:
        return response
    permanent = response.status < 500 and response.status not in RETRYABLE
    redirect = " (redirects are not followed)" if 300 <= response.status < 400 else ""
    raise NotifyError(f"{label} answered HTTP {response.status}{redirect}", permanent=permanent)
