"""What the what-if and savings tests share: a LiteLLM gateway log of the last days imported through the real
import path (spend estimated from the catalog, performance measured), and offerings of gpt-oss-120b."""

import datetime as dt
import io
import json
from decimal import Decimal

from django.utils import timezone

from finops.models import Account, AttributionRule, Provider
from finops.whatif.services import offering_upsert
from ingest.services import usage_file_import

REQUESTS = 300  # over the last three days


def gateway_request(at: dt.datetime, n: int, *, key: str, provider: str = "groq") -> dict:
    """700 ms end to end, first token at 200 ms, 100 output tokens: 200 tokens/s of generation."""
    return {
        "request_id": f"{key}-{n}",
        "startTime": at.isoformat(),
        "endTime": (at + dt.timedelta(milliseconds=700)).isoformat(),
        "completionStartTime": (at + dt.timedelta(milliseconds=200)).isoformat(),
        "model": "openai/gpt-oss-120b",
        "custom_llm_provider": provider,
        "prompt_tokens": 500,
        "completion_tokens": 100,
        "api_key": key * 16,
        "team_id": "",
        "metadata": {},
        "request_tags": [],
        "status": "success",
    }


def import_groq_traffic(workload, *, key: str = "abcd", provider: str = "groq") -> Account:
    # One account per workload: a second file for the same account and window would replace the first (idempotent).
    account, _ = Account.objects.get_or_create(
        name=f"gateway-{key}", defaults={"provider": Provider.objects.get(slug=provider), "connector": "gateway_log"}
    )
    AttributionRule.objects.create(
        workload=workload, priority=len(key) * 10 + ord(key[0]), account=account, api_key=key * 16
    )
    start = timezone.now().astimezone(dt.UTC).replace(hour=10, minute=0, second=0, microsecond=0) - dt.timedelta(days=3)
    records = [
        gateway_request(start + dt.timedelta(minutes=n * 10), n, key=key, provider=provider) for n in range(REQUESTS)
    ]
    run = usage_file_import(
        account=account, stream=io.BytesIO(json.dumps(records).encode()), file_name="spend_logs.json"
    )
    assert run.status == "succeeded", run.error
    return account


# 300 requests × (500 × $0.15 + 100 × $0.60) / 10⁶ at Groq's catalog price of gpt-oss-120b
TODAY_COST = Decimal("0.0405")


def gpt_oss_offerings():
    """Groq (catalog-priced, entered figures that measurement replaces), DeepInfra (catalog $0.037/$0.17, slow
    but within 4 s), Cerebras (catalog $0.35/$0.75, fastest)."""
    groq, _ = offering_upsert(
        provider=Provider.objects.get(slug="groq"),
        model="gpt-oss-120b",
        input_per_mtok=Decimal("9.99"),
        output_per_mtok=Decimal("9.99"),
        output_tokens_per_s=Decimal(50),
        ttft_seconds=Decimal(1),
    )
    deepinfra, _ = offering_upsert(
        provider=Provider.objects.get(slug="deepinfra"),
        model="gpt-oss-120b",
        output_tokens_per_s=Decimal(40),
        ttft_seconds=Decimal("0.5"),
    )
    cerebras, _ = offering_upsert(
        provider=Provider.objects.get(slug="cerebras"),
        model="gpt-oss-120b",
        output_tokens_per_s=Decimal(3000),
        ttft_seconds=Decimal("0.1"),
    )
    return groq, deepinfra, cerebras


def picked(row: dict, expected: dict) -> bool:
    """The row holds these keys with these values (the answer has more)."""
    return {name: row.get(name) for name in expected} == expected
