"""The cells of a gateway log's record, read one at a time (ingest/connectors/gateway/log.py reads a record with
them): text, amounts, counts, times, JSON fields, tags, the provider of a model and a key's reference. Each refuses
what it cannot read with a ValueError naming the field; none guesses. parse_time is also how the LiteLLM API
connector reads a record's time (it orders its pages by startTime).
"""

import datetime as dt
import decimal
import hashlib
import json
from decimal import Decimal

PROVIDER_SLUGS = {
    "groq": "groq",
    "cerebras": "cerebras",
    "moonshot": "moonshot",
    "moonshotai": "moonshot",
    "openai": "openai",
    "text-completion-openai": "openai",
    "anthropic": "anthropic",
    "bedrock": "aws-bedrock",
    "bedrock_converse": "aws-bedrock",
    "azure": "azure-openai",
    "azure_ai": "azure-openai",
    "azure_text": "azure-openai",
    "vertex_ai": "gcp-vertex",
    "vertex_ai_beta": "gcp-vertex",
    "together_ai": "together",
    "together": "together",
    "fireworks_ai": "fireworks",
    "fireworks": "fireworks",
    "deepinfra": "deepinfra",
    "openrouter": "openrouter",
}


def text_of(value) -> str:
    if value is None:
        return ""
    return (value if isinstance(value, str) else str(value)).strip()


def number_of(value, name: str) -> Decimal:
    if isinstance(value, bool):
        raise ValueError(f"{name} {value!r} is not a number")
    try:
        number = Decimal(value.strip() if isinstance(value, str) else value)
    except (decimal.InvalidOperation, TypeError, ValueError):
        raise ValueError(f"{name} {value!r} is not a number") from None
    if not number.is_finite():
        raise ValueError(f"{name} {value!r} is not a finite number")
    return number


def count_of(value, name: str, *, required: bool = False) -> int:
    """A whole non-negative count; an absent one is 0. A required one (LiteLLM writes prompt_tokens and
    completion_tokens on every record, 0 included) in an empty CSV cell is a record not read, never zero tokens."""
    if type(value) is int and 0 <= value <= MAX_PLAIN_COUNT:  # JSON's whole numbers, the column reader's zeros
        return value
    if value is None or value == "":
        if required and value == "":
            raise ValueError(f"{name} is empty (LiteLLM writes it on every record, 0 when there were none)")
        return 0
    number = number_of(value, name)
    if number != number.to_integral_value():
        raise ValueError(f"{name} {value!r} is not a whole number")
    if number < 0:
        raise ValueError(f"{name} is negative ({value})")
    return int(number)


MAX_PLAIN_COUNT = 2**62
# One decoder for every JSON cell: json.loads with parse_float builds a new JSONDecoder per call, which cost the row
# reader as much as the decoding itself (~3 µs a record).
_DECODER = json.JSONDecoder(parse_float=Decimal)


def first_count(*candidates) -> int:
    for source, name in candidates:
        if isinstance(source, dict) and source.get(name) not in (None, ""):
            return count_of(source[name], name)
    return 0


def parse_time(value, name: str, *, required: bool = False) -> dt.datetime | None:
    """ISO 8601 (`Z`, offset, or naive = UTC as LiteLLM stores it), `YYYY-MM-DD HH:MM:SS.fff`, or Unix seconds/ms."""
    if value is None or value == "":
        if required:
            raise ValueError(f"{name} is missing")
        return None
    if isinstance(value, dt.datetime):  # already read (the column reader's records): as its text would read
        return (value if value.tzinfo else value.replace(tzinfo=dt.UTC)).astimezone(dt.UTC)
    if isinstance(value, (int, float, Decimal)) and not isinstance(value, bool):
        seconds = float(value)
        if seconds > 1e11:  # milliseconds
            seconds /= 1000
        try:
            return dt.datetime.fromtimestamp(seconds, tz=dt.UTC)
        except (OverflowError, OSError, ValueError):
            raise ValueError(f"{name} {value!r} is not a Unix time") from None
    text = text_of(value)
    if text.replace(".", "", 1).isdigit():
        return parse_time(Decimal(text), name)
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        parsed = dt.datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"{name} {value!r} is not an ISO 8601 date-time") from None
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)).astimezone(dt.UTC)


def json_field(value, name: str, kind: type):
    """A JSON column: already decoded (JSON input) or a JSON string (CSV input); empty → empty."""
    if value is None or (isinstance(value, str) and value.strip() in ("", "null")):
        return kind()
    if isinstance(value, str):
        try:
            # json.loads refuses a leading BOM with its own message; the shared decoder is json.loads otherwise
            value = json.loads(value, parse_float=Decimal) if value.startswith("\ufeff") else _DECODER.decode(value)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{name} is not valid JSON ({exc.msg})") from None
    if value is None:
        return kind()
    if not isinstance(value, kind):
        raise ValueError(f"{name} must be a JSON {'object' if kind is dict else 'array'}")
    return value


def request_tags(value) -> dict:
    """LiteLLM's `request_tags` (a JSON array, or its CSV text) as tags; a text is read once per distinct value."""
    if not isinstance(value, str):
        return tag_list(json_field(value, "request_tags", list))
    try:
        return dict(_REQUEST_TAGS[value])
    except KeyError:
        tags = tag_list(json_field(value, "request_tags", list))
        if len(_REQUEST_TAGS) >= 4096:
            _REQUEST_TAGS.clear()
        _REQUEST_TAGS[value] = tuple(tags.items())
        return tags


_REQUEST_TAGS: dict[str, tuple] = {}


def tag_list(tags) -> dict:
    """LiteLLM request tags: `["jobID:214590", "prod"]` → {"jobID": "214590", "prod": "true"}."""
    result = {}
    for tag in tags or ():
        key, sep, value = text_of(tag).partition(":")
        if key.strip():
            result[key.strip()] = value.strip() if sep else "true"
    return result


def tag_dict(tags) -> dict:
    if tags is None:
        return {}
    if not isinstance(tags, dict):
        raise ValueError("tags must be a JSON object or array")
    return {str(k): text_of(v) for k, v in tags.items() if v is not None and not isinstance(v, (dict, list))}


def provider_slug(provider: str, model: str) -> str:
    """LiteLLM's custom_llm_provider (or the `groq/…` prefix of the model) as our provider slug."""
    provider = provider.lower()
    if not provider and "/" in model:
        prefix = model.split("/", 1)[0].lower()
        provider = prefix if prefix in PROVIDER_SLUGS or prefix.startswith("vertex_ai") else ""
    if not provider:
        return ""  # the account's provider
    if provider.startswith("vertex_ai"):
        return "gcp-vertex"
    return PROVIDER_SLUGS.get(provider, provider)  # unknown: kept, so the import names it instead of hiding it


def key_ref(key: str) -> str:
    """LiteLLM logs the SHA-256 of a key; a raw `sk-…` key is hashed the same way so it is never stored."""
    if key.startswith("sk-"):
        return hashlib.sha256(key.encode()).hexdigest()
    return key
