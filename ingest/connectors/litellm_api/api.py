"""A LiteLLM proxy's spend logs, pulled live over its admin API: `GET /spend/logs/v2` (docs/litellm.md).

The proxy records one `LiteLLM_SpendLogs` row per request it routed (to Groq, Cerebras, Moonshot, … — providers
with no usage API of their own). A pull reads those records for the window and hands them to the gateway-log
reader's own aggregation (gateway_log.request_groups): the same records make the same hourly lines — tokens,
provider, key, user, tags (team, team alias, key alias, end user, request tags, `spend_logs_metadata`), the
latency distributions and LiteLLM's own cache hits — whether they arrive in an exported file or over this API.

The endpoint (`ui_view_spend_logs` in LiteLLM's proxy/spend_tracking/spend_management_endpoints.py, 1.110):
- `start_date` / `end_date` are required, as "YYYY-MM-DD HH:MM:SS" in UTC, and both are inclusive
  (startTime ≥ start_date and ≤ end_date);
- `page` (from 1) and `page_size` (1–1,000) page an offset query `ORDER BY "startTime" DESC` — with no
  tie-breaker, so records with equal start times may come in a different order in each page's query;
- the total is counted up to SPEND_LOGS_PAGINATION_COUNT_CAP (10,000): above it the answer says `total: 10000`
  and `total_is_capped: true`, and `total_pages` counts only the capped total's pages;
- the envelope is {"data": [...], "total", "page", "page_size", "total_pages", "total_is_capped"};
- it needs an admin key (the master key or a proxy-admin key): an internal user's key reads only its own requests.

Decisions:
- The window is read one UTC day at a time, and each day's lines are built from that day's records alone.
- A window whose total is capped is not paged (its pages would stop at 10,000 records): it is cut into hours,
  a capped hour into minutes, a capped minute into seconds, until every piece's total is exact. A second of
  more than 10,000 requests cannot be counted by LiteLLM: the run fails, naming the window, and writes nothing.
- Pieces share their inclusive ends (a record at exactly 10:00:00 comes back for 09:00–10:00 and 10:00–11:00), and
  new requests landing on the first page push records onto the next page: a record seen before in the day (same
  `request_id`, the table's key) is skipped. The day's hourly lines keep only hours inside the day.
- Records tied on startTime across a page boundary may come twice or not at all: each such second is read again
  as its own window (one page, unless it holds more than 1,000 requests).
- If a piece yields fewer distinct records than its exact `total`, the log changed under the pull (a retention
  job deleting rows): the pull fails as transient and is retried, rather than store a partial day. When the
  piece is a single second whose tied records fill more than a page, it cannot be read whole: the run fails,
  naming the window.
- `spend` is LiteLLM's own estimate from its price map, not a bill: lines have no cost and are priced from the
  catalog, as gateway log files are (gateway/log.py).
"""

import datetime as dt

from ingest.connectors.api_base import ApiConnector, Pull, malformed
from ingest.connectors.base import ProviderError
from ingest.connectors.gateway.fields import parse_time
from ingest.connectors.gateway.log import request_groups

SPEND_LOGS_PATH = "/spend/logs/v2"
PAGE_SIZE = 1000  # the endpoint's maximum (`page_size: ge=1, le=1000`)
COUNT_CAP = 10_000  # LiteLLM's SPEND_LOGS_PAGINATION_COUNT_CAP: above it, `total` is 10,000 and `total_is_capped`
DAY = dt.timedelta(days=1)
SECOND = dt.timedelta(seconds=1)
SPLITS = (dt.timedelta(hours=1), dt.timedelta(minutes=1), SECOND)  # how a capped window is cut, coarsest first


