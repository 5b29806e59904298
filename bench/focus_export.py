"""The bench's generated export: "FOCUS 1.2 with AWS columns" for Bedrock per-token usage, streamed to a file
(never held in memory) and the same for a seed. focus_ingest.py times its import; tests read it as a real export.
"""

import datetime as dt
import json
import math
import os
import random
import uuid
import zlib
from pathlib import Path

# The export: "FOCUS 1.2 with AWS columns" (57 FOCUS columns + 3 AWS ones), Bedrock per-token rows ---

HEADER = (
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
    "x_Discounts",
    "x_Operation",
    "x_ServiceCode",
)
COL = {name: i for i, name in enumerate(HEADER)}
COST_CELLS = tuple(
    COL[c] for c in ("BilledCost", "ContractedCost", "EffectiveCost", "ListCost", "PricingCurrencyEffectiveCost")
)
QUANTITY_CELLS = (COL["ConsumedQuantity"], COL["PricingQuantity"])

DAYS = 30
FIRST_HOUR = dt.datetime(2026, 3, 1, tzinfo=dt.UTC)
BILLING_PERIOD = ("2026-03-01T00:00:00.000Z", "2026-04-01T00:00:00.000Z")
PAYER = "999988887777"
REGIONS = (
    ("USE1", "us-east-1", "US East (N. Virginia)"),
    ("USW2", "us-west-2", "US West (Oregon)"),
    ("EUC1", "eu-central-1", "EU (Frankfurt)"),
)
# Usage-type model part, display name, $ per 1K input and output tokens, prompt caching.
MODELS = (
    ("Claude4.6Sonnet", "Claude 4.6 Sonnet", 0.003, 0.015, True),
    ("Claude4.6Opus", "Claude 4.6 Opus", 0.005, 0.025, True),
    ("Claude4.5Haiku", "Claude 4.5 Haiku", 0.001, 0.005, True),
    ("Claude4Sonnet", "Claude 4 Sonnet", 0.003, 0.015, True),
    ("Claude3Haiku", "Claude 3 Haiku", 0.00025, 0.00125, False),
    ("Nova2.0Lite", "Nova 2.0 Lite", 0.0003, 0.0025, True),
    ("NovaPro", "Nova Pro", 0.0008, 0.0032, False),
    ("NovaLite", "Nova Lite", 0.00006, 0.00024, False),
    ("NovaMicro", "Nova Micro", 0.000035, 0.00014, False),
    ("Llama4-Maverick-17B", "Llama 4 Maverick 17B", 0.00024, 0.00097, False),
)
MANTLE_MODELS = (
    ("mistral.voxtral-small-24b-2507", "Voxtral Small 24B", 0.0001, 0.0003),
    ("qwen.qwen3-coder-480b-a35b-instruct", "Qwen3 Coder 480B", 0.00022, 0.0018),
)
# Direction: usage-type part, words for the description, price factor on the input price (None: output price),
# log-normal median of thousands of tokens per line.
DIRECTIONS = (
    ("input-tokens", "input tokens", 1.0, 40.0),
    ("output-tokens", "output tokens", None, 6.0),
    ("cache-read-input-token-count", "cache read input tokens", 0.1, 120.0),
    ("cache-write-input-token-count", "cache write input tokens", 1.25, 15.0),
)
TIERS = (("", 1.0), ("-cross-region-global", 1.0), ("-batch", 0.5), ("-priority", 1.75))
MANTLE_TIERS = (("-standard", 1.0), ("-flex", 0.5), ("-priority", 1.75), ("-global-standard", 1.0))
OPERATIONS = ("InvokeModelInference", "InvokeModelStreamingInference", "Converse", "ConverseStream")
TEAMS = ("search", "support", "growth", "risk", "platform", "data", "sales", "legal")
APPS = ("agent", "rag", "summariser", "classifier", "copilot", "batch-eval")


def _csv(value: str) -> str:
    return '"' + value.replace('"', '""') + '"' if any(c in value for c in ',"\n\r') else value


