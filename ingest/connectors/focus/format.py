"""What the two FOCUS readers share (focus/file.py reads rows, focus/batches.py reads column batches): the
containers' magic bytes and stream helpers, the columns and their header spellings, and the analysis of a row's
meter-like columns. Kept apart so neither reader imports the other's private names."""

import functools
import io
from typing import NamedTuple

from ingest.connectors.base import ProviderError
from ingest.connectors.focus.meters import (
    aws_usage_type,
    direction_from_details,
    first_direction,
    meter_model,
    provider_slug,
    tier_from_words,
)
from ingest.connectors.focus.values import json_object

GZIP_MAGIC = b"\x1f\x8b"
PARQUET_MAGIC = b"PAR1"
ZIP_MAGIC = b"PK\x03\x04"

REQUIRED = ("BilledCost", "BillingCurrency", "ChargePeriodStart", "ChargePeriodEnd", "ChargeCategory")
COLUMNS = REQUIRED + (
    "BillingPeriodStart",
    "BillingPeriodEnd",
    "ChargeClass",
    "ChargeDescription",
    "ConsumedQuantity",
    "ConsumedUnit",
    "PricingQuantity",
    "PricingUnit",
    "ProviderName",
    "PublisherName",
    "ServiceProviderName",
    "HostProviderName",
    "InvoiceIssuerName",
    "ServiceCategory",
    "ServiceSubcategory",
    "ServiceName",
    "SkuId",
    "SkuMeter",
    "SkuPriceDetails",
    "ResourceId",
    "ResourceName",
    "SubAccountId",
    "Tags",
    "PrincipalId",
    "CredentialId",
    "InvoiceId",
    # Vendor extensions worth reading (AWS §4.4, Azure §5.1); every other x_ column is ignored.
    "x_UsageType",
    "x_Operation",
    "x_ServiceCode",
    "x_SkuMeterName",
    "x_SkuDescription",
    "x_ResourceGroupName",
    "x_CostCenter",
    "x_InvoiceSectionName",
    "x_SkuMeterSubcategory",
    "x_ProjectId",
    "x_ProjectName",
    "x_Model",
    "x_ModelId",
    "x_ModelName",
)
# This product's own FOCUS export (docs/focus-export.md) puts a usage line on one row, its token classes in these
# columns and "Tokens" as the meter of a line mixing them: a reader of that file takes the classes from here.
OWN_TOKEN_COLUMNS = ("x_InputTokens", "x_CachedInputTokens", "x_CacheWriteTokens", "x_OutputTokens")
COLUMNS += OWN_TOKEN_COLUMNS
CHARGE_CATEGORIES = {"usage", "purchase", "tax", "credit", "adjustment"}
NULLS = {"", "null", "NULL", "Null"}


def _key(name: str) -> str:
    """Header matching key: `BilledCost`, `billed_cost` and `billedcost` are the same column; `x_` stays apart."""
    name = name.strip().lstrip("\ufeff")
    if name[:2].lower() == "x_":
        return "x_" + name[2:].replace("_", "").replace(" ", "").lower()
    return name.replace("_", "").replace(" ", "").lower()


_WANTED = {_key(name): name for name in COLUMNS}


def own_token_classes(get, quantity: int, where: str) -> tuple[int, int, int, int] | None:
    """(input, cached input, cache write, output) from OWN_TOKEN_COLUMNS when the row has them (this product's
    export); they must add up to its ConsumedQuantity. None for any other FOCUS file."""
    cells = [get[name] for name in OWN_TOKEN_COLUMNS]
    if not any(cells):
        return None
    try:
        counts = tuple(int(cell or 0) for cell in cells)
    except ValueError:
        raise ValueError(f"{where}: the token columns {', '.join(OWN_TOKEN_COLUMNS)} must be whole numbers") from None
    if sum(counts) != quantity or min(counts) < 0:
        raise ValueError(
            f"{where}: the token columns {', '.join(OWN_TOKEN_COLUMNS)} add up to {sum(counts)}, "
            f"not to its ConsumedQuantity of {quantity} tokens"
        )
    return counts


def resolve_header(header: list[str], file_name: str) -> dict[str, int]:
    """Canonical column name -> position; an exact (spec) spelling wins over a variant."""
    index: dict[str, int] = {}
    for position, raw in enumerate(header):
        canonical = _WANTED.get(_key(raw))
        if canonical and (canonical not in index or raw.strip() == canonical):
            index[canonical] = position
    missing = [name for name in REQUIRED if name not in index]
    if missing:
        raise ProviderError(
            f"{file_name}: not a FOCUS Cost-and-Usage export, missing column(s) {', '.join(missing)} "
            f"(a FOCUS file has at least {', '.join(REQUIRED)})"
        )
    return index


def read_up_to(stream, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = stream.read(size - len(data))
        if not chunk:
            break
        data += chunk
    return data


class Prefixed(io.RawIOBase):
    """The bytes already read to sniff the format, then the rest of the stream, as one raw stream."""

    def __init__(self, prefix: bytes, stream):
        self._prefix, self._stream = prefix, stream

    def readable(self):
        return True

    def readinto(self, buffer):
        if self._prefix:
            n = min(len(buffer), len(self._prefix))
            buffer[:n], self._prefix = self._prefix[:n], self._prefix[n:]
            return n
        readinto = getattr(self._stream, "readinto", None)
        if readinto is not None:  # straight into the buffer: the column reader passes ~800 bytes a line through here
            return readinto(buffer)
        chunk = self._stream.read(len(buffer))
        buffer[: len(chunk)] = chunk
        return len(chunk)


class Cells(dict):
    """One row's cells by canonical column name; a missing or null cell reads as ""."""

    def __missing__(self, key):
        return ""


# Everything derived from the meter-like columns; exports repeat the same few hundred meters, so the analysis
# is cached (bounded: memory stays flat) instead of re-running the regexes on every row.
METER_COLUMNS = (
    "SkuPriceDetails",
    "x_UsageType",
    "SkuMeter",
    "x_SkuMeterName",
    "x_SkuDescription",
    "SkuId",
    "ChargeDescription",
    "ServiceName",
    "ResourceName",
    "x_Model",
    "x_ModelId",
    "x_ModelName",
    "ServiceProviderName",
    "ProviderName",
    "HostProviderName",
    "InvoiceIssuerName",
    "PublisherName",
    "x_ServiceCode",
)


class Meter(NamedTuple):
    raw: str
    direction: str | None
    model: str
    tier: str
    provider_slug: str
    is_token_meter: bool


@functools.lru_cache(maxsize=8192)
def analyse(key: tuple) -> Meter:
    """`key`: the raw METER_COLUMNS cells of a row (a file's meters repeat, so this is cached)."""
    get = Cells((column, value.strip()) for column, value in zip(METER_COLUMNS, key) if value.strip() not in NULLS)
    details = json_object(get["SkuPriceDetails"], "SkuPriceDetails")
    usage_type = aws_usage_type(get["x_UsageType"]) or aws_usage_type(get["SkuMeter"])
    raw = get["x_UsageType"] or get["x_SkuMeterName"] or get["SkuMeter"] or get["x_SkuDescription"] or get["SkuId"]
    direction = direction_from_details(details) or (usage_type or {}).get("direction") or first_direction(get)
    return Meter(
        raw=raw,
        direction=direction,
        model=meter_model(get, details, usage_type, direction),
        tier=(usage_type or {}).get("tier") or tier_from_words(raw),
        provider_slug=provider_slug(get, usage_type),
        is_token_meter=direction is not None or "token" in raw.lower(),
    )