class LiteLLMApi(ApiConnector):
    kind = "litellm_api"
    default_base_url = "http://localhost:4000"

    def rows(self, pull: Pull, weigh):
        # `weigh` is not needed: nothing is billed here, so nothing is split.
        for start, end in _days(pull.start, pull.end):
            groups = request_groups(self._piece(pull, start, end, set()), refuse=malformed)
            for row in groups.rows():
                # Hours are whole within a day; only the record at exactly `end` (inclusive end_date) falls out.
                if start <= row.period_start < end:
                    yield row

    def _piece(self, pull: Pull, low: dt.datetime, high: dt.datetime, seen: set, found: set | None = None):
        """(where, record) for each record of [low, high] (both inclusive, whole seconds) not in `seen` (the
        request ids already read this day, which it extends); `found` collects every id the piece holds."""
        name = f"LiteLLM {SPEND_LOGS_PATH} {_litellm_time(low)} to {_litellm_time(high)}"
        params = [("start_date", _litellm_time(low)), ("end_date", _litellm_time(high)), ("page_size", str(PAGE_SIZE))]
        mine, ties, number, pages, total, last = set(), set(), 1, 1, 0, None
        while number <= pages:
            where = f"{name} page {number}"
            body, data = self.page(pull, SPEND_LOGS_PATH, [*params, ("page", str(number))], where)
            answered = body.get("page")
            if answered is not None and answered != number:
                raise malformed(where, f"page {answered!r} came back for page {number}")
            if number == 1:
                total, pages = _whole(body, "total", where), _whole(body, "total_pages", where)
                capped = body.get("total_is_capped", False)
                if not isinstance(capped, bool):
                    raise malformed(where, f"total_is_capped is {capped!r}, not true or false")
                if capped or total > COUNT_CAP:
                    yield from self._split(pull, low, high, seen, found, name)
                    return
            for index, record in enumerate(data, 1):
                here = f"{where} record {index}"
                if not isinstance(record, dict):
                    raise malformed(here, "expected an object")
                request_id = record.get("request_id")
                if not isinstance(request_id, str) or not request_id:
                    raise malformed(here, "no request_id (LiteLLM_SpendLogs' primary key)")
                moment = _start(record, here)
                if index == 1 and last is not None and moment == last:
                    ties.add(moment.replace(microsecond=0))  # equal start times straddle the page boundary
                last = moment
                mine.add(request_id)
                if request_id not in seen:  # else pushed onto this page by a newer record, or read by a neighbour
                    seen.add(request_id)
                    yield here, record
            number += 1
        # LiteLLM orders by startTime alone: records tied across a page boundary may come twice or not at all.
        # Each tied second is read again as its own window, on one page when it holds no more than PAGE_SIZE.
        if high - low > SECOND:
            for second in sorted(ties):
                yield from self._piece(pull, second, second + SECOND, seen, mine)
        if len(mine) < total:
            whole_second = high - low <= SECOND
            raise ProviderError(
                f"{name}: the proxy reported {total:,} records but {len(mine):,} distinct ones were read: "
                + (
                    "more than one page of requests share one start time, which LiteLLM does not order; this "
                    "window cannot be read whole, import its exported spend logs as a gateway log file"
                    if whole_second and ties
                    else "its spend log changed while it was paged; the pull is retried"
                ),
                permanent=whole_second and bool(ties),
                reason="bad_input" if whole_second and ties else "server",
            )
        if found is not None:
            found |= mine

    def _split(self, pull: Pull, low, high, seen: set, found: set | None, name: str):
        """A window whose total LiteLLM capped, read as hours, then minutes, then seconds, until each is whole."""
        width = high - low
        step = next((s for s in SPLITS if s < width), None)
        if step is None:
            raise ProviderError(
                f"{name}: more than {COUNT_CAP:,} requests started within one second, more than LiteLLM's spend-log "
                "API counts; this window cannot be read whole: import its exported spend logs as a gateway log file",
                reason="bad_input",
            )
        cursor = low
        while cursor < high:
            following = min(cursor + step, high)
            yield from self._piece(pull, cursor, following, seen, found)
            cursor = following


def _days(start: dt.datetime, end: dt.datetime):
    """[start, end) as UTC days, cut at midnight: the first and last may be partial."""
    cursor = start
    while cursor < end:
        midnight = dt.datetime.combine(cursor.date(), dt.time(), tzinfo=dt.UTC) + DAY
        yield cursor, min(midnight, end)
        cursor = min(midnight, end)


def _litellm_time(moment: dt.datetime) -> str:
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S")


def _start(record: dict, where: str) -> dt.datetime:
    try:
        return parse_time(record.get("startTime"), "startTime", required=True)
    except ValueError as exc:
        raise malformed(where, str(exc)) from None


def _whole(body: dict, name: str, where: str) -> int:
    value = body.get(name)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise malformed(where, f"{name} is {value!r}, not a whole number")
    return value
