"""OpenAI Administration API: billed cost from /organization/costs joined onto /organization/usage rows.

The Costs API is billed truth, but only by (day, project, line_item); the Usage API has the finer
dimensions (API key, model snapshot, batch, service tier) and the tokens, but no money. So:

- cost lines whose line_item names a model and a token direction ("gpt-4o-mini-2024-07-18, cached input",
  "priority | gpt-5, output, long context") are summed per (day, project, model) and that amount is allocated
  over the usage rows of the same (day, project, model) in proportion to `weigh(row)` (tokens × list price);
  the parts add up to the billed amount exactly (allocation.py);
- cost lines with no usage rows to carry them (tool calls, storage, fine-tuning, a model we read no usage for)
  become rows of their own with that cost and no tokens, one per (day, project, line_item);
- usage rows with no cost line (today, not billed yet) keep cost None, and the pipeline estimates them.

Every billed amount of the window is yielded exactly once. Reference: reference/provider-formats.md §1.
"""

import datetime as dt
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from decimal import Decimal, localcontext

from ingest.connectors.allocation import allocate
from ingest.connectors.api_base import ApiConnector, Pull, malformed
from ingest.connectors.base import ProviderError, UsageRow, token_weight
from ingest.connectors.openai.lines import (
    LineItem,
    completion_tokens,
    count,
    model_key,
    parse_amount,
    parse_line_item,
    ref,
    service_tier,
)


@dataclass(frozen=True)
class Endpoint:
    name: str  # how errors name it: "costs page 3"
    path: str
    result_object: str
    group_by: tuple[str, ...]
    limit: int  # buckets per page (the spec's maximum for 1d buckets)


COSTS = Endpoint("costs", "/organization/costs", "organization.costs.result", ("project_id", "line_item"), 180)
COMPLETIONS = Endpoint(
    "completions",
    "/organization/usage/completions",
    "organization.usage.completions.result",
    ("project_id", "api_key_id", "model", "batch", "service_tier"),
    31,
)
EMBEDDINGS = Endpoint(
    "embeddings",
    "/organization/usage/embeddings",
    "organization.usage.embeddings.result",
    ("project_id", "api_key_id", "model"),
    31,
)


@dataclass
class CostLine:
    period_start: dt.datetime
    period_end: dt.datetime
    project: str
    item: LineItem
    amount: Decimal
    currency: str
    source_ref: str


class OpenAIApi(ApiConnector):
    kind = "openai_api"
    default_base_url = "https://api.openai.com/v1"
    data_complaint = "no 'data' list of buckets"

    def rows(self, pull: Pull, weigh) -> Iterator[UsageRow]:
        reader = _Reader(self, pull)
        costs = reader.read(COSTS, _cost_line)
        usage = reader.read(COMPLETIONS, _completion_row) + reader.read(EMBEDDINGS, _embedding_row)
        # Built whole before the first row is yielded: a window of one account's daily lines is small, and the
        # join needs every usage row of a (day, project, model) before it can split that group's bill.
        yield from join(usage, costs, weigh or token_weight)

    def malformed(self, where: str, detail: str) -> ProviderError:
        return _malformed(where, detail)


def _malformed(where: str, detail: str) -> ProviderError:
    return malformed(f"OpenAI {where}", detail)


class _Reader:
    """Pages through one endpoint for the window and parses every result of the buckets that start in it."""

    def __init__(self, api: OpenAIApi, pull: Pull):
        self.api, self.pull, self.start, self.end = api, pull, pull.start, pull.end

    def read(self, endpoint: Endpoint, parse: Callable) -> list:
        items = []
        params = [
            ("start_time", str(int(self.start.timestamp()))),
            ("end_time", str(int(self.end.timestamp()))),
            ("bucket_width", "1d"),
            *(("group_by", field) for field in endpoint.group_by),  # repeated keys, as `requests` sends a list
            ("limit", str(endpoint.limit)),
        ]
        for where, _, data in self.api.pages(self.pull, endpoint.path, params, endpoint.name):
            for index, bucket in enumerate(data):
                period = self._period(bucket, index, where)
                results = bucket["results"]
                if period is None:
                    continue  # a bucket before the window (a partial first day) or after it
                for position, result in enumerate(results):
                    found = result.get("object") if isinstance(result, dict) else type(result).__name__
                    label = f"bucket {period[0].date().isoformat()} result {position + 1}"
                    if found != endpoint.result_object:
                        raise _malformed(
                            where, f"{label} is of unknown type {found!r}, expected {endpoint.result_object!r}"
                        )
                    try:
                        items.append(parse(result, period, where))
                    except ValueError as exc:
                        raise _malformed(where, f"{label}: {exc}") from None
        return items

    def _period(self, bucket, index: int, where: str) -> tuple[dt.datetime, dt.datetime] | None:
        """The bucket's [start_time, end_time) in UTC, or None when it does not start in the window."""
        label = f"bucket {index + 1}"
        if not isinstance(bucket, dict):
            raise _malformed(where, f"{label} is not an object")
        if not isinstance(bucket.get("results"), list):
            raise _malformed(where, f"{label} has no 'results' list")
        bounds = bucket.get("start_time"), bucket.get("end_time")
        if any(isinstance(b, bool) or not isinstance(b, int) for b in bounds) or bounds[1] <= bounds[0]:
            raise _malformed(where, f"{label} has no valid start_time/end_time (Unix seconds): {bounds!r}")
        start, end = (dt.datetime.fromtimestamp(b, dt.UTC) for b in bounds)
        return (start, end) if self.start <= start < self.end else None


