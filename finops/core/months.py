"""UTC calendar months as dates: a month is its first day (billing months are UTC calendar months,
docs/architecture.md 2)."""

import datetime as dt
import re

MONTH = re.compile(r"^(\d{4})-(\d{2})$")
FIRST_MONTH = dt.date(2000, 1, 1)  # the product's days (finops.core.reporting_period): LLM usage begins well after
END_MONTH = dt.date(2100, 1, 1)  # exclusive


class MonthError(ValueError):
    """A month the caller asked for that cannot be read; the message says why and what would do."""


def parse_month(text: str | None, *, today: dt.date) -> dt.date:
    """`YYYY-MM` as the month's first day. Refused, with a message: another form, a month outside the product's
    days, and a month not yet begun (it has nothing, and an empty answer would read as "nothing was spent")."""
    text = (text or "").strip()
    match = MONTH.match(text)
    if not match or not 1 <= int(match[2]) <= 12:
        raise MonthError(f"Unknown month {text!r}: use YYYY-MM, e.g. {today:%Y-%m}.")
    month = dt.date(int(match[1]), int(match[2]), 1)
    if not FIRST_MONTH <= month < END_MONTH:
        raise MonthError(f"Pick a month between {FIRST_MONTH:%Y-%m} and {END_MONTH - dt.timedelta(days=1):%Y-%m}.")
    if month > month_of(today):
        raise MonthError(
            f"{month:%B %Y} has not begun (today is {today.isoformat()}, UTC): "
            f"the latest month is {month_of(today):%Y-%m}."
        )
    return month


def month_of(day: dt.date) -> dt.date:
    return day.replace(day=1)


def next_month(month: dt.date) -> dt.date:
    """The first day of the month after `month`'s (any day of it)."""
    return (month.replace(day=1) + dt.timedelta(days=32)).replace(day=1)
