"""The demo accounts' export files, each in the format its connector reads (docs/demo.md).

generate.py decides how much each stream (a workload on one model through one account) uses each day; an
export turns those days into the file(s) a real customer of that provider would give the product:

- UsageCsv (`usage_csv`, docs/usage-csv.md): one row per day × stream, with the billed cost in the account's
  currency. OpenAI and Anthropic (their API connectors cannot be called offline) and Moonshot (bills in CNY).
- FocusExport (`focus_file`): AWS Data Exports "FOCUS 1.2 with AWS columns" for the whole AWS account, one file
  per billing month as AWS delivers it: a Bedrock row per day × stream × token direction, billed at list price,
  plus one Tax or Credit row per month; beside them the account's EC2 and S3 days, a Savings Plan fee and the tax
  on EC2, which the import leaves out and counts (the Sources page shows it). The rows of a month that has ended
  carry its invoice's InvoiceId (AWS fills it in once the invoice is issued).
- SpendLogs (`gateway_log`, in demo/spend_logs.py): a CSV export of LiteLLM's `LiteLLM_SpendLogs` table for Groq,
  Cerebras and the Moonshot gateway, one record per request, as LiteLLM writes them: each with its own tokens (the
  day's, shared exactly among its requests in proportion to skewed, log-normal sizes), start, first token and end,
  timed at its provider's market speed with a slow tail (issue 12) and 1 % failures. The streams' volumes are a few
  dozen requests a day (generate.SERIES), so the demo loads in seconds and every per-request figure is one a real
  request has (issue 28); the product prices them from the catalog (estimated).

Everything is deterministic: money is Decimal, and a request log's randomness is seeded by its stream and
calendar day, so a day's log covers the same hours whichever window it is generated in.
"""

