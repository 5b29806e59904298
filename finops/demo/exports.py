"""The demo accounts' export files, each in the format its connector reads (docs/demo.md).

generate.py decides how much each stream (a workload on one model through one account) uses each day; an
export turns those days into the file(s) a real customer of that provider would give the product:

- UsageCsv (`usage_csv`, docs/usage-csv.md): one row per day × stream, with the billed cost in the account's
  currency. OpenAI and Anthropic (their API connectors cannot be called offline) and Moonshot (bills in CNY).
- FocusExport (`focus_file`): AWS Data Exports "FOCUS 1.2 with AWS columns" for Bedrock, one file per billing
  month as AWS delivers it: a row per day × stream × token direction, billed at list price, plus one Tax or
  Credit row per month.
- SpendLogs (`gateway_log`): a CSV export of LiteLLM's `LiteLLM_SpendLogs` table for Groq and Cerebras, one record
  per request. The log is thinned: 20–60 records a day per stream, each carrying the tokens of many requests,
  so the demo loads in seconds; the product prices them from the catalog (estimated).

Everything is deterministic: money is Decimal, and a request log's randomness is seeded by its stream and
calendar day, so a day's log covers the same hours whichever window it is generated in.
"""

import csv
import datetime as dt
import hashlib
import json
import random
import uuid
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from finops.services.prices import Tokens, cost_from_price

from .prices import FxRates, PriceList

COST_QUANTUM = Decimal("0.000001")
TOKEN_CLASSES = ("input", "cached_input", "cache_write", "output")


@dataclass(frozen=True)
class DemoAccount:
    name: str
    provider: str
    currency: str | None  # what its bills are in; None: its files carry no cost
    prices: PriceList
    fx: FxRates


@dataclass(frozen=True)
class DayUsage:
    """One day of one stream: disjoint token classes (uncached input, cache read, cache write, output)."""

    day: dt.date
    stream: int  # the series' position in generate.SERIES
    series: object  # generate.Series: workload, model, env
    team: str | None
    latency_profile: str
    requests: int
    log_records: int  # how many request records a gateway log has for it
    tokens: Tokens

    @property
    def tags(self) -> dict[str, str]:
        if self.series.workload is None:
            return {}  # a personal sandbox key: untagged
        return {"team": self.team, "workload": self.series.workload, "env": self.series.env}

    @property
    def api_key(self) -> str:
        slug = self.series.workload or "personal_jdoe"
        return f"key_{slug.replace('-', '_')}_{self.series.env}"


def _write_csv(path: Path, columns: tuple[str, ...], rows: list[dict]) -> Path:
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns, restval="", lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return path


def _plain(value: Decimal) -> str:
    """A Decimal without exponent or trailing zeros (FOCUS Numeric Format): 0.0033, 17.33, 1200."""
    return format(value.normalize(), "f")


# --- usage_csv ---


class UsageCsv:
    COLUMNS = (
        "day", "provider", "model", "input_tokens", "cached_input_tokens", "cache_write_tokens", "output_tokens",
        "requests", "cost", "currency", "project", "api_key", "tags",
    )

    def __init__(self, account: DemoAccount):
        self.account, self.rows = account, []

    def add(self, usage: DayUsage) -> None:
        account, tokens, tags = self.account, usage.tokens, usage.tags
        cost = ""
        if account.currency is not None:
            usd = account.prices.list_cost(account.provider, usage.series.model, usage.day, tokens)
            amount = usd if account.currency == "USD" else usd / account.fx.rate_on(account.currency, usage.day)
            cost = str(amount.quantize(COST_QUANTUM))
        self.rows.append({
            "day": usage.day.isoformat(),
            "provider": account.provider,
            "model": usage.series.model,
            "input_tokens": tokens.input + tokens.cached_input + tokens.cache_write,  # this format: cache-inclusive
            "cached_input_tokens": tokens.cached_input,
            "cache_write_tokens": tokens.cache_write,
            "output_tokens": tokens.output,
            "requests": usage.requests,
            "cost": cost,
            "currency": account.currency or "USD",
            "project": f"proj_{usage.team}" if tags else "",
            "api_key": usage.api_key,
            "tags": ";".join(f"{key}={value}" for key, value in tags.items()),
        })

    def write(self, out_dir: Path) -> list[Path]:
        return [_write_csv(out_dir / f"{self.account.name}-usage.csv", self.COLUMNS, self.rows)]


# --- focus_file: AWS "FOCUS 1.2 with AWS columns" (reference/provider-formats.md §3.4, §4.3–4.4) ---

