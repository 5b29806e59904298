"""Reading single OpenAI Costs/Usage results (reference/provider-formats.md §1): line items, tokens, amounts.

Pure functions over one result object; the connector (openai/api.py) pages, checks envelopes and joins.
Each raises ValueError with a message for the user; the connector adds the endpoint and page.
"""

import re
from dataclasses import dataclass
from decimal import Decimal

from finops.core.modelids import normalise_model
from ingest.connectors.parsing import parse_decimal

# `gpt-audio-mini-2025-12-15 audio, input`: the modality word after the model is not part of its name.
_MODALITIES = {"audio", "image", "text", "video"}
# A model name is one word; anything with spaces ("Vector storage", "web search tool calls") names no model.
_MODEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:\-]*$")
_TOKEN_WORDS = {"input", "output"}


@dataclass(frozen=True)
class LineItem:
    """A cost `line_item` read best-effort; `text` is always kept as OpenAI sent it."""

    text: str
    model: str = ""  # "" when the item names no model ("web search tool calls", "Vector storage")
    tier: str = ""  # "priority", "evals", … from "<tier> | <model>, …"
    direction: str = ""  # "input", "cached input", "output, long context", "audio", "training", …

    @property
    def per_token(self) -> bool:
        """Priced per token of a model, so it belongs to that model's usage rows (input/output, cached or not).

        Other directions of a model ("whisper-1, audio", a fine-tuning "training" item) have no usage rows
        among the endpoints we read, so joining them would pin their cost on unrelated tokens.
        """
        words = set(re.split(r"[\s,]+", self.direction.lower()))
        return bool(self.model) and bool(words & _TOKEN_WORDS)


def parse_line_item(text: str) -> LineItem:
    """`[<tier> | ]<model>[ <modality>], <direction>[, <qualifier>]`, or opaque text (no official grammar).

    Never fails: a line item we cannot read is kept whole as an opaque item, and its cost still counts.
    """
    head, comma, direction = text.partition(",")
    tier = ""
    if "|" in head:
        tier, _, head = head.partition("|")
        tier = tier.strip()
    words = head.split()
    if len(words) == 2 and words[1].lower() in _MODALITIES:
        words = words[:1]
    model = words[0] if len(words) == 1 else ""
    if not comma or not _MODEL.match(model):
        return LineItem(text=text, tier=tier)
    return LineItem(text=text, model=model, tier=tier, direction=direction.strip())


def model_key(model: str) -> str:
    """What a usage row's model and a cost line's model are compared by.

    Fine-tuned models read `ft:gpt-4o-mini-2024-07-18:acme::abc123` in usage but `ft-gpt-4o-mini-2024-07-18`
    in cost line items, so both become `ft-gpt-4o-mini`; everything else is `normalise_model`.
    """
    model = model.strip()
    if model.lower().startswith("ft:"):
        parts = model.split(":")
        if len(parts) > 1 and parts[1]:
            return "ft-" + normalise_model(parts[1])
    return normalise_model(model) if model else ""


def parse_amount(amount) -> tuple[Decimal, str]:
    """`{"value": 0.06 | "0.000004500…" | "0E-6176", "currency": "usd"}` → (exact Decimal, "USD").

    JSON numbers arrive as exact Decimals (HttpClient.get_json parses them so); strings are parsed as they are.
    """
    if not isinstance(amount, dict):
        raise ValueError(f"amount is {type(amount).__name__}, expected an object with value and currency")
    value = amount.get("value")
    if isinstance(value, bool) or not isinstance(value, (int, Decimal, float, str)):
        raise ValueError(f"amount.value {value!r} is not a number")
    try:
        number = parse_decimal(str(value))
    except ValueError as exc:
        raise ValueError(f"amount.value {exc}") from None
    if number == 0:
        # "0E-6176" is an exact zero, but its exponent would drag every sum it joins to thousands of digits.
        number = Decimal(0)
    currency = amount.get("currency")
    if not isinstance(currency, str) or not currency.strip():
        raise ValueError(f"amount.currency {currency!r} is not a currency code")
    return number, currency.strip().upper()


def count(result: dict, name: str, *, required: bool = False) -> int:
    """A token or request count; absent or null optional fields are 0 (older spec versions lack them)."""
    value = result.get(name)
    if value is None:
        if required:
            raise ValueError(f"{name} is missing")
        return 0
    if isinstance(value, Decimal) and value == value.to_integral_value():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} {value!r} is not a non-negative whole number")
    return value


def ref(result: dict, name: str) -> str:
    """A group key: null (not grouped by it, or e.g. Playground usage without an API key) reads as ""."""
    value = result.get(name)
    return "" if value is None else str(value)


def completion_tokens(result: dict) -> tuple[int, int, int, int]:
    """(uncached input, cached input, cache write, output): disjoint, as UsageRow counts them.

    OpenAI's `input_tokens` includes cached and cache-write tokens. The 2026 spec also sends
    `input_uncached_tokens`; when it does, the three parts must add up to `input_tokens` (the documented
    identity), otherwise tokens would be lost or counted twice and we stop instead.
    """
    all_input = count(result, "input_tokens", required=True)
    cached = count(result, "input_cached_tokens")
    cache_write = count(result, "input_cache_write_tokens")
    output = count(result, "output_tokens", required=True)
    if result.get("input_uncached_tokens") is not None:
        uncached = count(result, "input_uncached_tokens")
        if uncached + cached + cache_write != all_input:
            raise ValueError(
                f"input_uncached_tokens ({uncached}) + input_cached_tokens ({cached}) + input_cache_write_tokens "
                f"({cache_write}) do not add up to input_tokens ({all_input})"
            )
    else:
        uncached = all_input - cached - cache_write
        if uncached < 0:
            raise ValueError(
                f"input_cached_tokens ({cached}) + input_cache_write_tokens ({cache_write}) exceed input_tokens "
                f"({all_input}), which includes them"
            )
    return uncached, cached, cache_write, output


def service_tier(result: dict) -> str:
    """Batch usage is its own tier for pricing (half price); otherwise the tier OpenAI names, if grouped."""
    if result.get("batch") is True:
        return "batch"
    return ref(result, "service_tier")
