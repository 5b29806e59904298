"""Field parsers shared by connectors: exact decimals, UTC days, non-negative counts.

Each raises ValueError with a message meant for the user; the connector adds the file and line.
"""

import datetime as dt
import json
from decimal import Decimal, InvalidOperation


def parse_decimal(text: str) -> Decimal:
    """Exact: '0.000004500000000000000000000000000000000', '0E-6176', '12', '-3.5' (never via float)."""
    try:
        value = Decimal(text.strip())
    except InvalidOperation:
        raise ValueError(f"{text!r} is not a number") from None
    if not value.is_finite():
        raise ValueError(f"{text!r} is not a finite number")
    return value


def parse_count(text: str, name: str) -> int:
    text = text.strip()
    if text == "":
        return 0
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"{name} {text!r} is not a whole number") from None
    if value < 0:
        raise ValueError(f"{name} is negative ({value})")
    return value


def parse_day(text: str) -> dt.date:
    try:
        return dt.date.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"day {text!r} is not a date in YYYY-MM-DD form") from None


def day_start(day: dt.date) -> dt.datetime:
    return dt.datetime.combine(day, dt.time(), tzinfo=dt.UTC)


def parse_tags(text: str) -> dict:
    """A JSON object, or `k=v;k=v`."""
    text = text.strip()
    if not text:
        return {}
    if text.startswith("{"):
        try:
            tags = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"tags are not valid JSON ({exc.msg})") from None
        if not isinstance(tags, dict):
            raise ValueError("tags JSON must be an object")
        return {str(k): str(v) for k, v in tags.items()}
    tags = {}
    for pair in filter(None, (p.strip() for p in text.split(";"))):
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"tag {pair!r} is not key=value")
        tags[key.strip()] = value.strip()
    return tags
