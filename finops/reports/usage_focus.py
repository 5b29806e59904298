"""FOCUS 1.2 **Cost and Usage** export of one month's usage lines (issue 14, docs/focus-export.md).

The ONE definition of the columns (`COLUMNS`), used by the Reports page's download
(`/reports/<YYYY-MM>/focus.csv`), `GET /api/v1/focus?month=YYYY-MM` and `python manage.py export_focus`. No ORM
here: finops.selectors.usage_focus streams the month's lines as dicts (`UsageLine` values with their account,
provider, tags, team and workload, plus the catalog's `split_rates` and `list_rates`); `focus_rows` turns each
into its FOCUS rows, and each column is a function of one such row.

One row per token class of a usage line (FOCUS wants one ConsumedQuantity per row, and FOCUS readers, this
product's own importer included, tell input from output by the row's meter): a line holding one class, or none, is
one row with its cost as stored; a line mixing classes is split into a row per class, its one cost apportioned by
the catalog's list price of each class (by tokens where the catalog has no price), to 18 decimal places with the
remainder on the last row, so the rows of a line add up to its cost exactly. Taxes, credits, purchases and
adjustments are one row each. The 57 FOCUS 1.2 columns come first, in the specification's (alphabetical) order,
null as an empty cell; then the `x_` columns.
"""

import json
from collections.abc import Callable, Iterable, Iterator
from decimal import Decimal, localcontext
from functools import lru_cache

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
QUANTUM = Decimal(1).scaleb(-18)  # the fact table's precision (NUMERIC(38, 18)): a split share is rounded to it
WIDE = 80  # digits of Decimal arithmetic for shares: a stored amount has up to 38


# --- cell formats (FOCUS 1.2 attributes: Numeric, Date/Time, Key-Value) ---

