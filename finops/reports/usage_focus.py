"""FOCUS 1.2 **Cost and Usage** export of one month's usage lines (issue 14, docs/focus-export.md).

The ONE definition of the file (`HEADER` and `focus_rows`), used by the Reports page's download
(`/reports/<YYYY-MM>/focus.csv`), `GET /api/v1/focus?month=YYYY-MM` and `python manage.py export_focus`. No ORM
here: finops.spend.selectors.usage_focus streams the month's lines as dicts (`UsageLine` values with their account,
provider, tags, team and workload, times as FOCUS text, plus the catalog's `list_rates`).

**One row per usage line**, as issue 14 defines the file, its cost exactly as stored: a line's cost is what the
provider billed (or we estimated) for it, and is never apportioned. ConsumedQuantity is the line's tokens, all
classes together; the class breakdown is in `x_InputTokens`, `x_CachedInputTokens`, `x_CacheWriteTokens` and
`x_OutputTokens`. Taxes, credits, purchases and adjustments are one row each. The 57 FOCUS 1.2 columns come first,
in the specification's (alphabetical) order, null as an empty cell; then the `x_` columns.

Speed (docs/focus-export.md, "Speed"): a row is built by one function from per-line locals and per-value caches
(account, provider, SKU, tags, list prices, descriptions' wording), and written as text by a join: most cells are
numbers, times and constants that need neither quoting nor formula guarding, so only the text cells that come
from providers or users go through `text_cell` (formula-safe, then quoted as csv's QUOTE_MINIMAL would).
"""

import json
from collections.abc import Iterable, Iterator
from decimal import ROUND_HALF_UP, Context, Decimal

from finops.models import ChargeCategory, CostBasis
from finops.reports.cells import spreadsheet_safe

FOCUS_VERSION = "1.2"
TOKEN_CLASSES = (  # (line field, the FOCUS working draft's SkuMeter of a line of that class alone, its words)
    ("input_tokens", "Input Tokens", "input"),
    ("cached_input_tokens", "Cache Read Input Tokens", "cache read input"),
    ("cache_write_tokens", "Cache Write Input Tokens", "cache write input"),
    ("output_tokens", "Output Tokens", "output"),
)
MIXED_METER = "Tokens"  # the SkuMeter of a line holding several classes: one stable value a reader can group by
SERVICE_CATEGORY = "AI and Machine Learning"
SERVICE_SUBCATEGORY = "Generative AI"
BILLING_ACCOUNT_TYPE = "Inference Provider Account"
ZERO = Decimal(0)
EXACT = Context(prec=80)  # ListCost = Σ tokens × $/M ÷ 10⁶ exactly: a rate has up to 38 digits, tokens up to 19
BILLING_PLACES = (
    6  # providers bill to the micro-unit or finer: a list cost is rounded to it, or to the cost's own places
)


def list_cost_rounded(at_list: Decimal, cost: Decimal | None) -> Decimal:
    """The list cost to the decimal places of the cost it is set beside (at least BILLING_PLACES), rounded half
    up as providers round a bill: a line billed at list price then shows ListCost = EffectiveCost, never 5e-7
    below it (21.6418828 listed, 21.641883 billed), so ListCost − EffectiveCost is a saving, not a rounding."""
    # The cost's own places: Postgres pads a NUMERIC(38, 18) to 18 decimals, so trailing zeros are not places.
    places = max(BILLING_PLACES, -cost.normalize().as_tuple().exponent if cost is not None and cost else 0)
    if -at_list.as_tuple().exponent <= places:
        return at_list
    return at_list.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)


