"""The period a page reports on, and the period it is compared with (issue 9: any period, on every page).

Carried in the URL, so a view can be bookmarked, shared and kept while moving between pages:
- `period=last-30` (the default): the 30 UTC days before today, against the 30 days before those;
- `period=mtd`: this UTC month up to today (today is not complete, so not counted), against the same days
  of last month;
- `period=last-month`: the last complete calendar month, against the month before;
- `period=2026-10`: a calendar month, against the month before;
- `period=2026-Q3`: a calendar quarter, against the quarter before;
- `period=custom&start=2026-10-01&end=2026-10-15`: any days, `end` excluded as everywhere in the product
  (Explore, the API), against as many days just before.
Periods are half-open [start, end) in UTC days (docs/architecture.md invariant 2). No ORM here.
"""

import datetime as dt
import re
from dataclasses import dataclass
from urllib.parse import urlencode

from finops.core.months import month_of, next_month

DEFAULT = "last-30"
TRAILING_DAYS = 30
MAX_DAYS = 800  # about two years, as Explore
# The days any period may cover: usage of LLM APIs begins well after 2000, and a bound far short of 9999 keeps date
# arithmetic (a period's comparison, a month's end) from overflowing on a typed or fuzzed URL.
EARLIEST = dt.date(2000, 1, 1)
LATEST = dt.date(2100, 1, 1)  # exclusive
BOUNDS_ERROR = f"Pick days between {EARLIEST} and {LATEST - dt.timedelta(days=1)}."


def within_bounds(start: dt.date, end: dt.date) -> bool:
    return EARLIEST <= start and end <= LATEST


MONTH = re.compile(r"^(\d{4})-(\d{2})$")
QUARTER = re.compile(r"^(\d{4})-Q([1-4])$")


class PeriodError(ValueError):
    """A period the URL asks for that does not exist; the message says what would."""


@dataclass(frozen=True)
class Period:
    key: str
    start: dt.date
    end: dt.date  # excluded
    label: str
    compare: "Period | None" = None

    @property
    def days(self) -> int:
        return (self.end - self.start).days

    @property
    def last_day(self) -> dt.date:
        return self.end - dt.timedelta(days=1)

    def query(self) -> str:
        """The URL query that selects this period ("period=2026-10")."""
        if self.key == "custom":
            return urlencode({"period": "custom", "start": self.start.isoformat(), "end": self.end.isoformat()})
        return urlencode({"period": self.key})

    def span(self) -> tuple[dt.date, dt.date]:
        return self.start, self.end

    @property
    def phrase(self) -> str:
        """The label inside a sentence or after a comma: "Spend, last 30 days", but "Spend, November 2026" and
        "Spend, Q4 2026" (a month's name keeps its capital; lowercasing the whole label wrote "november 2026")."""
        return self.label[0].lower() + self.label[1:] if self.label.startswith("Last ") else self.label


def _month_label(month: dt.date) -> str:
    """ "November 2026": a month's name in full, as the caps, the report and the emails write it."""
    return month.strftime("%B %Y")


def _previous_month(month: dt.date) -> dt.date:
    return month_of(month - dt.timedelta(days=1))


def _month(month: dt.date, key: str | None = None, *, compare: bool = True) -> Period:
    previous = _month(_previous_month(month), compare=False) if compare else None
    return Period(key or month.strftime("%Y-%m"), month, next_month(month), _month_label(month), previous)


def _quarter(year: int, number: int, *, compare: bool = True) -> Period:
    start = dt.date(year, 3 * number - 2, 1)
    end = dt.date(year + (number == 4), 1 if number == 4 else 3 * number + 1, 1)
    previous = None
    if compare:
        previous = _quarter(year - (number == 1), 4 if number == 1 else number - 1, compare=False)
    return Period(f"{year}-Q{number}", start, end, f"Q{number} {year}", previous)


def _days_label(start: dt.date, end: dt.date) -> str:
    return f"{start.isoformat()} → {(end - dt.timedelta(days=1)).isoformat()}"


def _custom(
    start: dt.date,
    end: dt.date,
    *,
    key: str = "custom",
    label: str | None = None,
    compare: bool = True,
    compare_label: str | None = None,
) -> Period:
    previous = None
    if compare:
        length = end - start
        previous = _custom(start - length, start, compare=False, label=compare_label)
    return Period(key, start, end, label or _days_label(start, end), previous)


def resolve(key: str | None, *, today: dt.date, start: dt.date | None = None, end: dt.date | None = None) -> Period:
    """The Period a URL names. `start`/`end` without a key mean a custom period."""
    key = (key or "").strip() or ("custom" if start or end else DEFAULT)
    if key == "last-30":
        return _custom(
            today - dt.timedelta(days=TRAILING_DAYS),
            today,
            key=key,
            label=f"Last {TRAILING_DAYS} days",
            compare_label=f"the {TRAILING_DAYS} days before",
        )
    if key == "mtd":
        first = month_of(today)
        last_first = _previous_month(first)
        same_end = min(last_first + (today - first), first)
        return Period(
            key,
            first,
            today,
            f"{_month_label(first)} to date",
            Period("custom", last_first, same_end, f"the same days of {_month_label(last_first)}"),
        )
    if key == "last-month":
        return _month(_previous_month(month_of(today)), "last-month")
    if match := MONTH.match(key):
        year, month = int(match[1]), int(match[2])
        if not 1 <= month <= 12:
            raise PeriodError(f"There is no month {key}.")
        if not EARLIEST.year <= year < LATEST.year:
            raise PeriodError(f"There is no month {key} here. {BOUNDS_ERROR}")
        return _month(dt.date(year, month, 1))
    if match := QUARTER.match(key):
        if not EARLIEST.year <= int(match[1]) < LATEST.year:
            raise PeriodError(f"There is no quarter {key} here. {BOUNDS_ERROR}")
        return _quarter(int(match[1]), int(match[2]))
    if key == "custom":
        if start is None or end is None:
            raise PeriodError("A custom period needs a start and an end day.")
        if end <= start:
            raise PeriodError("The end day must be after the start day (the end day is not included).")
        if (end - start).days > MAX_DAYS:
            raise PeriodError("Pick a period of at most about two years.")
        if not within_bounds(start, end):
            raise PeriodError(BOUNDS_ERROR)
        return _custom(start, end)
    raise PeriodError(
        f"Unknown period {key!r}: use last-30, mtd, last-month, a month (2026-10), a quarter (2026-Q3) or custom."
    )


def choices(today: dt.date, *, months: int = 12, quarters: int = 4) -> list[tuple[str, str]]:
    """What the picker offers: the presets, the last `months` calendar months and `quarters` quarters, custom."""
    found = [("last-30", f"Last {TRAILING_DAYS} days"), ("mtd", "Month to date"), ("last-month", "Last month")]
    month = month_of(today)
    for _ in range(months):
        found.append((month.strftime("%Y-%m"), _month_label(month)))
        month = _previous_month(month)
    year, number = today.year, (today.month - 1) // 3 + 1
    for _ in range(quarters):
        found.append((f"{year}-Q{number}", f"Q{number} {year}"))
        year, number = (year - 1, 4) if number == 1 else (year, number - 1)
    found.append(("custom", "Custom…"))
    return found
