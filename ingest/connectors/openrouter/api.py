"""OpenRouter `GET /activity`: billed cost and tokens per day × model × upstream endpoint (provider-formats.md §6.1).

The endpoint has no pagination and no range: without `date` it returns the last 30 completed UTC days, with
`date=YYYY-MM-DD` one of those days. So a window is read one day per request (each request is a "page" in error
messages). `usage` is what OpenRouter charged, in US dollars, so lines carry it as billed cost.

Days that have not ended yet are not asked for (the endpoint only holds completed days). Days older than its
30-day range are asked for and fail with the provider's own message: skipping them would let the window's
replacement erase lines ingested earlier.
"""

import datetime as dt
from decimal import Decimal

from ingest.connectors.api_base import ApiConnector, Pull
from ingest.connectors.api_base import malformed as _malformed
from ingest.connectors.base import UsageRow
from ingest.connectors.parsing import day_start, parse_decimal
from ingest.connectors.payload import readers


class OpenRouterApi(ApiConnector):
    kind = "openrouter_api"
    default_base_url = "https://openrouter.ai/api/v1"

    def rows(self, pull: Pull, weigh):
        # `weigh` is not needed: every /activity line has its own billed cost, nothing is split.
        today = dt.datetime.now(dt.UTC).date()
        for page, day in enumerate(_days(pull.start, pull.end), 1):
            if day >= today:
                break
            where = f"OpenRouter /activity date={day.isoformat()} (page {page})"
            _, items = self.page(pull, "/activity", {"date": day.isoformat()}, where)
            for number, item in enumerate(items, 1):
                row = _row(item, day, f"{where} item {number}")
                if row is not None:
                    yield row


def _days(start: dt.datetime, end: dt.datetime):
    """The UTC days whose start lies in [start, end)."""
    day = start.date()
    if day_start(day) < start:
        day += dt.timedelta(days=1)
    while day_start(day) < end:
        yield day
        day += dt.timedelta(days=1)


def _row(item, day: dt.date, where: str) -> UsageRow | None:
    if not isinstance(item, dict):
        raise _malformed(where, "expected an object")
    item_day = _day(item.get("date"), day, where)
    if item_day != day:
        return None  # a line of another day: that day's own request reads it
    model = _text(item, "model", where) or _text(item, "model_permaslug", where)
    if not model:
        raise _malformed(where, "the line names no model")
    tags = {
        name: value
        for name, value in (
            ("upstream", _text(item, "provider_name", where)),
            ("endpoint", _text(item, "endpoint_id", where)),
        )
        if value
    }
    return UsageRow(
        period_start=day_start(day),
        period_end=day_start(day + dt.timedelta(days=1)),
        model_raw=model,
        # /activity does not split cached prompt tokens out; reasoning tokens are part of completion tokens.
        input_tokens=_count(item, "prompt_tokens", where),
        output_tokens=_count(item, "completion_tokens", where),
        requests=_count(item, "requests", where),
        cost=_dollars(item.get("usage"), where),
        currency="USD",
        project_ref=_text(item, "workspace_id", where),  # only present with group_by=workspace
        tags=tags,
        source_ref=where,
    )


def _day(value, asked: dt.date, where: str) -> dt.date:
    if value is None:
        return asked
    if not isinstance(value, str):
        raise _malformed(where, f"date is {value!r}, not YYYY-MM-DD")
    try:
        return dt.date.fromisoformat(value.strip()[:10])
    except ValueError:
        raise _malformed(where, f"date {value!r} is not YYYY-MM-DD") from None


def _dollars(value, where: str) -> Decimal | None:
    """`usage`, USD: a JSON number (read as Decimal by the HTTP client) or a decimal string; exact.

    Absent or null: no cost known, so the line is priced downstream, never taken as $0.
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int, float, Decimal)):
        raise _malformed(where, f"usage is {value!r}, not a number")
    if isinstance(value, float):
        value = repr(value)  # the shortest repr is the number as written (0.015, not 0.01499…)
    try:
        return parse_decimal(value if isinstance(value, str) else str(value))
    except ValueError as exc:
        raise _malformed(where, f"usage {exc}") from None


_text, _count = readers(_malformed)
