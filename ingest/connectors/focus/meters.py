"""How to read a FOCUS meter: token counts and units, token direction, AWS Bedrock usage types, the
model named by a SKU, meter or resource, and the provider behind a row. Used by focus/file.py; a vendor's
new meter wording is taught here."""

import decimal
import functools
import re
from decimal import Decimal

from ingest.connectors.parsing import parse_decimal

# The UsageRow field each token direction counts into.
INPUT, OUTPUT, CACHE_READ, CACHE_WRITE = "input_tokens", "output_tokens", "cached_input_tokens", "cache_write_tokens"


# --- tokens: how many ---

_UNIT = re.compile(r"^(?:(\d+(?:\.\d+)?)\s*(thousand|million|k|m)?\b)?\s*(.*)$")
_SCALE = {None: 1, "k": 1000, "thousand": 1000, "m": 1_000_000, "million": 1_000_000}
_COUNT_WORDS = {"", "unit", "units", "count", "counts"}


@functools.lru_cache(maxsize=1024)
def unit_of(unit: str, is_token_meter: bool) -> tuple[str | None, Decimal]:
    """('tokens' | 'requests' | None, block size) for a FOCUS / vendor unit string."""
    lower = unit.strip().lower()
    if not lower or "hour" in lower or "/" in lower:  # Token-Hours (cache storage), GB/Hour … are not counts
        return None, Decimal(1)
    match = _UNIT.match(lower)
    number, scale, word = match.group(1), match.group(2), match.group(3).strip()
    block = Decimal(number or 1) * _SCALE[scale]
    if word.startswith("token"):
        return "tokens", block
    if word in ("request", "requests", "call", "calls"):
        return "requests", block
    if word in _COUNT_WORDS and is_token_meter:  # Azure `1K`/`1M`, Marketplace `Units`, GCP `count`
        return "tokens", block
    return None, block


def token_quantity(get, is_token_meter: bool) -> tuple[int, str | None]:
    for quantity_column, unit_column in (("ConsumedQuantity", "ConsumedUnit"), ("PricingQuantity", "PricingUnit")):
        text = get[quantity_column]
        kind, block = unit_of(get[unit_column], is_token_meter)
        if not text or kind is None:
            continue
        quantity = parse_decimal(text)  # negative on a refund or correction: the count nets the original's
        count = (quantity * block).to_integral_value(rounding=decimal.ROUND_HALF_UP)
        return int(count), kind
    return 0, None


# --- tokens: which direction ---


def _squash(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]+", re.sub(r"(?<=[a-z])(?=[A-Z])", " ", text).lower()))


def classify(text: str) -> str | None:
    """The token direction a meter, SKU or usage-type string names, or None."""
    if not text:
        return None
    squashed, words = _squash(text), _words(text)
    if any(marker in squashed for marker in ("cachewrite", "cachecreation", "cachedwrite")):
        return CACHE_WRITE
    if any(marker in squashed for marker in ("cacheread", "cachehit", "caching")) or "cached" in words:
        return CACHE_READ
    if "output" in squashed or "completion" in squashed or words & {"outp", "outpt", "opt"}:
        return OUTPUT
    if "input" in squashed or "prompt" in squashed or words & {"inp", "inpt"} or "embedding" in squashed:
        return INPUT
    return None


def direction_from_details(details: dict) -> str | None:
    """FOCUS AI draft: `TokenType` (Input/Output/CacheWrite/CacheRead) or `TokenDirection` + `TokenCacheAction`."""
    lowered = {str(k).lower(): str(v) for k, v in details.items() if v is not None}
    if lowered.get("tokentype"):
        return classify(lowered["tokentype"])
    token_direction = lowered.get("tokendirection", "").lower()
    if not token_direction:
        return None
    if "out" in token_direction:
        return OUTPUT
    action = _squash(lowered.get("tokencacheaction", ""))
    if "write" in action or "creat" in action:
        return CACHE_WRITE
    if "read" in action or "hit" in action or action == "cached":
        return CACHE_READ
    return INPUT


def first_direction(get) -> str | None:
    for column in ("SkuMeter", "x_SkuMeterName", "x_SkuDescription", "ChargeDescription"):
        direction = classify(get[column])
        if direction:
            return direction
    return None


# --- AWS Bedrock usage types (§4.3) ---

_AWS_REGION = re.compile(r"^[A-Z]{2,4}\d{0,2}-")
_AWS_TOKEN_PART = re.compile(
    r"-(?:mantle-)?(?:cache-read-input-token-count|cache-write-input-token-count|cache-read-input-tokens?"
    r"|cache-write-input-tokens?|cache-read-tokens|cache-write-tokens|input-tokens?|output-tokens?"
    r"|input-token-count|output-token-count)",
    re.IGNORECASE,
)
_TIER_WORDS = ("batch", "priority", "flex")


def aws_usage_type(text: str) -> dict | None:
    """{'model', 'direction', 'tier'} for a Bedrock token usage type, else None."""
    if not text or not _AWS_REGION.match(text):
        return None
    body = _AWS_REGION.sub("", text, count=1)
    if body.startswith("MP:"):  # Marketplace: USE1-MP:USE1_InputTokenCount-Units (the model is not in it)
        direction = classify(body[3:])
        return {"model": "", "direction": direction, "tier": tier_from_words(body)} if direction else None
    match = _AWS_TOKEN_PART.search(body)
    if not match:
        return None
    return {
        "model": _bedrock_model(body[: match.start()]),
        "direction": classify(match.group(0)),
        "tier": tier_from_words(body[match.end() :]),
    }


