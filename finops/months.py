"""UTC calendar months as dates: a month is its first day (billing months are UTC calendar months, DESIGN.md 2)."""

import datetime as dt


def month_of(day: dt.date) -> dt.date:
    return day.replace(day=1)


def next_month(month: dt.date) -> dt.date:
    """The first day of the month after `month`'s (any day of it)."""
    return (month.replace(day=1) + dt.timedelta(days=32)).replace(day=1)
