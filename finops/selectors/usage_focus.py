"""The usage lines of one UTC calendar month, streamed for the FOCUS 1.2 export (finops/reports/usage_focus.py).

A month's lines are those whose period starts in it (the day the daily rollup files them under), so the export's
totals are the spend selectors' for the same month. They are read as plain dicts (`values()`, no model
instances) through a server-side cursor in chunks of CHUNK_LINES, ordered by (period start, id): memory stays
bounded however many millions of lines a month holds, and two exports of unchanged data are identical files.
"""

import datetime as dt
import re
from collections.abc import Iterator

from django.conf import settings

from finops.models import CostBasis, UsageLine
from finops.months import month_of, next_month
from finops.reporting_period import EARLIEST, LATEST
from finops.services.prices import PriceBook, class_rates

CHUNK_LINES = 2000
MONTH = re.compile(r"^(\d{4})-(\d{2})$")
FIELDS = (
    "id", "account_id", "account__name", "provider_id", "provider__name", "provider__slug", "period_start", "period_end",
    "billing_period_start", "model", "model_raw", "service_tier", "project_ref", "api_key_ref",
    "input_tokens", "cached_input_tokens", "cache_write_tokens", "output_tokens", "requests",
    "cost", "currency", "reporting_cost", "cost_basis", "charge_category", "tag_set_id", "tag_set__tags",
    "signature__team__slug", "signature__team__cost_center", "signature__workload__slug",
)


class MonthError(ValueError):
    """A month the caller asked for that cannot be exported; the message says why and what would do."""


def export_month(text: str, *, today: dt.date) -> dt.date:
    """`YYYY-MM` as the month's first day. Refused: another form, a month outside the product's days, and a
    month not yet begun (it has no usage, and an empty file would read as "nothing was spent")."""
    match = MONTH.match(text or "")
    if not match or not 1 <= int(match.group(2)) <= 12:
        raise MonthError(f"{text!r} is not a month: give it as YYYY-MM, e.g. {today.strftime('%Y-%m')}.")
    month = dt.date(int(match.group(1)), int(match.group(2)), 1)
    if not EARLIEST <= month < LATEST:
        raise MonthError(f"Pick a month between {EARLIEST:%Y-%m} and {LATEST - dt.timedelta(days=1):%Y-%m}.")
    if month > month_of(today):
        raise MonthError(f"{month:%Y-%m} has not begun yet (today is {today.isoformat()}, UTC): there is no usage to export.")
    return month


def _midnight(day: dt.date) -> dt.datetime:
    return dt.datetime.combine(day, dt.time(), tzinfo=dt.UTC)


def month_lines(month: dt.date, *, chunk_size: int = CHUNK_LINES) -> Iterator[dict]:
    """Every usage line whose period starts in `month` (UTC), as a dict of FIELDS plus what the export derives:
    `billing_period_start`/`_end` (the line's billing period, else its calendar month), `reporting_currency`,
    `split_rates` ({token field: the catalog's $/M tokens on the line's day}, in the price's currency: what a
    line mixing classes is apportioned by; None where the catalog has no price for the model, for unpriced usage
    and for charges that are not usage) and `list_rates` (the same when the price is in the line's currency, the
    FOCUS ListUnitPrice; else None)."""
    books = PriceBook.all_providers()  # catalog-sized, read once before the cursor opens
    lines = (UsageLine.objects
             .filter(period_start__gte=_midnight(month), period_start__lt=_midnight(next_month(month)))
             .order_by("period_start", "id")
             .values(*FIELDS))
    reporting_currency = settings.FINOPS_REPORTING_CURRENCY
    for row in lines.iterator(chunk_size=chunk_size):
        billing_start = row["billing_period_start"] or _midnight(row["period_start"].date().replace(day=1))
        row["billing_period_start"] = billing_start
        row["billing_period_end"] = _midnight(next_month(billing_start.date()))
        row["reporting_currency"] = reporting_currency
        row["split_rates"], currency = _catalog_rates(row, books)
        row["list_rates"] = row["split_rates"] if currency == row["currency"] else None
        yield row


TOKEN_FIELDS = {"input": "input_tokens", "cached_input": "cached_input_tokens", "cache_write": "cache_write_tokens",
                "output": "output_tokens"}


def _catalog_rates(row: dict, books: dict[int, PriceBook]) -> tuple[dict | None, str | None]:
    if row["charge_category"] != "usage" or not row["model"] or row["cost_basis"] == CostBasis.UNPRICED:
        return None, None
    book = books.get(row["provider_id"])
    price = book.price_on(row["model"], row["period_start"].date()) if book else None
    if price is None:
        return None, None
    rates = class_rates(price, batch=row["service_tier"].lower() == "batch")
    return {TOKEN_FIELDS[name]: rate for name, rate in rates.items()}, price.currency
