"""A LiteLLM proxy's `GET /spend/logs/v2`, as a route of FakeProviderServer, for the litellm_api connector's tests.

    with FakeProviderServer() as server:
        logs = SpendLogs(records)               # LiteLLM_SpendLogs records, as the proxy stores them
        server.route(SPEND_LOGS, logs)

It answers as `ui_view_spend_logs` in LiteLLM's proxy/spend_tracking/spend_management_endpoints.py (the `litellm`
package, 1.110) does:
- `start_date` and `end_date` are required ("YYYY-MM-DD HH:MM:SS" or "YYYY-MM-DD", UTC) and both inclusive on
  startTime (400 "Start date and end date are required" otherwise);
- `page` counts from 1 (`ge=1`), `page_size` is 1 to 1,000 (`ge=1, le=1000`: FastAPI's 422 otherwise);
- the total is counted with `LIMIT SPEND_LOGS_PAGINATION_COUNT_CAP + 1`: above 10,000 matching records the
  answer says `total: 10000, total_is_capped: true`, and `total_pages` is computed from the capped total;
- records come `ORDER BY "startTime" DESC` with **no tie-breaker**, `LIMIT page_size OFFSET (page-1)*page_size`:
  Postgres may order records with equal startTime differently in each query, so this fake does (records tied on
  startTime are shuffled per page asked) — an offset pager that trusts the order repeats some and loses others;
- the envelope is {"data", "total", "page", "page_size", "total_pages", "total_is_capped"}; errors are
  ProxyException bodies ({"error": {...}}).
`before_page(logs, page)` lets a test change the log between pages (a request landing, a retention job deleting).
"""

import bisect
import datetime as dt
import functools
import hashlib

from .provider_server import Reply

SPEND_LOGS = "/spend/logs/v2"
COUNT_CAP = 10_000  # SPEND_LOGS_PAGINATION_COUNT_CAP
MAX_PAGE_SIZE = 1000  # page_size: fastapi.Query(default=50, ge=1, le=1000)


def proxy_error(status: int, message: str, kind: str) -> Reply:
    return Reply(status, {"error": {"message": message, "type": kind, "param": "None", "code": str(status)}})


def start_time(record: dict) -> dt.datetime:
    return _moment(record["startTime"])


@functools.lru_cache(maxsize=1 << 16)
def _moment(text: str) -> dt.datetime:
    moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)


def _parse_date(text: str) -> dt.datetime | None:
    for layout in ("%Y-%m-%d %H:%M:%S", "%Y-%m-%d"):
        try:
            return dt.datetime.strptime(text.strip(), layout).replace(tzinfo=dt.UTC)
        except ValueError:
            continue
    return None


class SpendLogs:
    def __init__(self, records, *, before_page=None):
        self.records = list(records)
        self.before_page = before_page
        self._by_time = None

    def _page(self, low: dt.datetime, high: dt.datetime, page: int, size: int) -> tuple[list[dict], int]:
        """The page's records and how many match, as a full scan sorted by (startTime, tie order) descending would
        give them: the records are sorted by startTime once, the window found by bisection, and only the ties at
        the page's edges and inside it put in the page's own order (the tests page through 10,000-record logs
        tens of times: a scan and a hash of every record per page cost seconds)."""
        if self._by_time is None:
            ordered = sorted(self.records, key=start_time)
            self._by_time = (ordered, [start_time(r) for r in ordered])
        ordered, times = self._by_time
        first, last = bisect.bisect_left(times, low), bisect.bisect_right(times, high)
        # Newest first: position p of the page is index last - 1 - p of the ascending list.
        a, b = (page - 1) * size, min(page * size, last - first)
        if a >= b:
            return [], last - first
        hi, lo = last - 1 - a, last - b  # ascending indexes of the page's first (newest) and last records
        while hi + 1 < last and times[hi + 1] == times[hi]:  # whole tie groups at both edges
            hi += 1
        while lo - 1 >= first and times[lo - 1] == times[lo]:
            lo -= 1
        span = sorted(ordered[lo : hi + 1], key=lambda r: (start_time(r), _tie_order(r, page)), reverse=True)
        skip = last - 1 - hi  # records newer than the span
        return span[a - skip : b - skip], last - first

    def __call__(self, query: dict) -> Reply:
        start, end = query.get("start_date", [None])[0], query.get("end_date", [None])[0]
        if start is None or end is None:
            return proxy_error(400, "Start date and end date are required", "bad_request")
        page, size = int(query.get("page", ["1"])[0]), int(query.get("page_size", ["50"])[0])
        if page < 1 or not 1 <= size <= MAX_PAGE_SIZE:
            return Reply(
                422,
                {
                    "detail": [
                        {
                            "type": "less_than_equal",
                            "loc": ["query", "page_size"],
                            "msg": f"Input should be less than or equal to {MAX_PAGE_SIZE}",
                        }
                    ]
                },
            )
        low, high = _parse_date(start), _parse_date(end)
        if low is None or high is None:
            bad = start if low is None else end
            return Reply(
                400, {"detail": f"Invalid date format: {bad}. Expected: 'YYYY-MM-DD' or 'YYYY-MM-DD HH:MM:SS'"}
            )
        if self.before_page is not None:
            self.before_page(self, page)
            self._by_time = None  # before_page may change the records in place
        # ORDER BY "startTime" DESC and nothing else: ties come in an order of the query's own choosing.
        data, matching = self._page(low, high, page, size)
        capped = matching > COUNT_CAP
        total = COUNT_CAP if capped else matching
        return Reply(
            200,
            {
                "data": data,
                "total": total,
                "page": page,
                "page_size": size,
                "total_pages": (total + size - 1) // size,
                "total_is_capped": capped,
            },
        )


def _tie_order(record: dict, page: int) -> str:
    return hashlib.sha256(f"{page}:{record.get('request_id')}".encode()).hexdigest()
