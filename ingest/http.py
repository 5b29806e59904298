"""The single seam for outbound HTTP (docs/architecture.md): timeouts, typed errors, retries honouring Retry-After.

Connectors call `HttpClient.get_json`; they never import `requests` themselves. Secrets travel only in
request headers and never appear in an error message or a log line (messages name the URL path, not
the query string or headers).
"""

import email.utils
import json
import logging
import random
import time
from collections.abc import Callable
from decimal import Decimal
from urllib.parse import urlsplit

import requests

from ingest.connectors.base import ProviderError

log = logging.getLogger(__name__)

# 529: Anthropic's "overloaded".
RETRYABLE_STATUSES = {429, 500, 502, 503, 504, 529}


def retry_after_seconds(value: str | None) -> float | None:
    """`Retry-After` as seconds: an integer, or an HTTP date; None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


class HttpClient:
    def __init__(
        self,
        *,
        timeout: float = 30.0,
        max_attempts: int = 5,
        backoff_base: float = 1.0,
        backoff_max: float = 60.0,
        sleep: Callable[[float], None] = time.sleep,
        session: requests.Session | None = None,
    ):
        self.timeout = timeout
        self.max_attempts = max_attempts
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.sleep = sleep
        self.session = session or requests.Session()
        self.requests_made = 0

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self.backoff_max)
        # Full jitter: spreads retries of many accounts hitting one provider at once.
        return random.uniform(0, min(self.backoff_max, self.backoff_base * 2**attempt))

    def get_json(self, url: str, *, headers: dict | None = None, params=None, where: str = "") -> dict:
        """GET `url` and return its JSON body. `where` names the request in errors (e.g. "costs page 3")."""
        label = where or urlsplit(url).path
        for attempt in range(self.max_attempts):
            self.requests_made += 1
            try:
                response = self.session.get(url, headers=headers, params=params, timeout=self.timeout)
            except requests.RequestException as exc:
                error = ProviderError(
                    f"{label}: could not reach the provider ({type(exc).__name__})", permanent=False, reason="server"
                )
                delay = self._backoff(attempt, None)
            else:
                if response.ok:
                    return self._json(response, label)
                error = self._error(response, label)
                if error.permanent:
                    raise error
                delay = self._backoff(attempt, retry_after_seconds(response.headers.get("Retry-After")))
            if attempt + 1 < self.max_attempts:
                log.info("%s; retrying in %.1f s (attempt %d of %d)", error, delay, attempt + 2, self.max_attempts)
                self.sleep(delay)
        raise ProviderError(
            f"{error} — gave up after {self.max_attempts} attempts", permanent=False, reason=error.reason
        )

    @staticmethod
    def _json(response: requests.Response, label: str) -> dict:
        try:
            # JSON numbers become Decimal, never float: amounts keep every digit the provider sent.
            body = json.loads(response.text, parse_float=Decimal)
        except (ValueError, json.JSONDecodeError):
            raise ProviderError(f"{label}: malformed response (not JSON)", reason="malformed") from None
        if not isinstance(body, dict):
            raise ProviderError(f"{label}: malformed response (expected a JSON object)", reason="malformed")
        return body

    @staticmethod
    def _error(response: requests.Response, label: str) -> ProviderError:
        status = response.status_code
        detail = _provider_message(response)
        if status in (401, 403):
            return ProviderError(
                f"{label}: the provider rejected the credentials (HTTP {status}){detail}; the account was disabled "
                "until its key is replaced",
                reason="auth",
            )
        if status == 429 and "insufficient_quota" in response.text:
            return ProviderError(f"{label}: the provider reports insufficient quota (HTTP 429){detail}", reason="quota")
        if status in RETRYABLE_STATUSES:
            reason = "rate_limit" if status == 429 else "server"
            return ProviderError(f"{label}: HTTP {status}{detail}", permanent=False, reason=reason)
        return ProviderError(f"{label}: HTTP {status}{detail}", reason="bad_input")


def _provider_message(response: requests.Response) -> str:
    """The provider's own error message, if it sent one (OpenAI and Anthropic: {"error": {"message": …}})."""
    try:
        error = response.json().get("error")
    except (ValueError, AttributeError):
        return ""
    message = error.get("message") if isinstance(error, dict) else error
    return f": {str(message)[:300]}" if message else ""