def _meters(regions: tuple = REGIONS) -> list[tuple]:
    """Every meter (usage type × region × tier): (the row's cells with the meter-fixed columns filled, unit price,
    tokens per quantity unit, log-normal median of thousands of tokens per line)."""
    base = [""] * len(HEADER)
    for column, value in (
        ("BillingAccountId", PAYER),
        ("BillingAccountName", "Acme payer"),
        ("BillingAccountType", "Billing Account"),
        ("BillingCurrency", "USD"),
        ("BillingPeriodEnd", BILLING_PERIOD[1]),
        ("BillingPeriodStart", BILLING_PERIOD[0]),
        ("ChargeCategory", "Usage"),
        ("ChargeFrequency", "Usage-Based"),
        ("InvoiceIssuerName", "AWS"),
        ("PricingCategory", "Standard"),
        ("PricingCurrency", "USD"),
        ("ProviderName", "AWS"),
        ("ServiceCategory", "AI and Machine Learning"),
        ("ServiceSubcategory", "Generative AI"),
        ("SubAccountType", "AWS Account"),
        ("x_Discounts", "{}"),
    ):
        base[COL[column]] = value

    def meter(region, usage_type, description, price, unit, service, publisher, service_code, sku):
        cells = list(base)
        for column, value in (
            ("ChargeDescription", _csv(description)),
            ("ConsumedUnit", unit),
            ("PricingUnit", unit),
            ("ContractedUnitPrice", repr(price)),
            ("ListUnitPrice", repr(price)),
            ("PricingCurrencyContractedUnitPrice", repr(price)),
            ("PricingCurrencyListUnitPrice", repr(price)),
            ("PublisherName", publisher),
            ("RegionId", region[1]),
            ("RegionName", region[2]),
            ("ServiceName", _csv(service)),
            ("SkuId", sku),
            ("SkuMeter", usage_type),
            ("SkuPriceId", f"{sku}.JRTCKXETXF"),
            ("x_ServiceCode", service_code),
        ):
            cells[COL[column]] = value
        return cells, price

    meters = []
    for region in regions:
        for part, name, price_in, price_out, caching in MODELS:
            for direction, words, factor, median in DIRECTIONS if caching else DIRECTIONS[:2]:
                for suffix, tier_factor in TIERS:
                    price = round((price_out if factor is None else price_in * factor) * tier_factor, 8)
                    sku = f"{zlib.crc32(f'{region[0]}{part}{direction}{suffix}'.encode()):010d}"
                    meters.append(
                        (
                            *meter(
                                region,
                                f"{region[0]}-{part}-{direction}{suffix}",
                                f"${price} per 1K {words} for {name} in {region[2]}",
                                price,
                                "1K tokens",
                                "Amazon Bedrock",
                                "AWS",
                                "AmazonBedrock",
                                sku,
                            ),
                            1000,
                            median,
                        )
                    )
        for model_id, name, price_in, price_out in MANTLE_MODELS:
            for direction, words, factor, median in (DIRECTIONS[0], DIRECTIONS[1]):
                for suffix, tier_factor in MANTLE_TIERS:
                    price = round((price_out if factor is None else price_in) * tier_factor, 8)
                    meters.append(
                        (
                            *meter(
                                region,
                                f"{region[0]}-{model_id}-mantle-{direction}{suffix}",
                                f"${price} per 1K {words} for {name} in {region[2]}",
                                price,
                                "1K tokens",
                                "Amazon Bedrock",
                                "AWS",
                                "AmazonBedrock",
                                f"M{zlib.crc32(f'{region[0]}{model_id}{direction}{suffix}'.encode()):010d}",
                            ),
                            1000,
                            median,
                        )
                    )
        # Claude bought through AWS Marketplace: one unit = one token, the model is in the service name only.
        for kind, price, median in (
            ("InputTokenCount", 0.000003, 40.0),
            ("OutputTokenCount", 0.000015, 6.0),
            ("CacheReadInputTokenCount", 0.0000003, 120.0),
        ):
            meters.append(
                (
                    *meter(
                        region,
                        f"{region[0]}-MP:{region[0]}_{kind}-Units",
                        "",
                        price,
                        "Units",
                        "Claude Sonnet 4.5 (Amazon Bedrock Edition)",
                        "Anthropic",
                        "prod-8x2yq7abcd1234efgh5678",
                        f"MP{region[0]}{kind}",
                    ),
                    1,
                    median,
                )
            )
    return meters