def _cost_line(result: dict, period, where: str) -> CostLine:
    amount, currency = parse_amount(result.get("amount"))
    text = result.get("line_item")
    if text is not None and not isinstance(text, str):
        raise ValueError(f"line_item {text!r} is not text")
    # Not grouped by line_item (or OpenAI left it null): the amount still counts, as an opaque "" item.
    item = parse_line_item(text or "")
    return CostLine(*period, ref(result, "project_id"), item, amount, currency, where)


def _usage_row(result: dict, period, where: str) -> UsageRow:
    return UsageRow(
        period_start=period[0],
        period_end=period[1],
        model_raw=ref(result, "model"),
        requests=count(result, "num_model_requests", required=True),
        service_tier=service_tier(result),
        project_ref=ref(result, "project_id"),
        api_key_ref=ref(result, "api_key_id"),
        user_ref=ref(result, "user_id"),
        source_ref=f"OpenAI {where}",
    )


def _completion_row(result: dict, period, where: str) -> UsageRow:
    row = _usage_row(result, period, where)
    row.input_tokens, row.cached_input_tokens, row.cache_write_tokens, row.output_tokens = completion_tokens(result)
    return row


def _embedding_row(result: dict, period, where: str) -> UsageRow:
    row = _usage_row(result, period, where)
    row.input_tokens = count(result, "input_tokens", required=True)  # embeddings have no cache and no output
    return row


def join(usage: list[UsageRow], costs: list[CostLine], weigh: Callable[[UsageRow], Decimal]) -> list[UsageRow]:
    """Usage rows with their share of the billed cost, then the billed lines no usage row carries."""
    # Amounts come with up to ~39 decimals; the default 28-digit context would round their sums.
    with localcontext() as ctx:
        ctx.prec = 120
        return _join(usage, costs, weigh)


def _join(usage: list[UsageRow], costs: list[CostLine], weigh) -> list[UsageRow]:
    groups: dict[tuple, list[CostLine]] = defaultdict(list)
    loose: list[CostLine] = []
    for line in costs:
        if line.item.per_token:
            groups[(line.period_start, line.project, model_key(line.item.model))].append(line)
        else:
            loose.append(line)

    carriers: dict[tuple, list[UsageRow]] = defaultdict(list)
    for row in usage:
        carriers[(row.period_start, row.project_ref, model_key(row.model_raw))].append(row)

    for key, rows in carriers.items():
        lines = groups.pop(key, None)
        if not lines:
            continue  # not billed (yet): cost stays None and the pipeline estimates it
        currencies = {line.currency for line in lines}
        if len(currencies) > 1:
            raise ProviderError(
                f"OpenAI costs for {key[2]} in project {key[1] or '(none)'} on {key[0].date().isoformat()} come in "
                f"several currencies ({', '.join(sorted(currencies))}); a usage line carries one",
                reason="malformed",
            )
        total = sum((line.amount for line in lines), Decimal(0))
        for row, part in zip(rows, split(total, [Decimal(weigh(row)) for row in rows])):
            row.cost, row.currency = part, lines[0].currency

    # What no usage row carries stays billed, as a line of its own: nothing of the bill is lost.
    leftover = [line for lines in groups.values() for line in lines] + loose
    return usage + _cost_rows(leftover)


def split(total: Decimal, weights: list[Decimal]) -> list[Decimal]:
    """allocate(), made exact for amounts finer than its 18 decimals (the stored scale).

    OpenAI sends up to ~39 decimals; allocate() quantizes the total, so the sub-quantum rest would vanish.
    It goes to the largest part, where the column's rounding treats it as it would on an unsplit line.
    """
    parts = allocate(total, weights)
    rest = total - sum(parts, Decimal(0))
    if rest:
        largest = max(range(len(parts)), key=lambda i: abs(parts[i]))
        parts[largest] += rest
    return parts


def _cost_rows(lines: list[CostLine]) -> list[UsageRow]:
    """One zero-token billed row per (day, project, line_item, currency); repeats of a key are summed."""
    merged: dict[tuple, tuple[CostLine, Decimal]] = {}
    for line in lines:
        key = (line.period_start, line.project, line.item.text, line.currency)
        first, amount = merged.get(key, (line, Decimal(0)))
        merged[key] = (first, amount + line.amount)
    rows = []
    for line, amount in merged.values():
        rows.append(
            UsageRow(
                period_start=line.period_start,
                period_end=line.period_end,
                model_raw=line.item.model or line.item.text,
                cost=amount,
                currency=line.currency,
                service_tier=line.item.tier,
                project_ref=line.project,
                # The raw line item tells "gpt-4o, input" from "gpt-4o, output" and keeps the lines distinct.
                tags={"line_item": line.item.text} if line.item.text else {},
                charge_category="usage",
                source_ref=f"OpenAI {line.source_ref}",
            )
        )
    return rows
