"""Anthropic Admin API: the usage report per API key, priced by the cost report (provider-formats.md §2).

Two endpoints, both paginated by day buckets (`has_more` / `next_page` → `page`):

- `/v1/organizations/usage_report/messages` gives tokens per day × workspace × API key × model × tier …,
  already in disjoint classes (uncached input, cache read, 5 m + 1 h cache writes, output).
- `/v1/organizations/cost_report` gives billed cost, in CENTS as decimal strings ("123.45" = $1.2345),
  per day × workspace × description; it cannot be grouped by API key.

So the billed cost of each (day, workspace, model) is split over the usage lines it covers with
`allocation.allocate`, weighted by `weigh(row)`; the lines' costs add up to the cost report exactly. Usage no cost
covers keeps `cost=None` (priced from the catalog downstream). Priority Tier usage is never in the cost report
(§2.3), so it takes no share of it.

Costs that name no model (`cost_type` web_search, code_execution, session_usage, …) are not tokens: folding them
into a model's lines would put web searches inside its $/M tokens. Each becomes lines of its own, named after the
charge ("web search"), with no tokens: one per API key (and user, tags) of the workspace-day, holding that key's
share of the charge by the same weights, so attribution gives each team its part and team totals stay whole. A
cost nothing covers becomes one line of its own with no tokens.
"""

import datetime as dt
import re
from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Context, Decimal, Inexact

from finops.core.modelids import normalise_model
from ingest.connectors.allocation import allocate
from ingest.connectors.api_base import ApiConnector, Pull
from ingest.connectors.api_base import malformed as _malformed
from ingest.connectors.base import ProviderError, UsageRow, token_weight
from ingest.connectors.parsing import parse_decimal
from ingest.connectors.payload import readers

API_VERSION = "2023-06-01"
USAGE_PATH = "/v1/organizations/usage_report/messages"
COST_PATH = "/v1/organizations/cost_report"
# `speed` is left out on purpose: grouping by it needs a beta header (fast-mode-2026-02-01).
USAGE_GROUP_BY = (
    "workspace_id",
    "api_key_id",
    "model",
    "service_tier",
    "context_window",
    "inference_geo",
    "account_id",
    "service_account_id",
)
COST_GROUP_BY = ("workspace_id", "description")
PAGE_LIMIT = 31  # buckets per page: the maximum for 1d buckets
# "Priority Tier costs are not in the cost endpoint": these lines keep cost=None and are priced downstream.
UNBILLED_TIERS = {"priority", "priority_on_demand"}
# Sums of amounts: wide enough that no digit of a provider amount is ever rounded away (and it would raise if one were).
_EXACT = Context(prec=100, traps=[Inexact])
_FAMILIES = ("opus", "sonnet", "haiku", "instant")
_DESCRIPTION_MODEL = re.compile(r"^\s*(claude\b.*?)\s+usage\b", re.IGNORECASE)


class AnthropicApi(ApiConnector):
    kind = "anthropic_api"
    default_base_url = "https://api.anthropic.com"
    data_complaint = "expected a `data` list of buckets"

    def headers(self, secret: str) -> dict:
        return {"x-api-key": secret, "anthropic-version": API_VERSION}

    def rows(self, pull: Pull, weigh):
        window = [
            ("starting_at", _rfc3339(pull.start)),
            ("ending_at", _rfc3339(pull.end)),
            ("bucket_width", "1d"),
            ("limit", str(PAGE_LIMIT)),
        ]
        # Both reports are read before anything is yielded: the join needs every line of a day on both sides.
        cost_pages = _results(self, pull, COST_PATH, window + _grouped(COST_GROUP_BY), "cost_report")
        costs = [_cost(result, bucket, where) for where, bucket, result in cost_pages]
        usage_pages = _results(self, pull, USAGE_PATH, window + _grouped(USAGE_GROUP_BY), "usage_report/messages")
        usage = [_usage(result, bucket, where) for where, bucket, result in usage_pages]
        yield from _join(usage, costs, weigh or token_weight)


# --- pages, buckets and results ---


@dataclass
class _Bucket:
    start: dt.datetime
    end: dt.datetime


def _grouped(keys) -> list[tuple[str, str]]:
    return [("group_by[]", key) for key in keys]  # brackets, as in every official example


def _results(api: ApiConnector, pull: Pull, path: str, params: list, name: str):
    """(where, bucket, result) for every result of every bucket starting in the window, over all pages."""
    for where, _, buckets in api.pages(pull, path, params, f"Anthropic {name}"):
        for number, raw in enumerate(buckets, 1):
            here = f"{where} bucket {number}"
            if not isinstance(raw, dict):
                raise _malformed(here, "expected an object")
            bucket = _Bucket(
                _time(raw.get("starting_at"), here, "starting_at"), _time(raw.get("ending_at"), here, "ending_at")
            )
            if bucket.end <= bucket.start:
                raise _malformed(here, "ending_at is not after starting_at")
            results = raw.get("results")
            if results is None:
                results = []
            elif not isinstance(results, list):
                raise _malformed(here, "`results` is not a list")
            if not pull.start <= bucket.start < pull.end:
                continue  # another window's bucket: that window reads it
            here = f"{where} bucket {bucket.start:%Y-%m-%d}"
            for index, result in enumerate(results, 1):
                if not isinstance(result, dict):
                    raise _malformed(f"{here} result {index}", "expected an object")
                yield f"{here} result {index}", bucket, result


