"""Reading FOCUS cell values: charge and billing periods, the currency, ISO times, JSON objects and tags.

Exports repeat a few periods, currencies and tag sets over millions of rows, so the readers of those are cached
(bounded: memory stays flat). focus/file.py reads rows with them, focus/batches.py columns.
"""

import datetime as dt
import functools
import json
import operator
import re

TAG_COLUMNS = ("x_Operation", "x_ServiceCode", "x_ResourceGroupName", "x_CostCenter", "x_InvoiceSectionName")


@functools.lru_cache(maxsize=4096)
def charge_periods(charge_start: str, charge_end: str, billing_start: str, billing_end: str) -> tuple:
    """(start, end, billing start, billing end) in UTC; exports repeat a few periods, so this is cached."""
    start = parse_time(charge_start, "ChargePeriodStart")
    end = parse_time(charge_end, "ChargePeriodEnd")
    if end <= start:
        raise ValueError(f"ChargePeriodEnd {charge_end} is not after ChargePeriodStart {charge_start}")
    return (
        start,
        end,
        parse_time(billing_start, "BillingPeriodStart") if billing_start else None,
        parse_time(billing_end, "BillingPeriodEnd") if billing_end else None,
    )


@functools.lru_cache(maxsize=256)
def currency_code(text: str) -> str:
    currency = text.upper()
    if not re.fullmatch(r"[A-Z]{3}", currency):
        raise ValueError(f"BillingCurrency {text!r} is not an ISO 4217 code")
    return currency


def parse_time(text: str, column: str) -> dt.datetime:
    """ISO 8601 in UTC (`2025-05-01T00:00:00Z`); also Azure 1.0's `…T00:00Z`, fractions, offsets, a space."""
    if not text:
        raise ValueError(f"{column} is empty")
    value = text.strip()
    if value.endswith(" UTC"):
        value = value[:-4]
    if value[-1:] in ("Z", "z"):
        value = value[:-1] + "+00:00"
    try:
        parsed = dt.datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(f"{column} {text!r} is not an ISO 8601 date-time (YYYY-MM-DDTHH:mm:ssZ)") from None
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)).astimezone(dt.UTC)


def json_object(text: str, column: str) -> dict:
    if not text:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{column} is not valid JSON ({exc.msg})") from None
    if not isinstance(value, dict):
        raise ValueError(f"{column} must be a JSON object")
    return value


# A resource's Tags cell, parsed once: a per-resource file names 5,000+ resources in file order every day, and an LRU
# smaller than that missed on every row (each key evicted just before it came round again). ~0.5 KB an entry.
@functools.lru_cache(maxsize=16384)
def tag_items(text: str) -> tuple:
    return tuple(tags_of(text).items())


TAG_CELLS = operator.itemgetter("Tags", *TAG_COLUMNS, "ChargeClass")


@functools.lru_cache(maxsize=4096)  # ~1 KB an entry: a few MB at most, so memory stays flat
def tag_set_items(cells: tuple, meter: str, resource: str) -> tuple:
    """A row's tags as items, from its TAG_CELLS, meter and resource (rows repeat a few thousand: cached)."""
    tags_text, *columns, charge_class = cells
    tags = dict(tag_items(tags_text))
    for column, value in zip(TAG_COLUMNS, columns):
        if value:
            tags[column] = value
    if meter:
        tags["meter"] = meter
    if resource:
        tags["resource"] = resource
    if charge_class:
        tags["charge_class"] = charge_class.lower()
    return tuple(tags.items())


def tags_of(text: str) -> dict:
    """FOCUS Key-Value Format; Azure's older exports drop the braces (`"k": "v","k2": "v2"`)."""
    if not text:
        return {}
    if not text.lstrip().startswith("{"):
        text = "{" + text + "}"
    tags = {}
    for key, value in json_object(text, "Tags").items():
        if value is None or value is True:
            value = "true" if value is True else ""  # valueless tags are `true` in FOCUS
        elif value is False:
            value = "false"
        elif not isinstance(value, str):
            value = json.dumps(value)
        tags[str(key)] = value
    return tags
