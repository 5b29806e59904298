"""FOCUS 1.2 **Cost and Usage** export of one month's usage lines (issue 14, docs/focus-export.md).

The ONE definition of the columns (`COLUMNS`), used by the Reports page's download
(`/reports/<YYYY-MM>/focus.csv`), `GET /api/v1/focus?month=YYYY-MM` and `python manage.py export_focus`. No ORM
here: finops.selectors.usage_focus streams the month's lines as dicts (`UsageLine` values with their account,
provider, tags, team and workload, plus `list_cost`), and each column is a function of one such dict.

One row per usage line, never split: a line's cost is one amount (billed by the provider, or estimated once), so
the rows carry exactly the stored amounts and every dollar of the month is in the file once. ConsumedQuantity is
the line's tokens of every class; the classes are in `x_` columns and SkuMeter names the class when a line has
only one (as the FOCUS working draft's per-token rows do). The 57 FOCUS 1.2 columns come first, in the
specification's (alphabetical) order, `null` as an empty cell; then the `x_` columns.
"""

import json
from collections.abc import Callable, Iterable, Iterator
from decimal import Decimal

from finops.models import ChargeCategory, CostBasis
from finops.reports.cells import SafeCsvWriter

FOCUS_VERSION = "1.2"
ZERO = Decimal(0)
TOKEN_CLASSES = (  # (line field, the FOCUS working draft's SkuMeter for a row of that class alone)
    ("input_tokens", "Input Tokens"),
    ("cached_input_tokens", "Cache Read Input Tokens"),
    ("cache_write_tokens", "Cache Write Input Tokens"),
    ("output_tokens", "Output Tokens"),
)
SERVICE_CATEGORY = "AI and Machine Learning"
SERVICE_SUBCATEGORY = "Generative AI"
BILLING_ACCOUNT_TYPE = "Inference Provider Account"


# --- cell formats (FOCUS 1.2 attributes: Numeric, Date/Time, Key-Value) ---