def _usage(result: dict, bucket: _Bucket, where: str) -> UsageRow:
    cache_creation = result.get("cache_creation") or {}
    if not isinstance(cache_creation, dict):
        raise _malformed(where, "cache_creation is not an object")
    tags = {
        name: value
        for name, value in (
            ("context_window", _text(result, "context_window", where)),
            ("inference_geo", _text(result, "inference_geo", where)),
            ("service_account", _text(result, "service_account_id", where)),
        )
        if value
    }
    return UsageRow(
        period_start=bucket.start,
        period_end=bucket.end,
        model_raw=_text(result, "model", where),
        input_tokens=_count(result, "uncached_input_tokens", where),
        cached_input_tokens=_count(result, "cache_read_input_tokens", where),
        cache_write_tokens=_count(cache_creation, "ephemeral_5m_input_tokens", where)
        + _count(cache_creation, "ephemeral_1h_input_tokens", where),
        output_tokens=_count(result, "output_tokens", where),
        service_tier=_text(result, "service_tier", where),
        project_ref=_text(result, "workspace_id", where),  # null: the default workspace
        api_key_ref=_text(result, "api_key_id", where),  # null: Console / Workbench usage
        user_ref=_text(result, "account_id", where),
        tags=tags,
        source_ref=where,
    )


@dataclass
class _Cost:
    start: dt.datetime
    end: dt.datetime
    workspace: str
    model_raw: str  # the `model` field, else the model named by the description ("Claude Haiku 3.5")
    model_key: str | None  # None: a cost of no model (web search, code execution, sessions)
    description: str
    charge: str  # what a cost of no model is, as its lines are named: "web search", "code execution", …
    service_tier: str
    amount: Decimal  # dollars
    currency: str
    where: str


def _cost(result: dict, bucket: _Bucket, where: str) -> _Cost:
    description = _text(result, "description", where)
    model_raw = _text(result, "model", where)
    if not model_raw:
        named = _DESCRIPTION_MODEL.match(description)
        model_raw = named.group(1) if named else ""
    return _Cost(
        start=bucket.start,
        end=bucket.end,
        workspace=_text(result, "workspace_id", where),
        model_raw=model_raw,
        model_key=_model_key(model_raw) if model_raw else None,
        description=description,
        charge=_charge_name(_text(result, "cost_type", where), description),
        service_tier=_text(result, "service_tier", where),
        amount=_cents_to_dollars(result.get("amount"), where),
        currency=(_text(result, "currency", where) or "USD").upper(),
        where=where,
    )


# --- the join: billed cost per (day, workspace, model) split over the usage lines it covers ---


@dataclass
class _CostGroup:
    first: _Cost
    total: Decimal = Decimal(0)
    tiers: set = field(default_factory=set)


def _join(usage: list[UsageRow], costs: list[_Cost], weigh):
    billable = defaultdict(list)  # (day, workspace) -> indexes of the usage lines the cost report covers
    for index, row in enumerate(usage):
        if row.service_tier.lower() not in UNBILLED_TIERS:
            billable[(row.period_start, row.project_ref)].append(index)
    model_keys = [_model_key(row.model_raw) for row in usage]

    groups: dict[tuple, _CostGroup] = {}
    for cost in costs:
        # Costs of a model join on the model; the others (web search, code execution) on the workspace-day, one
        # group per description so that, uncovered, each keeps its own line.
        kind = cost.model_key if cost.model_key is not None else ("description", cost.description)
        group = groups.setdefault((cost.start, cost.workspace, kind, cost.currency), _CostGroup(cost))
        group.total = _EXACT.add(group.total, cost.amount)
        group.tiers.add(cost.service_tier)

    shares: list[Decimal | None] = [None] * len(usage)
    currencies: list[str | None] = [None] * len(usage)
    uncovered, charges = [], []
    for (day, workspace, kind, currency), group in groups.items():
        covered = [
            i for i in billable.get((day, workspace), []) if group.first.model_key is None or model_keys[i] == kind
        ]
        if not covered:
            if group.total != 0:  # a zero cost with no usage says nothing
                uncovered.append(_cost_only_row(group))
            continue
        parts = _split(group.total, [usage[i] for i in covered], weigh)
        if group.first.model_key is None:
            charges += _charge_rows(group, [usage[i] for i in covered], parts)
            continue
        for i, part in zip(covered, parts):
            if currencies[i] not in (None, currency):
                raise ProviderError(
                    f"{group.first.where}: billed in {currency} and {currencies[i]} for the same usage line; "
                    "one line holds one currency",
                    reason="malformed",
                )
            currencies[i] = currency
            shares[i] = part if shares[i] is None else _EXACT.add(shares[i], part)

    for row, share, currency in zip(usage, shares, currencies):
        if share is not None:
            row.cost, row.currency = share, currency
        yield row
    yield from charges
    yield from uncovered


