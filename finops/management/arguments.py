"""Argument types the management commands share."""

import datetime as dt

from django.core.management.base import CommandError


def utc_day(text: str) -> dt.date:
    """A `--start`/`--end`/`--today` value: a UTC day in YYYY-MM-DD form, or a clear error."""
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise CommandError(f"{text!r} is not a date in YYYY-MM-DD form") from None