HEADER = [
    # The FOCUS 1.2 Cost-and-Usage columns (all 57, alphabetical as in the specification) …
    "AvailabilityZone",
    "BilledCost",
    "BillingAccountId",
    "BillingAccountName",
    "BillingAccountType",
    "BillingCurrency",
    "BillingPeriodEnd",
    "BillingPeriodStart",
    "CapacityReservationId",
    "CapacityReservationStatus",
    "ChargeCategory",
    "ChargeClass",
    "ChargeDescription",
    "ChargeFrequency",
    "ChargePeriodEnd",
    "ChargePeriodStart",
    "CommitmentDiscountCategory",
    "CommitmentDiscountId",
    "CommitmentDiscountName",
    "CommitmentDiscountQuantity",
    "CommitmentDiscountStatus",
    "CommitmentDiscountType",
    "CommitmentDiscountUnit",
    "ConsumedQuantity",
    "ConsumedUnit",
    "ContractedCost",
    "ContractedUnitPrice",
    "EffectiveCost",
    "InvoiceId",
    "InvoiceIssuerName",
    "ListCost",
    "ListUnitPrice",
    "PricingCategory",
    "PricingCurrency",
    "PricingCurrencyContractedUnitPrice",
    "PricingCurrencyEffectiveCost",
    "PricingCurrencyListUnitPrice",
    "PricingQuantity",
    "PricingUnit",
    "ProviderName",
    "PublisherName",
    "RegionId",
    "RegionName",
    "ResourceId",
    "ResourceName",
    "ResourceType",
    "ServiceCategory",
    "ServiceName",
    "ServiceSubcategory",
    "SkuId",
    "SkuMeter",
    "SkuPriceDetails",
    "SkuPriceId",
    "SubAccountId",
    "SubAccountName",
    "SubAccountType",
    "Tags",
    # … then this product's.
    "x_UsageLineId",
    "x_CostBasis",
    "x_ReportingCurrency",
    "x_ReportingBilledCost",
    "x_ReportingEffectiveCost",
    "x_InputTokens",
    "x_CachedInputTokens",
    "x_CacheWriteTokens",
    "x_OutputTokens",
    "x_Requests",
    "x_Model",
    "x_ModelAsBilled",
    "x_ServiceTier",
]
FOCUS_COLUMNS = [name for name in HEADER if not name.startswith("x_")]


# --- cell formats (FOCUS 1.2 attributes: Numeric, Date/Time, Key-Value) and CSV text ---


