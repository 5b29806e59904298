"""Reading fields of a provider's JSON payload. Each raises ValueError with a message for the user;
connectors add where (endpoint, page, bucket) and turn it into their "malformed" ProviderError."""

from decimal import Decimal


def text_field(item: dict, name: str) -> str:
    """A group key or label: null or absent is ""."""
    value = item.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValueError(f"{name} is {value!r}, not a string")
    return value.strip()


def count_field(item: dict, name: str) -> int:
    """A token or request count: null or absent is 0; 12.0 is 12; fractions, negatives and text are errors."""
    value = item.get(name)
    if value is None:
        return 0
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    elif isinstance(value, Decimal) and value.is_finite() and value == value.to_integral_value():
        value = int(value)  # a JSON number written with a fraction part, such as 12.0
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} is {value!r}, not a whole number")
    if value < 0:
        raise ValueError(f"{name} is negative ({value})")
    return value


def readers(malformed):
    """(text, count) readers that name where a bad field was, through the connector's own `malformed(where,
    message)` error factory: `_text, _count = readers(_malformed)`."""

    def text(item: dict, name: str, where: str) -> str:
        try:
            return text_field(item, name)
        except ValueError as exc:
            raise malformed(where, str(exc)) from None

    def count(item: dict, name: str, where: str) -> int:
        try:
            return count_field(item, name)
        except ValueError as exc:
            raise malformed(where, str(exc)) from None

    return text, count