def _bedrock_model(name: str) -> str:
    """`Claude4.6Sonnet` → `claude-sonnet-4-6`, `Claude3Haiku` → `claude-3-haiku`, `NovaLite` → `nova-lite`."""
    claude = re.fullmatch(r"Claude(\d+(?:\.\d+)?)([A-Za-z]*)", name)
    if claude:
        version, family = claude.group(1).replace(".", "-"), claude.group(2).lower()
        if not family:
            return f"claude-{version}"
        return f"claude-{family}-{version}" if float(claude.group(1)) >= 4 else f"claude-{version}-{family}"
    if "." in name.split("-", 1)[0]:  # mantle: the API model id itself (`anthropic.claude-opus-4-8`)
        return name
    return re.sub(r"(?<=[a-z])(?=[A-Z])|(?<=\d)(?=[A-Z][a-z])", "-", name).lower()


def tier_from_words(text: str) -> str:
    words = _words(text)
    return next((tier for tier in _TIER_WORDS if tier in words), "")


# --- model ---

_DROP_WORDS = {
    # direction
    "inp",
    "inpt",
    "input",
    "outp",
    "outpt",
    "opt",
    "output",
    "cached",
    "cache",
    "caching",
    "read",
    "write",
    "thinking",
    "prompt",
    "completion",
    # deployment / region / tier
    "glbl",
    "gl",
    "global",
    "dzone",
    "dz",
    "datazone",
    "regional",
    "rgnl",
    "batch",
    "priority",
    "flex",
    "standard",
    # units and noise
    "tokens",
    "token",
    "1k",
    "1m",
    "count",
    "units",
    "ga",
    "text",
    "predictions",
    "prediction",
    "uncached",
}
_GUID_SUFFIX = re.compile(r"^(?P<model>.+?)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.I)


# A token class hyphen-joined to a model id or standing alone: `amazon.nova-lite-v1:0-cache-read-input-tokens`,
# `cache-read-input`. The meter says what the tokens are; the model id never carries it.
_TOKEN_CLASS_PARTS = {
    "input",
    "inp",
    "output",
    "outp",
    "cached",
    "cache",
    "read",
    "write",
    "tokens",
    "token",
    "count",
    "prompt",
    "completion",
    "uncached",
    "units",
}


def _without_token_class(word: str) -> str:
    parts = word.split("-")
    while parts and parts[-1].lower() in _TOKEN_CLASS_PARTS:
        parts.pop()
    return "-".join(parts)


def model_from_meter(text: str) -> str:
    """A meter or SKU description without its direction, deployment and unit words, hyphen-joined."""
    if not text or "$" in text or " per " in text:
        return ""  # prose ("$0.003 per 1K input tokens …") names no model reliably
    text = re.sub(r"\([^)]*\)", " ", text)  # "(Thinking On)"
    text = re.sub(r"\s+-\s+predictions?\b.*$", " ", text, flags=re.I)
    text = re.sub(r"-(input|output)\b", r" \1", text, flags=re.I)  # "Phi-4-Input Tokens"
    words = [_without_token_class(w) for w in re.split(r"[\s,;]+", text.strip()) if w and w.lower() not in _DROP_WORDS]
    model = "-".join(w for w in words if w).lower()
    if model.startswith("claude"):
        model = model.replace(".", "-")  # Anthropic ids use hyphens: claude-sonnet-4-5
    return model


def meter_model(get, details: dict, usage_type: dict | None, direction: str | None) -> str:
    lowered = {str(k).lower(): v for k, v in details.items()}
    for key in ("modelid", "modelname", "model"):
        if lowered.get(key):
            return str(lowered[key])
    for column in ("x_ModelId", "x_ModelName", "x_Model"):
        if get[column]:
            return get[column]
    if usage_type and usage_type["model"]:
        return usage_type["model"]
    for column in ("ServiceName", "ChargeDescription"):
        edition = re.match(r"^(.+?)\s*\(Amazon Bedrock Edition\)", get[column])
        if edition:
            return model_from_meter(edition.group(1))
    # Meter words name a model only on token meters; elsewhere they are a VM size or prose ("Tax for …").
    for column in ("x_SkuMeterName", "SkuMeter", "x_SkuDescription", "ChargeDescription") if direction else ():
        model = model_from_meter(get[column])
        if model:
            return model
    guid = _GUID_SUFFIX.match(get["ResourceName"])
    if guid:
        return guid.group("model")
    return ""


# --- provider ---

_VENDOR_SLUGS = {
    "openai": "openai",
    "anthropic": "anthropic",
    "groq": "groq",
    "cerebras": "cerebras",
    "moonshot": "moonshot",
    "moonshotai": "moonshot",
    "openrouter": "openrouter",
    "together": "together",
    "togetherai": "together",
    "fireworks": "fireworks",
    "fireworksai": "fireworks",
    "deepinfra": "deepinfra",
}


PROVIDER_NAME_COLUMNS = (
    "ServiceProviderName",
    "ProviderName",
    "HostProviderName",
    "InvoiceIssuerName",
    "PublisherName",
)


def provider_slug(get, usage_type: dict | None) -> str:
    names = [get[c] for c in PROVIDER_NAME_COLUMNS]
    words = _words(" ".join(names))
    if words & {"aws", "amazon"}:
        service = " ".join(get[c] for c in ("ServiceName", "x_ServiceCode", "ChargeDescription")).lower()
        return "aws-bedrock" if usage_type is not None or "bedrock" in service else ""
    if words & {"microsoft", "azure"}:
        return "azure-openai"
    if "google" in words:
        return "gcp-vertex"
    primary = next((name for name in names if name), "")
    return _VENDOR_SLUGS.get(_squash(primary), "")