def money(value: Decimal | None) -> str:
    """A plain decimal, exactly as stored (no exponent, no rounding), trailing zeros dropped: `-5`, `0.0000045`."""
    if value is None:
        return ""
    text = format(value, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("", "-0") else text


def per_million(count: int) -> str:
    """`count` ÷ 10⁶ as money() would write it (`1500000` → `1.5`), in integer arithmetic: exact and quick."""
    whole, rest = divmod(abs(count), 1_000_000)
    text = f"{whole}.{rest:06d}".rstrip("0").rstrip(".") if rest else str(whole)
    return "-" + text if count < 0 else text


def key_value(pairs: dict) -> str:
    """A JSON object with flat values (FOCUS Key-Value Format forbids nested objects and arrays)."""
    flat = {
        key: (
            value if value is None or isinstance(value, (str, int, float, bool)) else json.dumps(value, sort_keys=True)
        )
        for key, value in pairs.items()
    }
    return json.dumps(flat, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def text_cell(value: str | None) -> str:
    """A text cell from a provider or a user, ready for the row: formula-safe (finops/reports/cells.py), then
    quoted as csv's QUOTE_MINIMAL quotes (a comma, a quote or a line break inside; a carriage return too, which
    csv.writer leaves bare and its own reader then splits the row on)."""
    if not value:
        return ""
    value = spreadsheet_safe(value)
    if '"' in value:
        return '"' + value.replace('"', '""') + '"'
    if "," in value or "\n" in value or "\r" in value:
        return '"' + value + '"'
    return value


class _Memo(dict):
    """`memo[value]` = `make(value)`, made once per distinct value; emptied when it reaches `size` so a month of
    ever-new values (API keys, projects) cannot grow it without bound."""

    def __init__(self, make, size: int = 8192):
        super().__init__()
        self.make, self.size = make, size

    def __missing__(self, value):
        if len(self) >= self.size:
            self.clear()
        made = self[value] = self.make(value)
        return made


def tags(own_tags: dict | None, team: str | None, workload: str | None, cost_center: str) -> str:
    """The Tags cell: the line's own tags, then the attribution: `team`, `workload` (null when no rule claims the
    line: unattributed) and the team's `cost_center` when it has one. A line tag of the same name is kept as
    `line:<name>`, so nothing the provider sent is lost."""
    own = dict(own_tags or {})
    attributed = {"team": team, "workload": workload}
    if cost_center:
        attributed["cost_center"] = cost_center
    for name in attributed:
        if name in own:
            own[f"line:{name}"] = own.pop(name)
    return text_cell(key_value({**own, **attributed}))


BASIS_WORDS = {
    CostBasis.BILLED: "billed by {provider}",
    CostBasis.ESTIMATED: "estimated from tokens at the catalog price, less any contract discount",
    CostBasis.UNPRICED: "no known price: cost unknown, not included (shown as 0)",
}
CATEGORY_LABELS = {category.value: category.label for category in ChargeCategory}
USAGE, PURCHASE, BILLED = ChargeCategory.USAGE.value, ChargeCategory.PURCHASE.value, CostBasis.BILLED.value


def _shape(held: tuple[bool, bool, bool, bool]) -> tuple[str, int | None, tuple]:
    """(SkuMeter, the index of the line's one class or None, (index, words) of each class held) of a usage line
    holding the classes `held` says it does."""
    classes = tuple((index, words) for index, (_, _, words) in enumerate(TOKEN_CLASSES) if held[index])
    if not classes:
        return "", None, ()
    if len(classes) == 1:
        return TOKEN_CLASSES[classes[0][0]][1], classes[0][0], classes
    return MIXED_METER, None, classes


SHAPES = {
    (a, b, c, d): _shape((a, b, c, d))
    for a in (False, True)
    for b in (False, True)
    for c in (False, True)
    for d in (False, True)
}


def focus_rows(lines: Iterable[dict]) -> Iterator[str]:
    """The CSV text of each line's row (a line of the file, newline included), in line order.

    - BilledCost: the cost of a billed line; 0 for an estimate (no invoice carries it, so BilledCost adds up to the
      bills) and for unpriced usage. EffectiveCost (= ContractedCost): billed or estimated; 0 for unpriced usage
      (FOCUS wants a number; x_CostBasis `unpriced` and the description say the cost is unknown, not free).
    - ConsumedQuantity: the line's tokens in `Tokens`; a usage line without tokens (a per-request fee, a non-token
      meter of a provider export) counts its requests, so no reader takes it for tokens of an unknown kind.
      PricingQuantity: tokens ÷ 10⁶ in `1000000 Tokens` (the catalog's unit), requests one by one, 1 `Units` for a
      purchase, null for taxes, credits and adjustments (FOCUS: null for them).
    - ListCost: the catalog's list cost of the line's tokens, each class at its rate on the line's day, where the
      catalog prices the model in the line's currency; else the cost as charged (no discount known).
      ListUnitPrice only where ListCost = ListUnitPrice × PricingQuantity holds: a line of one class; null for a
      mix (no one rate prices it).
    """
    accounts = _Memo(lambda account: (str(account[0]), text_cell(account[1])))
    providers = _Memo(text_cell)
    texts = _Memo(text_cell)  # models, tiers, projects, API keys: repeated across a month's lines
    sku_ids = _Memo(lambda key: text_cell(f"{key[0]}/{key[1]}{'/' + key[2] if key[2] else ''}") if key[1] else "")
    tag_cells: dict[tuple, str] = {}  # lines repeat a few thousand (tag set, attribution) pairs: JSON built once each
    list_prices = _Memo(money)
    basis_words = _Memo(lambda key: BASIS_WORDS[key[0]].format(provider=key[1]))
    multiply, add, scaleb = EXACT.multiply, EXACT.add, EXACT.scaleb
    for line in lines:
        category, basis, cost, currency = line["charge_category"], line["cost_basis"], line["cost"], line["currency"]
        provider = line["provider__name"]
        provider_cell = providers[provider]
        effective = money(cost) if cost is not None else "0"
        billed = effective if basis == BILLED else "0"
        reporting = money(line["reporting_cost"])
        model, model_raw, tier = line["model"], line["model_raw"], line["service_tier"]
        counts = (line["input_tokens"], line["cached_input_tokens"], line["cache_write_tokens"], line["output_tokens"])
        requests = line["requests"]
        basis_text = basis_words[basis, provider]
        list_cost, list_price, meter = effective, "", ""
        if category == USAGE:
            tokens = counts[0] + counts[1] + counts[2] + counts[3]
            meter, single, classes = SHAPES[counts[0] != 0, counts[1] != 0, counts[2] != 0, counts[3] != 0]
            if single is not None:
                what = f"{tokens:,} {TOKEN_CLASSES[single][2]} tokens"
            elif classes:
                what = f"{tokens:,} tokens ({', '.join(f'{counts[index]:,} {words}' for index, words in classes)})"
            else:
                what = f"{requests:,} requests (no tokens)"
            description = f"{model_raw or model}: {what}, {basis_text}"
            if tokens:
                consumed, consumed_unit = str(tokens), "Tokens"
                pricing, pricing_unit = per_million(tokens), "1000000 Tokens"
                rates = line["list_rates"]
                if rates is not None:
                    at_list = ZERO
                    for index, _ in classes:
                        at_list = add(at_list, multiply(counts[index], rates[index]))
                    exact = scaleb(at_list, -6)
                    rounded = list_cost_rounded(exact, cost)
                    list_cost = money(rounded)
                    # ListUnitPrice × PricingQuantity = ListCost must hold (FOCUS ListCost-C-009-C): a price only
                    # where the rounding left the list cost exact.
                    if single is not None and rounded == exact:
                        list_price = list_prices[rates[single]]
            else:
                consumed = pricing = str(requests)
                consumed_unit = pricing_unit = "Requests"
                meter = (
                    "Requests" if model else ""
                )  # FOCUS: a SkuMeter only beside a SkuId (a line without a model has neither)
            frequency, standard, pricing_currency, pricing_effective = "Usage-Based", "Standard", currency, effective
        else:
            label = CATEGORY_LABELS[category]
            description = f"{label}{' for ' + model_raw if model_raw else ''} from {provider}, {basis_text}"
            consumed = consumed_unit = ""
            frequency = "One-Time"
            meter = CATEGORY_LABELS[category] if model else ""  # a charge for a model has its SkuId: SkuMeter too
            # PricingCurrency and its EffectiveCost: FOCUS 1.2 allows no null, a tax and a credit included.
            pricing_currency, pricing_effective = currency, effective
            if category == PURCHASE:
                pricing, pricing_unit, standard = "1", "Units", "Standard"
            else:
                pricing = pricing_unit = standard = ""
        project, api_key = texts[line["project_ref"]], texts[line["api_key_ref"]]
        # A tag set's id is its content's digest, so the key names the text exactly.
        tag_key = (
            line["tag_set_id"],
            line["signature__team__slug"],
            line["signature__workload__slug"],
            line["signature__team__cost_center"],
        )
        tag_cell = tag_cells.get(tag_key)
        if tag_cell is None:
            if len(tag_cells) >= 8192:
                tag_cells.clear()
            own = json.loads(line["tags_json"]) if line["tags_json"] else None
            tag_cell = tag_cells[tag_key] = tags(own, *tag_key[1:])
        account_id, account_name = accounts[line["account_id"], line["account__name"]]
        yield (
            ",".join(
                (
                    "",  # AvailabilityZone
                    billed,
                    account_id,
                    account_name,
                    BILLING_ACCOUNT_TYPE,
                    currency,
                    line["billing_period_end"],  # Date/Time cells come as FOCUS text (the selector's)
                    line["billing_period_start"],
                    "",
                    "",  # CapacityReservationId, CapacityReservationStatus
                    CATEGORY_LABELS[category],
                    "",  # ChargeClass: no line corrects an earlier invoice (a restated export replaces its lines)
                    text_cell(description),
                    frequency,
                    line["period_end"],
                    line["period_start"],
                    "",
                    "",
                    "",
                    "",
                    "",
                    "",
                    "",  # the seven CommitmentDiscount… columns: contracts are their own dataset
                    consumed,
                    consumed_unit,
                    effective,  # ContractedCost: the price paid is the contracted one
                    "",  # ContractedUnitPrice: a billed amount is not a rate; the catalog's is ListUnitPrice
                    effective,
                    texts[
                        line["invoice_id"]
                    ],  # InvoiceId: the source's (a FOCUS export's), else null: no invoice known
                    provider_cell,  # InvoiceIssuerName
                    list_cost,
                    list_price,
                    standard,  # PricingCategory
                    pricing_currency,
                    "",  # PricingCurrencyContractedUnitPrice
                    pricing_effective,
                    list_price,  # PricingCurrencyListUnitPrice: the list price is in the line's currency
                    pricing,
                    pricing_unit,
                    provider_cell,  # ProviderName
                    # PublisherName: the seller; a marketplace model's developer is not recorded per line
                    provider_cell,
                    "",
                    "",  # RegionId, RegionName
                    api_key,  # ResourceId
                    "",  # ResourceName
                    "API Key" if api_key else "",
                    SERVICE_CATEGORY,
                    provider_cell,  # ServiceName
                    SERVICE_SUBCATEGORY,
                    sku_ids[line["provider__slug"], model, tier],
                    meter,
                    "",
                    "",  # SkuPriceDetails, SkuPriceId: no provider price id is known
                    project,  # SubAccountId
                    project,  # SubAccountName: providers' usage data name projects by id only
                    "Project" if project else "",
                    tag_cell,
                    str(line["id"]),
                    basis,
                    line["reporting_currency"],
                    reporting if basis == BILLED else "0",  # x_ReportingBilledCost
                    reporting,  # x_ReportingEffectiveCost: empty when unpriced (unknown)
                    str(counts[0]),
                    str(counts[1]),
                    str(counts[2]),
                    str(counts[3]),
                    str(requests),
                    texts[model],
                    texts[model_raw],
                    texts[tier],
                )
            )
            + "\n"
        )


def csv_chunks(lines: Iterable[dict], *, rows_per_chunk: int = 1000) -> Iterator[str]:
    """The CSV of `lines` (the selector's) as text chunks of `rows_per_chunk` rows, the header first (a month
    without lines: the header alone). Memory holds one chunk, whatever the month's size: the streamed responses
    send each as it comes."""
    chunk = [",".join(HEADER) + "\n"]
    for row in focus_rows(lines):
        chunk.append(row)
        if len(chunk) >= rows_per_chunk:
            yield "".join(chunk)
            chunk = []
    yield "".join(chunk)


def write_focus_csv(lines: Iterable[dict], out) -> int:
    """The CSV of `lines` on `out` (a text stream: a file, stdout), row by row (the stream buffers its writes, so
    memory holds one row, not a chunk and its joined copy); returns the number of lines (= rows) written."""
    counted = 0

    def counting():
        nonlocal counted
        for line in lines:
            counted += 1
            yield line

    out.write(",".join(HEADER) + "\n")
    out.writelines(focus_rows(counting()))
    return counted


def file_name(month_key: str) -> str:
    return f"usage-{month_key}-focus-{FOCUS_VERSION}.csv"