def write_focus_csv(path: Path, lines: int, *, seed: int = 20260301, accounts: int = 160) -> int:
    """Write `lines` FOCUS rows (30 days of hourly Bedrock lines) to `path`, streaming; returns the bytes written.

    A line is one series (sub-account × meter × inference profile, with its operation) in one hour. Like a real
    organisation's export, an hour holds about two thirds of a population of series 1.5 × the lines per hour,
    and the population drifts (a fifth of it is replaced over the month); series do not repeat within an hour,
    so identities are unique. Quantities are log-normal, costs are quantity × unit price rendered as AWS doubles.
    """
    rng = random.Random(seed)
    meters = _meters()
    subaccounts = []
    for a in range(accounts):
        account_id = f"{210000000000 + a * 7919:012d}"
        team, env = TEAMS[a % len(TEAMS)], ("prod", "staging", "dev")[a % 3]
        profiles = []
        for p in range(3):  # two application inference profiles, and direct invocations
            app = APPS[(a + p) % len(APPS)]
            tags = {"user:team": team, "user:env": env, "user:cost-center": f"CC-{400 + a % 40}"}
            if p < 2:
                tags["user:app"] = app
            profiles.append(
                (p < 2, f"{uuid.UUID(int=a * 3 + p + 1).hex[-12:]}", _csv(json.dumps(tags, separators=(",", ":"))))
            )
        subaccounts.append((account_id, f"{team}-{env}-{a:03d}", profiles))
    combos = accounts * len(meters) * 3
    stride = 7919
    while math.gcd(stride, combos) != 1:
        stride += 2
    hours = DAYS * 24
    population = math.ceil(lines / hours * 1.5)
    if population > combos:
        raise ValueError(f"{lines} lines need more series than the generator has ({combos})")
    end_at, start_at, resource_at, type_at = (
        COL["ChargePeriodEnd"],
        COL["ChargePeriodStart"],
        COL["ResourceId"],
        COL["ResourceType"],
    )
    region_at, operation_at = COL["RegionId"], COL["x_Operation"]
    account_at, name_at, tags_at = COL["SubAccountId"], COL["SubAccountName"], COL["Tags"]
    log, lognormal, sample = math.log, rng.lognormvariate, rng.sample
    with open(path, "w", encoding="utf-8", newline="", buffering=1 << 20) as out:
        out.write(",".join(HEADER) + "\n")
        for hour in range(hours):
            start = FIRST_HOUR + dt.timedelta(hours=hour)
            start_text = start.strftime("%Y-%m-%dT%H:00:00.000Z")
            end_text = (start + dt.timedelta(hours=1)).strftime("%Y-%m-%dT%H:00:00.000Z")
            count = lines * (hour + 1) // hours - lines * hour // hours
            first_series = hour * population // (hours * 5)
            batch = []
            for k in sample(range(population), count):
                combo = (first_series + k) * stride % combos
                a, rest = combo % accounts, combo // accounts
                cells, price, per_quantity, median = meters[rest // 3]
                account_id, account_name, profiles = subaccounts[a]
                is_profile, profile_id, tags = profiles[rest % 3]
                cells = list(cells)
                thousands = max(0.001, round(lognormal(log(median), 1.1), 3))
                quantity = repr(thousands) if per_quantity == 1000 else str(max(1, int(thousands * 1000)))
                cost = repr(round(float(quantity) * price, 10))
                for i in COST_CELLS:
                    cells[i] = cost
                for i in QUANTITY_CELLS:
                    cells[i] = quantity
                cells[end_at], cells[start_at] = end_text, start_text
                if is_profile:
                    cells[resource_at] = (
                        f"arn:aws:bedrock:{cells[region_at]}:{account_id}:application-inference-profile/{profile_id}"
                    )
                    cells[type_at] = "Application Inference Profile"
                cells[account_at], cells[name_at], cells[tags_at] = account_id, account_name, tags
                cells[operation_at] = OPERATIONS[(a + rest) % len(OPERATIONS)]
                batch.append(",".join(cells))
                if len(batch) == 10_000:
                    out.write("\n".join(batch) + "\n")
                    batch = []
            if batch:
                out.write("\n".join(batch) + "\n")
    return os.path.getsize(path)
