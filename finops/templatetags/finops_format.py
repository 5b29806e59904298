"""Number formatting for people: $1.2M, 3.4B tokens, +12.5 %."""

from decimal import Decimal

from django import template
from django.conf import settings

register = template.Library()

SYMBOLS = {"USD": "$", "EUR": "€", "GBP": "£", "JPY": "¥", "CNY": "¥"}
SCALES = ((Decimal(10) ** 12, "T"), (Decimal(10) ** 9, "B"), (Decimal(10) ** 6, "M"), (Decimal(10) ** 3, "k"))


def _compact(value: Decimal) -> str:
    magnitude = abs(value)
    for size, suffix in SCALES:
        if magnitude >= size:
            return f"{value / size:.1f}{suffix}"
    return f"{value:,.2f}" if magnitude < 1000 else f"{value:,.0f}"


@register.filter
def money(value, currency=None):
    if value is None or value == "":
        return "—"
    currency = currency or settings.FINOPS_REPORTING_CURRENCY
    amount = Decimal(value)
    sign = "-" if amount < 0 else ""
    symbol = SYMBOLS.get(currency)
    text = _compact(abs(amount))
    return f"{sign}{symbol}{text}" if symbol else f"{sign}{text} {currency}"


@register.filter
def tokens(value):
    if value is None:
        return "—"
    return _compact(Decimal(value)).replace(".00", "") if Decimal(value) >= 1000 else str(int(value))


@register.filter
def percent(value):
    if value is None:
        return "—"
    return f"{Decimal(value) * 100:+.1f} %"


@register.filter
def per_mtok(value):
    if value is None:
        return "—"
    return f"${Decimal(value):,.2f}/M"


@register.filter
def share(value):
    """A fraction as a percentage of a whole: 0.1234 → 12.3 %."""
    if value is None:
        return "—"
    return f"{Decimal(value) * 100:.1f} %"


@register.filter
def get_item(mapping, key):
    """mapping[key] in a template (a QueryDict gives its last value)."""
    return mapping.get(key) if hasattr(mapping, "get") else None