FOCUS_COLUMNS = tuple(
    """AvailabilityZone BilledCost BillingAccountId BillingAccountName BillingAccountType BillingCurrency
    BillingPeriodEnd BillingPeriodStart CapacityReservationId CapacityReservationStatus ChargeCategory ChargeClass
    ChargeDescription ChargeFrequency ChargePeriodEnd ChargePeriodStart CommitmentDiscountCategory
    CommitmentDiscountId CommitmentDiscountName CommitmentDiscountQuantity CommitmentDiscountStatus
    CommitmentDiscountType CommitmentDiscountUnit ConsumedQuantity ConsumedUnit ContractedCost ContractedUnitPrice
    EffectiveCost InvoiceId InvoiceIssuerName ListCost ListUnitPrice PricingCategory PricingCurrency
    PricingCurrencyContractedUnitPrice PricingCurrencyEffectiveCost PricingCurrencyListUnitPrice PricingQuantity
    PricingUnit ProviderName PublisherName RegionId RegionName ResourceId ResourceName ResourceType ServiceCategory
    ServiceName ServiceSubcategory SkuId SkuMeter SkuPriceDetails SkuPriceId SubAccountId SubAccountName
    SubAccountType Tags x_Discounts x_Operation x_ServiceCode x_UsageType""".split()
)
AWS_ACCOUNT = "123456789012"  # where the application inference profiles live
REGION = ("us-east-1", "US East (N. Virginia)", "USE1")  # id, name, usage-type prefix
# Bedrock model id (as the series call it) → (its usage-type name, usage-type suffix, display name).
BEDROCK_METERS = {
    "anthropic.claude-haiku-4-5-20251001-v1:0": ("Claude4.5Haiku", "", "Claude Haiku 4.5"),
    "global.anthropic.claude-sonnet-4-5-20250929-v1:0": (
        "Claude4.5Sonnet", "-cross-region-global", "Claude Sonnet 4.5"
    ),
    "us.amazon.nova-pro-v1:0": ("NovaPro", "", "Amazon Nova Pro"),
    "us.amazon.nova-lite-v1:0": ("NovaLite", "", "Amazon Nova Lite"),
}
# Token class → (usage-type part, price field, words); a class with no price of its own is billed at input price.
DIRECTIONS = {
    "input": ("input-tokens", "input_per_mtok", "input tokens"),
    "output": ("output-tokens", "output_per_mtok", "output tokens"),
    "cached_input": ("cache-read-input-token-count", "cached_input_per_mtok", "cache read input tokens"),
    "cache_write": ("cache-write-input-token-count", "cache_write_per_mtok", "cache write input tokens"),
}
TAX_RATE = Decimal("0.06")  # sales tax on each month's Bedrock usage
FIRST_MONTH_CREDIT = Decimal("250.00")  # a promotional credit in the first month, instead of its tax
CENT = Decimal("0.01")


def _ts(day: dt.date) -> str:
    return f"{day.isoformat()}T00:00:00Z"


def _next_month(month: dt.date) -> dt.date:
    return (month + dt.timedelta(days=32)).replace(day=1)