def money(value: Decimal | None) -> str:
    """A plain decimal, exactly as stored (no exponent, no rounding), trailing zeros dropped: `-5`, `0.0000045`."""
    if value is None:
        return ""
    text = format(value, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("", "-0") else text


@lru_cache(maxsize=8192)  # a month's lines share a few hundred periods: strftime once per distinct one
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


def line_tokens(line: dict) -> int:
    return sum(line[field] for field, _ in TOKEN_CLASSES)


def split(amount: Decimal | None, weights: list) -> list[Decimal | None]:
    """`amount` in shares proportional to `weights`, each rounded to QUANTUM but the last, which takes the rest:
    the shares add up to `amount` exactly. None (unpriced) stays None in every share."""
    if amount is None:
        return [None] * len(weights)
    with localcontext(prec=WIDE):
        total = sum(weights)
        shares = [(amount * weight / total).quantize(QUANTUM) for weight in weights[:-1]]
        return shares + [amount - sum(shares)]


def focus_rows(lines: Iterable[dict]) -> Iterator[dict]:
    """The FOCUS rows of each line, in line order: a row is the line's dict with `token_class` (the token field
    the row counts, None for a charge without tokens), `tokens`, its share of `cost` and `reporting_cost`,
    `cost_split` ("" when the line is one row, else "list-price" or "tokens": how its cost was apportioned) and
    `requests` on the line's first row only (so they add up once)."""
    for line in lines:
        classes = [field for field, _ in TOKEN_CLASSES if line[field]] if is_usage(line) else []
        if len(classes) <= 1:
            yield {**line, "token_class": classes[0] if classes else None, "tokens": line_tokens(line), "cost_split": ""}
            continue
        rates, how = line["split_rates"], "list-price"  # relative prices: the catalog's currency does not matter
        weights = [line[field] * rates[field] for field in classes] if rates else []
        if not any(weights):
            weights, how = [line[field] for field in classes], "tokens"
        costs, reporting = split(line["cost"], weights), split(line["reporting_cost"], weights)
        for index, field in enumerate(classes):
            yield {**line, "token_class": field, "tokens": line[field], "cost": costs[index],
                   "reporting_cost": reporting[index], "cost_split": how,
                   "requests": line["requests"] if index == 0 else 0}


def billed_cost(row: dict) -> Decimal:
    """What the provider billed: the cost of a billed line; 0 for an estimate (no invoice carries it, so
    BilledCost adds up to the bills) and for unpriced usage (x_CostBasis says which)."""
    return row["cost"] if row["cost_basis"] == CostBasis.BILLED else ZERO


def effective_cost(row: dict) -> Decimal:
    """The cost the month's spend counts: billed or estimated; 0 for unpriced usage (FOCUS wants a number;
    x_CostBasis = `unpriced` and the description say the cost is unknown, not free)."""
    return row["cost"] if row["cost"] is not None else ZERO


def list_unit_price(row: dict) -> Decimal | None:
    """The catalog's $/M tokens of the row's class on the line's day, in the line's currency; None where the
    catalog has no such price (the selector says which) or the row counts no tokens."""
    return row["list_rates"][row["token_class"]] if row["list_rates"] and row["token_class"] else None


def list_cost(row: dict) -> Decimal:
    """ListUnitPrice × PricingQuantity where the catalog prices the row; otherwise the cost as charged (no
    discount known)."""
    rate = list_unit_price(row)
    if rate is None:
        return effective_cost(row)
    with localcontext(prec=WIDE):
        return rate * pricing_quantity(row)


def consumed(row: dict) -> tuple[int, str] | None:
    """(quantity, unit) of a usage row: its tokens; a usage line without tokens (a per-request fee, a non-token
    meter of a provider export) counts its requests, so no reader takes it for tokens of an unknown kind."""
    if not is_usage(row):
        return None
    return (row["tokens"], "Tokens") if row["token_class"] else (row["requests"], "Requests")


def pricing_quantity(row: dict) -> Decimal | None:
    """Tokens are priced per million (the catalog's unit), requests one by one; a purchase is one unit; taxes,
    credits and adjustments have no pricing quantity (FOCUS: null for them)."""
    if is_usage(row):
        quantity, unit = consumed(row)
        return Decimal(quantity).scaleb(-6) if unit == "Tokens" else Decimal(quantity)
    return Decimal(1) if row["charge_category"] == ChargeCategory.PURCHASE else None


def pricing_unit(row: dict) -> str:
    if is_usage(row):
        return "1000000 Tokens" if consumed(row)[1] == "Tokens" else "Requests"
    return "Units" if row["charge_category"] == ChargeCategory.PURCHASE else ""


def priced_thing(row: dict) -> bool:
    """Usage and purchases have a price (currency, category); taxes, credits and adjustments do not."""
    return row["charge_category"] in (ChargeCategory.USAGE, ChargeCategory.PURCHASE)


METERS = dict(TOKEN_CLASSES)


def sku_meter(row: dict) -> str:
    """The FOCUS AI draft's meter of the row's token class; a usage row without tokens has none."""
    return METERS[row["token_class"]] if row["token_class"] else ""


def sku_id(row: dict) -> str:
    """The model as this provider sells it (`openai/gpt-4o`, `/batch` for a service tier): what a price attaches to."""
    if not row["model"]:
        return ""
    tier = f"/{row['service_tier']}" if row["service_tier"] else ""
    return f"{row['provider__slug']}/{row['model']}{tier}"


BASIS_WORDS = {
    CostBasis.BILLED: "billed by {provider}",
    CostBasis.ESTIMATED: "estimated from tokens at the catalog price, less any contract discount",
    CostBasis.UNPRICED: "no known price: cost unknown, not included (shown as 0)",
}


SPLIT_WORDS = {"list-price": "; a share of the line's cost by list price", "tokens": "; a share of the line's cost by tokens"}


def charge_description(row: dict) -> str:
    basis = BASIS_WORDS[row["cost_basis"]].format(provider=row["provider__name"])
    if is_usage(row):
        quantity, unit = consumed(row)
        what = METERS[row["token_class"]].lower() if row["token_class"] else "requests (no tokens)"
        return f"{row['model_raw'] or row['model']}: {quantity:,} {what}, {basis}{SPLIT_WORDS.get(row['cost_split'], '')}"
    what = ChargeCategory(row["charge_category"]).label
    return f"{what}{' for ' + row['model_raw'] if row['model_raw'] else ''} from {row['provider__name']}, {basis}"


_TAGS_BUILT: dict[tuple, str] = {}  # lines repeat a few thousand (tag set, attribution) pairs: JSON built once each
_TAGS_KEPT = 8192


def tags(row: dict) -> str:
    """The line's own tags, then the attribution: `team`, `workload` (null when no rule claims the line:
    unattributed) and the team's `cost_center` when it has one. A line tag of the same name is kept as
    `line:<name>`, so nothing the provider sent is lost."""
    # A tag set's id is its content's digest, so the key names the text exactly.
    key = (row["tag_set_id"], row["signature__team__slug"], row["signature__workload__slug"],
           row["signature__team__cost_center"])
    text = _TAGS_BUILT.get(key)
    if text is None:
        own = dict(row["tag_set__tags"] or {})
        attributed = {"team": key[1], "workload": key[2]}
        if key[3]:
            attributed["cost_center"] = key[3]
        for name in attributed:
            if name in own:
                own[f"line:{name}"] = own.pop(name)
        if len(_TAGS_BUILT) >= _TAGS_KEPT:
            _TAGS_BUILT.clear()
        text = _TAGS_BUILT[key] = key_value({**own, **attributed})
    return text


def reporting_billed(row: dict) -> Decimal:
    return row["reporting_cost"] if row["cost_basis"] == CostBasis.BILLED else ZERO


def _when(test: Callable[[dict], bool], value: Callable[[dict], str]) -> Callable[[dict], str]:
    return lambda row: value(row) if test(row) else ""


def _null(row: dict) -> str:
    return ""


def _class_tokens(row: dict, field: str) -> int:
    return row["tokens"] if row["token_class"] == field else 0


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
    ("ConsumedQuantity", _when(is_usage, lambda r: str(consumed(r)[0]))),
    ("ConsumedUnit", _when(is_usage, lambda r: consumed(r)[1])),
    ("ContractedCost", lambda r: money(effective_cost(r))),  # the price paid is the contracted one
    ("ContractedUnitPrice", _null),  # a billed amount is not a rate; the catalog's is ListUnitPrice
    ("EffectiveCost", lambda r: money(effective_cost(r))),
    ("InvoiceId", _null),
    ("InvoiceIssuerName", lambda r: r["provider__name"]),
    ("ListCost", lambda r: money(list_cost(r))),
    ("ListUnitPrice", lambda r: money(list_unit_price(r))),
    ("PricingCategory", _when(priced_thing, lambda r: "Standard")),
    ("PricingCurrency", _when(priced_thing, lambda r: r["currency"])),
    ("PricingCurrencyContractedUnitPrice", _null),
    ("PricingCurrencyEffectiveCost", _when(priced_thing, lambda r: money(effective_cost(r)))),
    ("PricingCurrencyListUnitPrice", lambda r: money(list_unit_price(r))),
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
    ("x_CostSplit", lambda r: r["cost_split"]),
    ("x_InputTokens", lambda r: str(_class_tokens(r, "input_tokens"))),
    ("x_CachedInputTokens", lambda r: str(_class_tokens(r, "cached_input_tokens"))),
    ("x_CacheWriteTokens", lambda r: str(_class_tokens(r, "cache_write_tokens"))),
    ("x_OutputTokens", lambda r: str(_class_tokens(r, "output_tokens"))),
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


def csv_chunks(lines: Iterable[dict], *, rows_per_chunk: int = 1000) -> Iterator[str]:
    """The CSV of `lines` (the selector's) as text chunks of `rows_per_chunk` rows, the header first (a month
    without lines: the header alone). Memory holds one chunk, whatever the month's size: the streamed responses
    send each as it comes."""
    chunk = _Chunk()
    writer = SafeCsvWriter(chunk, lineterminator="\n")
    writer.writerow(HEADER)
    for count, row in enumerate(focus_rows(lines), 1):
        writer.writerow(cells(row))
        if count % rows_per_chunk == 0:
            yield chunk.take()
    yield chunk.take()


def write_focus_csv(lines: Iterable[dict], out) -> int:
    """The CSV of `lines` on `out` (a text stream); returns the number of lines written (rows may be more)."""
    counted = 0

    def counting():
        nonlocal counted
        for line in lines:
            counted += 1
            yield line

    for text in csv_chunks(counting()):
        out.write(text)
    return counted


def file_name(month_key: str) -> str:
    return f"usage-{month_key}-focus-{FOCUS_VERSION}.csv"
