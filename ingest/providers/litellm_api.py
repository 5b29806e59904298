"""A LiteLLM proxy's spend logs, pulled live over its admin API: `GET /spend/logs/v2` (docs/litellm.md).

The proxy records one `LiteLLM_SpendLogs` row per request it routed (to Groq, Cerebras, Moonshot, … — providers
with no usage API of their own). A pull reads those records for the window and hands them to the gateway-log
reader's own aggregation (gateway_log.request_groups): the same records make the same hourly lines — tokens,
provider, key, user, tags (team, team alias, key alias, end user, request tags, `spend_logs_metadata`) and the
latency distributions — whether they arrive in an exported file or over this API.

The endpoint (LiteLLM's spend_management_endpoints.py):
- `start_date` / `end_date` are required, as "YYYY-MM-DD HH:MM:SS" in UTC, and both are inclusive
  (startTime ≥ start_date and ≤ end_date);
- `page` (from 1) and `page_size` (1–100) page an offset query ordered by startTime, newest first; the envelope
  is {"data": [...], "total", "page", "page_size", "total_pages"};
- it needs an admin key (the master key or a proxy-admin key): an internal user's key reads only its own requests.

Decisions:
- The window is read one UTC day at a time (one query per day, each paged): offsets stay within a day's records,
  and each day's lines are built from that day's query alone. A record starting exactly at a day's end (the
  inclusive `end_date`) belongs to the next day's query and is left to it, so no record is read twice. Lines are
  hours: a window starting mid-hour (never the scheduler's, whose windows are whole days) leaves that hour out.
- New requests land on the first page while later pages are read (newest first), shifting records onto the next
  page: a record seen before (same `request_id`, the table's key) is skipped. If fewer distinct records were read
  than the first page's `total` promised, the log changed under the pull (a retention job deleting rows, or equal
  start times reordered): the pull fails as transient and is retried, rather than store a partial day.
- `spend` is LiteLLM's own estimate from its price map, not a bill: lines have no cost and are priced from the
  catalog, as gateway log files are (gateway_log.py).
- A day of more than MAX_PAGES × PAGE_SIZE requests is refused with a message: import that day as an exported log.
"""

import datetime as dt

from .api_base import ApiConnector, Pull, malformed
from .base import ProviderError
from .gateway_log import request_groups

SPEND_LOGS_PATH = "/spend/logs/v2"
PAGE_SIZE = 100  # the endpoint's maximum (page_size ≤ 100)
MAX_PAGES = 10_000  # a day of at most 1M requests
DAY = dt.timedelta(days=1)


class LiteLLMApi(ApiConnector):
    kind = "litellm_api"
    default_base_url = "http://localhost:4000"
    max_pages = MAX_PAGES
    first_page = (("page", "1"),)

    def rows(self, pull: Pull, weigh):
        # `weigh` is not needed: nothing is billed here, so nothing is split.
        for start, end in _days(pull.start, pull.end):
            groups = request_groups(self._records(pull, start, end), refuse=malformed)
            for row in groups.rows():
                # Hours are whole within a day; only the record at exactly `end` (inclusive end_date) falls out.
                if start <= row.period_start < end:
                    yield row

    def _records(self, pull: Pull, start: dt.datetime, end: dt.datetime):
        """(where, record) for each distinct record the proxy holds for [start, end] (both inclusive)."""
        params = [
            ("start_date", _litellm_time(start)), ("end_date", _litellm_time(end)), ("page_size", str(PAGE_SIZE)),
        ]
        name = f"LiteLLM {SPEND_LOGS_PATH} {start:%Y-%m-%d %H:%M}"
        promised, seen, unnamed = None, set(), 0
        for where, body, data in self.pages(pull, SPEND_LOGS_PATH, params, name):
            if promised is None:
                promised = _whole(body, "total", where)
            for number, record in enumerate(data, 1):
                here = f"{where} record {number}"
                if not isinstance(record, dict):
                    raise malformed(here, "expected an object")
                request_id = record.get("request_id")
                if not isinstance(request_id, str) or not request_id:
                    unnamed += 1
                elif request_id in seen:
                    continue  # pushed onto this page by a newer record: already read
                else:
                    seen.add(request_id)
                yield here, record
        read = len(seen) + unnamed
        if promised is not None and read < promised:
            raise ProviderError(
                f"{name}: the proxy reported {promised:,} records but {read:,} distinct ones were read: its spend "
                "log changed while it was paged; the pull is retried",
                permanent=False,
                reason="server",
            )

    def next_page(self, body: dict, where: str, number: int, seen: set) -> list | None:
        """Numbered pages: the next one while `total_pages` says there is one."""
        pages = _whole(body, "total_pages", where)
        if pages > self.max_pages:
            raise ProviderError(
                f"{where}: the proxy holds {pages:,} pages of spend logs for one day, more than the {self.max_pages:,} "
                "a pull reads; import that day's exported spend logs as a gateway log file instead",
                reason="bad_input",
            )
        answered = body.get("page")
        if answered is not None and answered != number:
            raise malformed(where, f"page {answered!r} came back for page {number}")
        return [("page", str(number + 1))] if number < pages else None


def _days(start: dt.datetime, end: dt.datetime):
    """[start, end) as UTC days, cut at midnight: the first and last may be partial."""
    cursor = start
    while cursor < end:
        midnight = dt.datetime.combine(cursor.date(), dt.time(), tzinfo=dt.UTC) + DAY
        yield cursor, min(midnight, end)
        cursor = min(midnight, end)


def _litellm_time(moment: dt.datetime) -> str:
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S")


def _whole(body: dict, name: str, where: str) -> int:
    value = body.get(name)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise malformed(where, f"{name} is {value!r}, not a whole number")
    return value