class FocusExport:
    """One CSV per billing month (UTC calendar month), as AWS Data Exports delivers a FOCUS 1.2 export."""

    def __init__(self, account: DemoAccount):
        if account.currency != "USD":
            raise ValueError(f"{account.name}: the demo's FOCUS export bills in USD")
        self.account = account
        self.months: dict[dt.date, dict] = {}  # month → {"rows", "usage" (sum of BilledCost), "first", "last"}

    def _common(self, month: dt.date) -> dict:
        return {
            "BillingAccountId": "999988887777", "BillingAccountName": "Acme Corp", "BillingCurrency": "USD",
            "BillingPeriodStart": _ts(month), "BillingPeriodEnd": _ts(_next_month(month)),
            "InvoiceIssuerName": "Amazon Web Services, Inc.", "ProviderName": "AWS", "PublisherName": "AWS",
            "RegionId": REGION[0], "RegionName": REGION[1], "ServiceCategory": "AI and Machine Learning",
            "ServiceSubcategory": "Generative AI", "ServiceName": "Amazon Bedrock", "x_ServiceCode": "AmazonBedrock",
        }

    def add(self, usage: DayUsage) -> None:
        account, series, day = self.account, usage.series, usage.day
        price = account.prices.price_on(account.provider, series.model, day)
        if price is None or series.model not in BEDROCK_METERS:
            raise LookupError(f"the demo bills Bedrock model {series.model} but has no price or usage type for it")
        meter_model, suffix, display = BEDROCK_METERS[series.model]
        month = self.months.setdefault(day.replace(day=1), {"rows": [], "usage": Decimal(0), "first": day, "last": day})
        month["last"] = day
        profile = f"{series.workload}-{series.env}"
        profile_id = hashlib.sha256(profile.encode()).hexdigest()[:12]
        for token_class, (part, price_field, words) in DIRECTIONS.items():
            tokens = getattr(usage.tokens, token_class)
            if not tokens:
                continue
            cost = cost_from_price(price, Tokens(**{token_class: tokens})).quantize(COST_QUANTUM)
            rate = getattr(price, price_field)
            unit_price = _plain((price.input_per_mtok if rate is None else rate) / 1000)
            month["usage"] += cost
            month["rows"].append({
                **self._common(day.replace(day=1)),
                "BilledCost": cost, "EffectiveCost": cost, "ListCost": cost, "ContractedCost": cost,
                "PricingCurrencyEffectiveCost": cost,
                "ChargeCategory": "Usage", "ChargeFrequency": "Usage-Based",
                "ChargeDescription": f"${unit_price} per 1K {words} for {display} in {REGION[1]}",
                "ChargePeriodStart": _ts(day), "ChargePeriodEnd": _ts(day + dt.timedelta(days=1)),
                "ConsumedQuantity": tokens, "ConsumedUnit": "Tokens",
                "PricingQuantity": _plain(Decimal(tokens) / 1000), "PricingUnit": "1K tokens",
                "PricingCategory": "Standard", "PricingCurrency": "USD",
                "ListUnitPrice": unit_price, "ContractedUnitPrice": unit_price,
                "PricingCurrencyListUnitPrice": unit_price, "PricingCurrencyContractedUnitPrice": unit_price,
                "ResourceId": f"arn:aws:bedrock:{REGION[0]}:{AWS_ACCOUNT}:application-inference-profile/{profile_id}",
                "ResourceName": profile,
                "SubAccountId": f"proj_{usage.team}", "SubAccountName": usage.team,
                "Tags": json.dumps(usage.tags, separators=(",", ":")),
                "x_Operation": "InvokeModelInference",
                "x_UsageType": f"{REGION[2]}-{meter_model}-{part}{suffix}",
            })

    def _charge(self, month_start: dt.date, month: dict, first: bool) -> dict:
        """The month's one non-usage row: a promotional credit in the first month, sales tax in the others."""
        if first:
            category, description = "Credit", "Amazon Bedrock promotional credit"
            amount = -FIRST_MONTH_CREDIT
        else:
            category, description = "Tax", "Tax for Amazon Bedrock"
            amount = (month["usage"] * TAX_RATE).quantize(CENT)
        return {
            **self._common(month_start),
            "BilledCost": amount, "EffectiveCost": amount, "ListCost": amount, "ContractedCost": amount,
            "ChargeCategory": category, "ChargeFrequency": "One-Time", "ChargeDescription": description,
            # The days of the month this export covers: the window may start or end inside the month.
            "ChargePeriodStart": _ts(month["first"]), "ChargePeriodEnd": _ts(month["last"] + dt.timedelta(days=1)),
        }

    def write(self, out_dir: Path) -> list[Path]:
        paths = []
        for n, (month_start, month) in enumerate(sorted(self.months.items())):
            rows = [*month["rows"], self._charge(month_start, month, first=n == 0)]
            path = out_dir / f"{self.account.name}-focus-{month_start:%Y-%m}.csv"
            paths.append(_write_csv(path, FOCUS_COLUMNS, rows))
        return paths


# --- gateway_log: a LiteLLM_SpendLogs CSV export (ingest/providers/gateway_log.py) ---

SPEND_LOG_COLUMNS = (
    "request_id", "startTime", "endTime", "completionStartTime", "model", "custom_llm_provider", "prompt_tokens",
    "completion_tokens", "spend", "api_key", "team_id", "user", "metadata", "request_tags",
)
LOG_SEED = "demo-litellm-spend-logs"
# Whole-request latency per model in ms: (fastest, slowest, most common); Groq and Cerebras are fast.
LATENCY_MS = {
    "openai/gpt-oss-120b": (350, 900, 480),
    "openai/gpt-oss-20b": (200, 600, 300),
    "llama3.1-8b": (200, 450, 260),
    "qwen-3-32b": (300, 850, 450),
    "gpt-oss-120b": (300, 750, 400),
    "acme-support-router-ft-8b": (200, 400, 240),
}
DEFAULT_LATENCY_MS = (250, 900, 450)
TTFT_MS = {"groq": (80, 200), "cerebras": (50, 150)}  # time to first token
# Traffic by UTC hour: people work 08–22 UTC (Europe, then the US); batch jobs run at night.
DIURNAL = {
    "realtime": (1, 1, 1, 1, 1, 1, 2, 3, 6, 8, 10, 10, 10, 12, 14, 16, 16, 16, 14, 12, 8, 4, 2, 1),
    "batch": (10, 10, 10, 10, 10, 8, 4, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 4, 8),
}
DIURNAL["interactive"] = DIURNAL["realtime"]
SPEND_QUANTUM = Decimal("0.00000001")