def money(value: Decimal | None) -> str:
    """A plain decimal, exactly as stored (no exponent, no rounding), trailing zeros dropped: `-5`, `0.0000045`."""
    if value is None:
        return ""
    text = format(value, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("", "-0") else text


def utc_time(value) -> str:
    """ISO 8601 UTC with seconds and `Z`, the only Date/Time form FOCUS allows."""
    return value.strftime("%Y-%m-%dT%H:%M:%SZ")


def key_value(pairs: dict) -> str:
    """A JSON object with flat values (FOCUS Key-Value Format forbids nested objects and arrays)."""
    flat = {key: (value if value is None or isinstance(value, (str, int, float, bool)) else json.dumps(value, sort_keys=True))
            for key, value in pairs.items()}
    return json.dumps(flat, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


# --- what each line means in FOCUS terms ---

def is_usage(row: dict) -> bool:
    return row["charge_category"] == ChargeCategory.USAGE


def tokens(row: dict) -> int:
    return sum(row[field] for field, _ in TOKEN_CLASSES)


def billed_cost(row: dict) -> Decimal:
    """What the provider billed: the cost of a billed line; 0 for an estimate (no invoice carries it, so
    BilledCost adds up to the bills) and for unpriced usage (x_CostBasis says which)."""
    return row["cost"] if row["cost_basis"] == CostBasis.BILLED else ZERO


def effective_cost(row: dict) -> Decimal:
    """The cost the month's spend counts: billed or estimated; 0 for unpriced usage (FOCUS wants a number;
    x_CostBasis = `unpriced` and the description say the cost is unknown, not free)."""
    return row["cost"] if row["cost"] is not None else ZERO


def list_cost(row: dict) -> Decimal:
    """Tokens × the catalog's list price in the line's currency when one applies (the selector works it out);
    otherwise the cost as charged (no discount known)."""
    return row["list_cost"] if row["list_cost"] is not None else effective_cost(row)


def pricing_quantity(row: dict) -> Decimal | None:
    """Usage is priced per million tokens (the catalog's unit); a purchase is one unit; taxes, credits and
    adjustments have no pricing quantity (FOCUS: null for them)."""
    if is_usage(row):
        return Decimal(tokens(row)).scaleb(-6)
    return Decimal(1) if row["charge_category"] == ChargeCategory.PURCHASE else None


def pricing_unit(row: dict) -> str:
    if is_usage(row):
        return "1000000 Tokens"
    return "Units" if row["charge_category"] == ChargeCategory.PURCHASE else ""


def priced_thing(row: dict) -> bool:
    """Usage and purchases have a price (currency, category); taxes, credits and adjustments do not."""
    return row["charge_category"] in (ChargeCategory.USAGE, ChargeCategory.PURCHASE)


def sku_meter(row: dict) -> str:
    if not row["model"]:
        return ""
    classes = [meter for field, meter in TOKEN_CLASSES if row[field]]
    return classes[0] if len(classes) == 1 else "Tokens"


def sku_id(row: dict) -> str:
    """The model as this provider sells it (`openai/gpt-4o`, `/batch` for a service tier): what a price attaches to."""
    if not row["model"]:
        return ""
    tier = f"/{row['service_tier']}" if row["service_tier"] else ""
    return f"{row['provider__slug']}/{row['model']}{tier}"


BASIS_WORDS = {
    CostBasis.BILLED: "billed by {provider}",
    CostBasis.ESTIMATED: "estimated from tokens at the catalog price",
    CostBasis.UNPRICED: "no known price: cost unknown, not included (shown as 0)",
}


def charge_description(row: dict) -> str:
    basis = BASIS_WORDS[row["cost_basis"]].format(provider=row["provider__name"])
    if is_usage(row):
        return f"{row['model_raw'] or row['model']}: {tokens(row):,} tokens, {row['requests']:,} requests, {basis}"
    what = ChargeCategory(row["charge_category"]).label
    return f"{what}{' for ' + row['model_raw'] if row['model_raw'] else ''} from {row['provider__name']}, {basis}"


def tags(row: dict) -> str:
    """The line's own tags, then the attribution: `team`, `workload` (null when no rule claims the line:
    unattributed) and the team's `cost_center` when it has one. A line tag of the same name is kept as
    `line:<name>`, so nothing the provider sent is lost."""
    own = dict(row["tag_set__tags"] or {})
    attributed = {"team": row["signature__team__slug"], "workload": row["signature__workload__slug"]}
    if row["signature__team__cost_center"]:
        attributed["cost_center"] = row["signature__team__cost_center"]
    for name in attributed:
        if name in own:
            own[f"line:{name}"] = own.pop(name)
    return key_value({**own, **attributed})


def reporting_billed(row: dict) -> Decimal:
    return row["reporting_cost"] if row["cost_basis"] == CostBasis.BILLED else ZERO


def _when(test: Callable[[dict], bool], value: Callable[[dict], str]) -> Callable[[dict], str]:
    return lambda row: value(row) if test(row) else ""


def _null(row: dict) -> str:
    return ""


# The FOCUS 1.2 Cost-and-Usage columns (all 57, alphabetical as in the specification), then this product's x_ ones.
COLUMNS: list[tuple[str, Callable[[dict], str]]] = [
    ("AvailabilityZone", _null),
    ("BilledCost", lambda r: money(billed_cost(r))),
    ("BillingAccountId", lambda r: str(r["account_id"])),
    ("BillingAccountName", lambda r: r["account__name"]),
    ("BillingAccountType", lambda r: BILLING_ACCOUNT_TYPE),
    ("BillingCurrency", lambda r: r["currency"]),
    ("BillingPeriodEnd", lambda r: utc_time(r["billing_period_end"])),
    ("BillingPeriodStart", lambda r: utc_time(r["billing_period_start"])),
    ("CapacityReservationId", _null),
    ("CapacityReservationStatus", _null),
    ("ChargeCategory", lambda r: ChargeCategory(r["charge_category"]).label),
    ("ChargeClass", _null),  # no line is a correction of an earlier invoice: a restated export replaces its lines
    ("ChargeDescription", charge_description),
    ("ChargeFrequency", lambda r: "Usage-Based" if is_usage(r) else "One-Time"),
    ("ChargePeriodEnd", lambda r: utc_time(r["period_end"])),
    ("ChargePeriodStart", lambda r: utc_time(r["period_start"])),
    ("CommitmentDiscountCategory", _null),
    ("CommitmentDiscountId", _null),
    ("CommitmentDiscountName", _null),
    ("CommitmentDiscountQuantity", _null),
    ("CommitmentDiscountStatus", _null),
    ("CommitmentDiscountType", _null),
    ("CommitmentDiscountUnit", _null),
    ("ConsumedQuantity", _when(is_usage, lambda r: str(tokens(r)))),
    ("ConsumedUnit", _when(is_usage, lambda r: "Tokens")),
    ("ContractedCost", lambda r: money(effective_cost(r))),  # the price paid is the contracted one
    ("ContractedUnitPrice", _null),  # a line mixes token classes of different prices: no one unit price
    ("EffectiveCost", lambda r: money(effective_cost(r))),
    ("InvoiceId", _null),
    ("InvoiceIssuerName", lambda r: r["provider__name"]),
    ("ListCost", lambda r: money(list_cost(r))),
    ("ListUnitPrice", _null),
    ("PricingCategory", _when(priced_thing, lambda r: "Standard")),
    ("PricingCurrency", _when(priced_thing, lambda r: r["currency"])),
    ("PricingCurrencyContractedUnitPrice", _null),
    ("PricingCurrencyEffectiveCost", _when(priced_thing, lambda r: money(effective_cost(r)))),
    ("PricingCurrencyListUnitPrice", _null),
    ("PricingQuantity", lambda r: money(pricing_quantity(r))),
    ("PricingUnit", pricing_unit),
    ("ProviderName", lambda r: r["provider__name"]),
    ("PublisherName", lambda r: r["provider__name"]),
    ("RegionId", _null),
    ("RegionName", _null),
    ("ResourceId", lambda r: r["api_key_ref"]),
    ("ResourceName", _null),
    ("ResourceType", _when(lambda r: bool(r["api_key_ref"]), lambda r: "API Key")),
    ("ServiceCategory", lambda r: SERVICE_CATEGORY),
    ("ServiceName", lambda r: r["provider__name"]),
    ("ServiceSubcategory", lambda r: SERVICE_SUBCATEGORY),
    ("SkuId", sku_id),
    ("SkuMeter", sku_meter),
    ("SkuPriceDetails", _null),
    ("SkuPriceId", _null),
    ("SubAccountId", lambda r: r["project_ref"]),
    ("SubAccountName", lambda r: r["project_ref"]),  # providers' usage data name projects by id only
    ("SubAccountType", _when(lambda r: bool(r["project_ref"]), lambda r: "Project")),
    ("Tags", tags),
    ("x_UsageLineId", lambda r: str(r["id"])),
    ("x_CostBasis", lambda r: r["cost_basis"]),
    ("x_ReportingCurrency", lambda r: r["reporting_currency"]),
    ("x_ReportingBilledCost", lambda r: money(reporting_billed(r))),
    ("x_ReportingEffectiveCost", lambda r: money(r["reporting_cost"])),  # empty when unpriced: unknown
    ("x_InputTokens", lambda r: str(r["input_tokens"])),
    ("x_CachedInputTokens", lambda r: str(r["cached_input_tokens"])),
    ("x_CacheWriteTokens", lambda r: str(r["cache_write_tokens"])),
    ("x_OutputTokens", lambda r: str(r["output_tokens"])),
    ("x_Requests", lambda r: str(r["requests"])),
    ("x_Model", lambda r: r["model"]),
    ("x_ModelAsBilled", lambda r: r["model_raw"]),
    ("x_ServiceTier", lambda r: r["service_tier"]),
]
HEADER = [name for name, _ in COLUMNS]
FOCUS_COLUMNS = [name for name in HEADER if not name.startswith("x_")]


def cells(row: dict) -> list[str]:
    return [value(row) for _, value in COLUMNS]


class _Chunk:
    """A write target the csv module fills and `csv_chunks` empties: the CSV text of the last few rows."""

    def __init__(self):
        self.parts: list[str] = []

    def write(self, text: str) -> None:
        self.parts.append(text)

    def take(self) -> str:
        text, self.parts = "".join(self.parts), []
        return text


def csv_chunks(rows: Iterable[dict], *, rows_per_chunk: int = 1000) -> Iterator[str]:
    """The CSV as text chunks of `rows_per_chunk` rows, the header first (a month without lines: the header
    alone). Memory holds one chunk, whatever the month's size: the streamed responses send each as it comes."""
    chunk = _Chunk()
    writer = SafeCsvWriter(chunk, lineterminator="\n")
    writer.writerow(HEADER)
    for count, row in enumerate(rows, 1):
        writer.writerow(cells(row))
        if count % rows_per_chunk == 0:
            yield chunk.take()
    yield chunk.take()


def write_focus_csv(rows: Iterable[dict], out) -> int:
    """The CSV on `out` (a text stream); returns the number of rows written."""
    counted = 0

    def counting():
        nonlocal counted
        for row in rows:
            counted += 1
            yield row

    for text in csv_chunks(counting()):
        out.write(text)
    return counted


def file_name(month_key: str) -> str:
    return f"usage-{month_key}-focus-{FOCUS_VERSION}.csv"