import csv
import datetime as dt
import hashlib
import json
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from finops.prices.selectors import Tokens, cost_from_price

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
    log_records: int  # how many hour draws a gateway log spreads its requests over (SpendLogs._starts)
    tokens: Tokens
    batch_window_hours: int | None = None  # the workload's batch window (gateway logs start its jobs within it)
    overrun: bool = False  # the day its batch run spills past the window

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
        "day",
        "provider",
        "model",
        "input_tokens",
        "cached_input_tokens",
        "cache_write_tokens",
        "output_tokens",
        "requests",
        "cost",
        "currency",
        "project",
        "api_key",
        "tags",
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
        self.rows.append(
            {
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
            }
        )

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
        "Claude4.5Sonnet",
        "-cross-region-global",
        "Claude Sonnet 4.5",
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
            "BillingAccountId": "999988887777",
            "BillingAccountName": "Acme Corp",
            "BillingCurrency": "USD",
            "BillingPeriodStart": _ts(month),
            "BillingPeriodEnd": _ts(_next_month(month)),
            "InvoiceIssuerName": "Amazon Web Services, Inc.",
            "ProviderName": "AWS",
            "PublisherName": "AWS",
            "RegionId": REGION[0],
            "RegionName": REGION[1],
            "ServiceCategory": "AI and Machine Learning",
            "ServiceSubcategory": "Generative AI",
            "ServiceName": "Amazon Bedrock",
            "x_ServiceCode": "AmazonBedrock",
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
            month["rows"].append(
                {
                    **self._common(day.replace(day=1)),
                    "BilledCost": cost,
                    "EffectiveCost": cost,
                    "ListCost": cost,
                    "ContractedCost": cost,
                    "PricingCurrencyEffectiveCost": cost,
                    "ChargeCategory": "Usage",
                    "ChargeFrequency": "Usage-Based",
                    "ChargeDescription": f"${unit_price} per 1K {words} for {display} in {REGION[1]}",
                    "ChargePeriodStart": _ts(day),
                    "ChargePeriodEnd": _ts(day + dt.timedelta(days=1)),
                    "ConsumedQuantity": tokens,
                    "ConsumedUnit": "Tokens",
                    "PricingQuantity": _plain(Decimal(tokens) / 1000),
                    "PricingUnit": "1K tokens",
                    "PricingCategory": "Standard",
                    "PricingCurrency": "USD",
                    "ListUnitPrice": unit_price,
                    "ContractedUnitPrice": unit_price,
                    "PricingCurrencyListUnitPrice": unit_price,
                    "PricingCurrencyContractedUnitPrice": unit_price,
                    "ResourceId": (
                        f"arn:aws:bedrock:{REGION[0]}:{AWS_ACCOUNT}:application-inference-profile/{profile_id}"
                    ),
                    "ResourceName": profile,
                    "SubAccountId": f"proj_{usage.team}",
                    "SubAccountName": usage.team,
                    "Tags": json.dumps(usage.tags, separators=(",", ":")),
                    "x_Operation": "InvokeModelInference",
                    "x_UsageType": f"{REGION[2]}-{meter_model}-{part}{suffix}",
                }
            )

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
            "BilledCost": amount,
            "EffectiveCost": amount,
            "ListCost": amount,
            "ContractedCost": amount,
            "ChargeCategory": category,
            "ChargeFrequency": "One-Time",
            "ChargeDescription": description,
            # The days of the month this export covers: the window may start or end inside the month.
            "ChargePeriodStart": _ts(month["first"]),
            "ChargePeriodEnd": _ts(month["last"] + dt.timedelta(days=1)),
        }

    def _rest_of_the_cloud(self, month_start: dt.date, month: dict) -> list[dict]:
        """The account's other AWS services, as a whole-account export holds them: the import leaves them out
        and says so (docs/ingestion.md, "What a FOCUS import keeps"). A day of EC2 and S3 each, one Savings Plan
        fee and the tax on EC2 per month; deterministic, and none of it changes the demo's AI figures."""
        common = {**self._common(month_start), "ServiceSubcategory": "", "x_Operation": ""}
        rows, ec2_total, day = [], Decimal(0), month["first"]
        while day <= month["last"]:
            period = {
                "ChargePeriodStart": _ts(day),
                "ChargePeriodEnd": _ts(day + dt.timedelta(days=1)),
                "ChargeCategory": "Usage",
                "ChargeFrequency": "Usage-Based",
                "SubAccountId": AWS_ACCOUNT,
            }
            hours = 24 * (3 + day.day % 4)  # three to six m6i.large instances
            ec2 = (Decimal("0.096") * hours).quantize(COST_QUANTUM)
            gb_month = Decimal(4000 + 25 * day.timetuple().tm_yday)
            s3 = (gb_month * Decimal("0.023") / 30).quantize(COST_QUANTUM)
            ec2_total += ec2
            rows += [
                {
                    **common,
                    **period,
                    "ServiceCategory": "Compute",
                    "ServiceName": "Amazon Elastic Compute Cloud",
                    "ServiceSubcategory": "Virtual Machines",
                    "x_ServiceCode": "AmazonEC2",
                    "BilledCost": ec2,
                    "ChargeDescription": "$0.096 per On Demand Linux m6i.large Instance Hour",
                    "ConsumedQuantity": hours,
                    "ConsumedUnit": "Hours",
                    "PricingQuantity": hours,
                    "PricingUnit": "Hours",
                    "x_UsageType": f"{REGION[2]}-BoxUsage:m6i.large",
                    "x_Operation": "RunInstances",
                },
                {
                    **common,
                    **period,
                    "ServiceCategory": "Storage",
                    "ServiceName": "Amazon Simple Storage Service",
                    "ServiceSubcategory": "Object Storage",
                    "x_ServiceCode": "AmazonS3",
                    "BilledCost": s3,
                    "ChargeDescription": "$0.023 per GB - first 50 TB / month of storage used",
                    "ConsumedQuantity": _plain(gb_month / 30),
                    "ConsumedUnit": "GB-Mo",
                    "PricingQuantity": _plain(gb_month / 30),
                    "PricingUnit": "GB-Mo",
                    "x_UsageType": f"{REGION[2]}-TimedStorage-ByteHrs",
                    "x_Operation": "StandardStorage",
                },
            ]
            day += dt.timedelta(days=1)
        whole_month = {
            "ChargePeriodStart": _ts(month["first"]),
            "ChargePeriodEnd": _ts(month["last"] + dt.timedelta(days=1)),
            "ChargeFrequency": "Recurring",
            "SubAccountId": AWS_ACCOUNT,
        }
        return rows + [
            {
                **common,
                **whole_month,
                "ChargeCategory": "Purchase",
                "ServiceCategory": "Compute",
                "ServiceName": "Savings Plans for AWS Compute usage",
                "x_ServiceCode": "ComputeSavingsPlans",
                "BilledCost": Decimal("146.00"),
                "ChargeDescription": "1 year No Upfront Compute Savings Plan",
                "CommitmentDiscountType": "Savings Plan",
                "CommitmentDiscountCategory": "Spend",
            },
            {
                **common,
                **whole_month,
                "ChargeCategory": "Tax",
                "ServiceCategory": "Compute",
                "ServiceName": "Amazon Elastic Compute Cloud",
                "x_ServiceCode": "AmazonEC2",
                "BilledCost": (ec2_total * TAX_RATE).quantize(CENT),
                "ChargeDescription": "Tax for Amazon EC2",
                "ChargeFrequency": "One-Time",
            },
        ]

    def write(self, out_dir: Path) -> list[Path]:
        paths = []
        for n, (month_start, month) in enumerate(sorted(self.months.items())):
            rows = [
                *month["rows"],
                self._charge(month_start, month, first=n == 0),
                *self._rest_of_the_cloud(month_start, month),
            ]
            if month["last"] + dt.timedelta(days=1) == _next_month(month_start):  # a month ended is invoiced
                for row in rows:
                    row["InvoiceId"] = f"EUINUS{month_start:%y}-{month_start:%m}0417"
            path = out_dir / f"{self.account.name}-focus-{month_start:%Y-%m}.csv"
            paths.append(_write_csv(path, FOCUS_COLUMNS, rows))
        return paths
