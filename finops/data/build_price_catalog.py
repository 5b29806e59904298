"""Rebuild finops/data/price_catalog.csv from LiteLLM's public price map (model_prices_and_context_window.json, MIT).

    python -m finops.data.build_price_catalog PATH/TO/litellm_model_prices_X.json

Only the curated keys below are taken (the map has thousands of entries, many unfamiliar); prices are
per single token in the map and per million tokens here, computed in Decimal so nothing is rounded.
"""

import csv
import json
import sys
from decimal import Decimal
from pathlib import Path

from finops.core.modelids import normalise_model

# litellm key -> our provider slug. One entry per (provider, normalised model): where regions differ
# (Bedrock `us.` is 1.1 × `global.`), the global list price is the one kept.
CURATED = {
    "openai": [
        "gpt-4o",
        "gpt-4o-mini",
        "gpt-4.1",
        "gpt-4.1-mini",
        "gpt-4.1-nano",
        "o3",
        "o4-mini",
        "gpt-5",
        "gpt-5-mini",
        "gpt-5-nano",
        "gpt-5.1",
        "gpt-5.2",
        "gpt-5.4",
        "gpt-5.4-mini",
        "gpt-5.5",
        "text-embedding-3-small",
        "text-embedding-3-large",
    ],
    "anthropic": [
        "claude-haiku-4-5",
        "claude-sonnet-4-5",
        "claude-sonnet-4-6",
        "claude-opus-4-5",
        "claude-opus-4-6",
        "claude-opus-4-7",
    ],
    "gcp-vertex": ["gemini-2.5-pro", "gemini-2.5-flash", "gemini-2.5-flash-lite", "vertex_ai/claude-sonnet-4-5"],
    "aws-bedrock": [
        "global.anthropic.claude-sonnet-4-5-20250929-v1:0",
        "anthropic.claude-haiku-4-5-20251001-v1:0",
        "us.amazon.nova-lite-v1:0",
        "us.amazon.nova-pro-v1:0",
    ],
    "azure-openai": ["azure/gpt-4o", "azure/gpt-4.1", "azure/gpt-5"],
    "groq": ["groq/openai/gpt-oss-120b", "groq/openai/gpt-oss-20b"],
    "cerebras": ["cerebras/gpt-oss-120b", "cerebras/llama3.1-8b", "cerebras/qwen-3-32b"],
    "together": [
        "together_ai/meta-llama/Llama-3.3-70B-Instruct-Turbo",
        "together_ai/deepseek-ai/DeepSeek-V3.1",
        "together_ai/openai/gpt-oss-120b",
        "together_ai/moonshotai/Kimi-K2-Instruct",
    ],
    "fireworks": [
        "fireworks_ai/accounts/fireworks/models/deepseek-v3p1",
        "fireworks_ai/accounts/fireworks/models/gpt-oss-120b",
        "fireworks_ai/accounts/fireworks/models/kimi-k2-instruct-0905",
        "fireworks_ai/accounts/fireworks/models/llama-v3p3-70b-instruct",
    ],
    "deepinfra": [
        "deepinfra/meta-llama/Llama-3.3-70B-Instruct-Turbo",
        "deepinfra/deepseek-ai/DeepSeek-V3.1",
        "deepinfra/openai/gpt-oss-120b",
    ],
    "moonshot": ["moonshot/kimi-k2.5", "moonshot/kimi-k2.6", "moonshot/moonshot-v1-8k", "moonshot/moonshot-v1-128k"],
}

COLUMNS = {
    "input_per_mtok": "input_cost_per_token",
    "output_per_mtok": "output_cost_per_token",
    "cached_input_per_mtok": "cache_read_input_token_cost",
    "cache_write_per_mtok": "cache_creation_input_token_cost",
    "batch_input_per_mtok": "input_cost_per_token_batches",
    "batch_output_per_mtok": "output_cost_per_token_batches",
}


def per_mtok(value) -> str:
    if value is None:
        return ""
    return format((Decimal(value) * 1_000_000).normalize(), "f")


def build(source: Path, target: Path) -> int:
    from finops.prices.services import CATALOG_EFFECTIVE_FROM

    prices = json.loads(source.read_text(), parse_float=Decimal)
    rows = []
    for provider, keys in CURATED.items():
        for key in keys:
            entry = prices[key]
            row = {
                "provider": provider,
                "model": normalise_model(key),
                "source_ref": key,
                "effective_from": CATALOG_EFFECTIVE_FROM.isoformat(),
            }
            row.update({ours: per_mtok(entry.get(theirs)) for ours, theirs in COLUMNS.items()})
            rows.append(row)
    with target.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=["provider", "model", "effective_from", *COLUMNS, "source_ref"])
        writer.writeheader()
        writer.writerows(rows)
    return len(rows)


if __name__ == "__main__":
    import os

    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "finops.settings")
    django.setup()
    count = build(Path(sys.argv[1]), Path(__file__).with_name("price_catalog.csv"))
    print(f"wrote {count} prices")