def _split(total: int, weights: list[int]) -> list[int]:
    """`total` in whole parts proportional to `weights` (integer arithmetic: exact, same on every platform)."""
    whole, done, seen, parts = sum(weights), 0, 0, []
    for weight in weights:
        seen += weight
        upto = total * seen // whole
        parts.append(upto - done)
        done = upto
    return parts


def _log_time(moment: dt.datetime) -> str:
    """How a LiteLLM_SpendLogs CSV export writes a time: naive UTC, milliseconds."""
    return moment.isoformat(sep=" ", timespec="milliseconds")


class SpendLogs:
    def __init__(self, account: DemoAccount):
        self.account, self.records = account, []

    def add(self, usage: DayUsage) -> None:
        account, series = self.account, usage.series
        rng = random.Random(f"{LOG_SEED}:{usage.stream}:{usage.day.isoformat()}")
        midnight = dt.datetime.combine(usage.day, dt.time())
        fastest, slowest, usual = LATENCY_MS.get(series.model, DEFAULT_LATENCY_MS)
        requests, weights = [], []
        for _ in range(usage.log_records):
            hour = rng.choices(range(24), weights=DIURNAL[usage.latency_profile])[0]
            start = midnight + dt.timedelta(hours=hour, milliseconds=rng.randrange(3_600_000))
            weights.append(rng.randint(30, 170))
            duration = round(rng.triangular(fastest, slowest, usual))
            ttft = min(duration, rng.randint(*TTFT_MS.get(account.provider, (50, 200))))
            requests.append((start, duration, ttft, uuid.UUID(int=rng.getrandbits(128), version=4)))
        parts = {name: _split(getattr(usage.tokens, name), weights) for name in TOKEN_CLASSES}
        price = account.prices.price_on(account.provider, series.model, usage.day)
        tags = json.dumps([f"{key}:{value}" for key, value in usage.tags.items()])
        for i, (start, duration, ttft, request_id) in enumerate(requests):
            tokens = Tokens(**{name: parts[name][i] for name in TOKEN_CLASSES})
            prompt = tokens.input + tokens.cached_input + tokens.cache_write  # LiteLLM: cache-inclusive
            # LiteLLM's own estimate from its price map; the product does not read it (it prices from the catalog).
            spend = cost_from_price(price, tokens).quantize(SPEND_QUANTUM) if price else Decimal("0.0")
            # LiteLLM keeps the provider's usage object in metadata; the cached tokens are read from it.
            usage_object = (
                f'{{"completion_tokens": {tokens.output}, "prompt_tokens": {prompt}, '
                f'"total_tokens": {prompt + tokens.output}, '
                f'"prompt_tokens_details": {{"cached_tokens": {tokens.cached_input}}}}}'
            )
            self.records.append((start, {
                "request_id": str(request_id),
                "startTime": _log_time(start),
                "endTime": _log_time(start + dt.timedelta(milliseconds=duration)),
                "completionStartTime": _log_time(start + dt.timedelta(milliseconds=ttft)),
                "model": series.model,
                "custom_llm_provider": account.provider,
                "prompt_tokens": prompt,
                "completion_tokens": tokens.output,
                "spend": spend,
                "api_key": usage.api_key,  # a key alias: a raw `sk-` key would be stored as its hash
                "team_id": usage.team,
                "user": "",
                "metadata": f'{{"usage_object": {usage_object}}}',
                "request_tags": tags,
            }))

    def write(self, out_dir: Path) -> list[Path]:
        rows = [record for _, record in sorted(self.records, key=lambda item: (item[0], item[1]["request_id"]))]
        return [_write_csv(out_dir / f"{self.account.name}-spend-logs.csv", SPEND_LOG_COLUMNS, rows)]


EXPORTS = {"usage_csv": UsageCsv, "focus_file": FocusExport, "gateway_log": SpendLogs}