def _charge_rows(group: _CostGroup, covered: list[UsageRow], parts: list[Decimal]) -> list[UsageRow]:
    """A charge of no model as lines of its own: each covered key's (user's, tags') share, no tokens."""
    cost = group.first
    by_key: dict[tuple, Decimal] = {}
    owners: dict[tuple, UsageRow] = {}
    for row, part in zip(covered, parts):
        key = (row.project_ref, row.api_key_ref, row.user_ref, tuple(sorted(row.tags.items())))
        by_key[key] = _EXACT.add(by_key.get(key, Decimal(0)), part)
        owners.setdefault(key, row)
    return [
        UsageRow(
            period_start=cost.start,
            period_end=cost.end,
            model_raw=cost.charge,
            cost=amount,
            currency=cost.currency,
            project_ref=owner.project_ref,
            api_key_ref=owner.api_key_ref,
            user_ref=owner.user_ref,
            tags=dict(owner.tags),
            source_ref=f"{cost.where} ({cost.description}: this key's share of the workspace's charge)",
        )
        for key, amount in by_key.items()
        for owner in (owners[key],)
    ]


def _charge_name(cost_type: str, description: str) -> str:
    """`web_search` → "web search"; without a cost_type, the description ("Web Search Usage")."""
    if cost_type and cost_type != "tokens":
        return cost_type.replace("_", " ").strip().lower()
    return description


def _split(total: Decimal, rows: list[UsageRow], weigh) -> list[Decimal]:
    """`total` over `rows` by weight, summing to `total` exactly (even past the 18 decimals allocate keeps)."""
    weights = [Decimal(weigh(row)) for row in rows]
    if not any(w > 0 for w in weights):
        # Nothing priced (weigh knows no price for these models): tokens still say who used more.
        weights = [token_weight(row) for row in rows]
    parts = allocate(total, weights)
    allocated = Decimal(0)
    for part in parts:
        allocated = _EXACT.add(allocated, part)
    rest = _EXACT.subtract(total, allocated)
    if rest:
        heaviest = max(range(len(parts)), key=lambda i: weights[i])
        parts[heaviest] = _EXACT.add(parts[heaviest], rest)
    return parts


def _cost_only_row(group: _CostGroup) -> UsageRow:
    cost = group.first
    tiers = group.tiers - {""}
    return UsageRow(
        period_start=cost.start,
        period_end=cost.end,
        model_raw=cost.model_raw or cost.charge,
        cost=group.total,
        currency=cost.currency,
        service_tier=tiers.pop() if len(tiers) == 1 else "",
        project_ref=cost.workspace,
        source_ref=f"{cost.where} (billed, no usage line covers it)",
    )


def _model_key(name: str) -> str:
    """One key for a model id and the name a description gives it.

    `claude-3-5-haiku-20241022` and "Claude Haiku 3.5" both become `claude-haiku-3.5`; `claude-sonnet-4-5-20250929`
    and "Claude Sonnet 4.5" both `claude-sonnet-4.5`. A name with no Claude family keeps its normalised id.
    """
    model = normalise_model(name)
    words = re.findall(r"[a-z]+|\d+", model)
    family = next((w for w in words if w in _FAMILIES), None)
    if family is None:
        return model
    return f"claude-{family}-" + ".".join(w for w in words if w.isdigit() and len(w) <= 2)


# --- fields ---


def _rfc3339(moment: dt.datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _time(value, where: str, name: str) -> dt.datetime:
    if not isinstance(value, str):
        raise _malformed(where, f"{name} is missing")
    try:
        moment = dt.datetime.fromisoformat(value)
    except ValueError:
        raise _malformed(where, f"{name} {value!r} is not an RFC 3339 time") from None
    if moment.tzinfo is None:
        raise _malformed(where, f"{name} {value!r} has no time zone")
    return moment.astimezone(dt.UTC)


def _cents_to_dollars(value, where: str) -> Decimal:
    """The cost report's amount, a decimal string in cents ("123.45" = $1.2345), as exact dollars."""
    try:
        cents = _decimal(value)
    except ValueError as exc:
        raise _malformed(where, f"amount {exc}") from None
    sign, digits, exponent = cents.as_tuple()
    return Decimal((sign, digits, exponent - 2))  # ÷ 100 by moving the point: exact at any length


def _decimal(value) -> Decimal:
    """A decimal string, or a JSON number (the HTTP client reads those as Decimal), exactly."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float, Decimal)):
        raise ValueError(f"is {value!r}, not a decimal string")
    if isinstance(value, str):
        return parse_decimal(value)
    if isinstance(value, float):
        value = repr(value)  # the shortest repr is the number as written (0.015, not 0.01499…)
    return parse_decimal(str(value))


_text, _count = readers(_malformed)
