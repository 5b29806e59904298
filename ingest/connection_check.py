""" "Test connection": ask a provider, with a key, for one recent day of usage and say what the key can see.

It drives the connector's own `fetch` — the same requests, headers and parsing a pull makes, through
ingest.http.HttpClient — for the last completed UTC day, and summarises the UsageRows in memory (one day of
one account: small). Nothing is written: no account, no run, no line. The key travels only in the
connector's request headers; every message is scrubbed of it before it is shown.
"""

import datetime as dt
import re
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal

from django.utils import timezone

from finops.core.crypto import CredentialError
from finops.models import Account, ConnectorKind
from finops.sources.services.accounts import account_credentials
from ingest.connectors.base import ProviderError, UsageRow, token_weight
from ingest.connectors.registry import api_source_for

from .http import HttpClient

# What key each API needs (reference/provider-formats.md §1, §2, §6): said on the form and when a key is refused.
KEY_NEEDED = {
    ConnectorKind.OPENAI_API: "an OpenAI Admin key (sk-admin-…, Settings → Organization → Admin keys); project keys "
    "cannot read organisation usage and costs",
    ConnectorKind.ANTHROPIC_API: "an Anthropic Admin API key (sk-ant-admin01-…, Console → Settings → Admin keys); "
    "workspace API keys cannot read the usage and cost reports",
    ConnectorKind.OPENROUTER_API: "an OpenRouter management (provisioning) key; an inference key cannot read /activity",
    ConnectorKind.LITELLM_API: "the proxy's master key or a proxy-admin virtual key (sk-…); an internal user's key "
    "reads only its own requests from /spend/logs/v2",
}
MAX_MODELS_NAMED = 5
# Sources that never carry a bill: a gateway's lines are priced from the catalog (its own `spend` is an estimate).
UNBILLED_CONNECTORS = {ConnectorKind.LITELLM_API}


@dataclass(frozen=True)
class ConnectionReport:
    ok: bool
    message: str
    day: dt.date | None = None
    lines: int = 0
    projects: int = 0
    models: tuple[str, ...] = ()
    requests: int = 0
    billed: dict = field(default_factory=dict)  # currency -> Decimal, what the provider billed that day


def _client() -> HttpClient:
    # Someone is waiting on the page: a short timeout and one retry, not the minutes a worker may spend.
    return HttpClient(timeout=10, max_attempts=2, backoff_max=3)


def connection_check(
    *, connector: str, base_url: str, secret: str, client: HttpClient | None = None, today: dt.date | None = None
) -> ConnectionReport:
    """Fetch the last completed UTC day with `secret` and report what came back, or why nothing did."""
    try:
        source = api_source_for(connector)
    except LookupError as exc:
        return ConnectionReport(False, str(exc))
    if not secret:
        return ConnectionReport(False, "There is no key to test: paste the API key first.")
    base = (base_url or source.default_base_url).rstrip("/")
    today = today or timezone.now().astimezone(dt.UTC).date()
    day = today - dt.timedelta(days=1)  # the newest day every provider has finished counting
    start = dt.datetime.combine(day, dt.time(), tzinfo=dt.UTC)
    try:
        rows = list(
            source.fetch(
                client=client or _client(), base_url=base, secret=secret, start=start, end=start + dt.timedelta(days=1)
            )
        )
    except ProviderError as error:
        return ConnectionReport(False, _scrub(_explain(error, connector, base), secret), day=day)
    return _summary(rows, connector, base, day)


def account_connection_check(
    *, account: Account, base_url: str | None = None, secret: str = "", client=None
) -> ConnectionReport:
    """An existing account's connection: the key typed now, else the stored one; the base URL given, else its own."""
    if not secret:
        try:
            secret = account_credentials(account=account)
        except CredentialError as exc:
            return ConnectionReport(False, f"{exc} Paste the key again to replace it.")
    base = account.base_url if base_url is None else base_url
    return connection_check(connector=account.connector, base_url=base, secret=secret, client=client)


def _summary(rows: list[UsageRow], connector: str, base: str, day: dt.date) -> ConnectionReport:
    label = ConnectorKind(connector).label
    if not rows:
        return ConnectionReport(
            True,
            f"OK: {base} accepted the key for the {label}. It reports no usage on {day:%Y-%m-%d} (UTC): normal "
            "for a new or quiet organisation; the first pull reads the last 90 days.",
            day=day,
        )
    # Lines with tokens or requests are usage of a model; the rest are billed items (storage, tools, fees).
    models, items = Counter(), set()
    for row in rows:
        if row.requests or token_weight(row):
            models[row.model_raw or "(unnamed)"] += 1
        else:
            items.add(row.model_raw)
    projects = {row.project_ref for row in rows if row.project_ref}
    billed: dict[str, Decimal] = {}
    for row in rows:
        if row.cost is not None:
            billed[row.currency] = billed.get(row.currency, Decimal(0)) + row.cost
    requests = sum(row.requests for row in rows)
    named = ", ".join(model for model, _ in models.most_common(MAX_MODELS_NAMED))
    more = f" and {len(models) - MAX_MODELS_NAMED} more" if len(models) > MAX_MODELS_NAMED else ""
    unbilled = (
        "no billed cost: the lines are priced from the catalog"
        if connector in UNBILLED_CONNECTORS
        else "no billed cost yet"
    )
    money = "; ".join(f"{amount:,.2f} {currency} billed" for currency, amount in sorted(billed.items())) or unbilled
    parts = [_count(len(projects), "project")] if projects else []
    parts += [
        _count(len(rows), "line"),
        _count(requests, "request"),
        _count(len(models), "model") + (f" ({named}{more})" if models else ""),
    ]
    if items:
        parts.append(_count(len(items), "other billed item"))
    message = f"OK: the key reads the {label} at {base}. On {day:%Y-%m-%d} (UTC): {', '.join(parts)}; {money}."
    return ConnectionReport(True, message, day, len(rows), len(projects), tuple(models), requests, billed)


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def _status(error: ProviderError) -> str:
    # HttpClient names the status as "HTTP 401" in its messages; ProviderError carries no status of its own.
    found = re.search(r"HTTP (\d{3})", str(error))
    return found.group(1) if found else ""


def _explain(error: ProviderError, connector: str, base: str) -> str:
    """Say what the failure means for someone connecting an account, not for a run."""
    status, label = _status(error), ConnectorKind(connector).label
    default = api_source_for(connector).default_base_url
    if error.reason == "auth":
        return f"The key was refused (HTTP {status or '401/403'}): it needs {KEY_NEEDED[connector]}."
    if error.reason == "quota":
        return f"The key was accepted, but the provider reports insufficient quota (HTTP 429): {error}."
    if error.reason == "rate_limit":
        return (
            "The provider is rate-limiting this key (HTTP 429); the key was not refused. Try again in a "
            f"minute. ({error})"
        )
    text = str(error)
    if "could not reach" in text:
        waited = "did not answer in time" if "Timeout" in text else "could not be reached"
        return (
            f"{base} {waited} ({text}). Check the base URL (the {label} default is {default}) and that this "
            "server can reach it."
        )
    if error.reason == "server":
        return f"The provider answered with a server error; try again later. ({text})"
    if status == "404":
        return (
            f"{base} answered 404 (not found): it does not look like the {label}. Check the base URL; the "
            f"default is {default}. ({text})"
        )
    if error.reason == "malformed":
        return (
            f"Something answered at {base}, but not in the {label}'s format: check the base URL (default "
            f"{default}). ({text})"
        )
    return f"The provider refused the request: {text}"


def _scrub(message: str, secret: str) -> str:
    """A provider may echo the key in its error; the page must never show it."""
    return message.replace(secret, "[the key]") if secret else message
