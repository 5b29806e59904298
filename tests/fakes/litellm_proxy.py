"""A LiteLLM proxy's `GET /spend/logs/v2`, as a route of FakeProviderServer, for the litellm_api connector's tests.

    with FakeProviderServer() as server:
        logs = SpendLogs(records)               # LiteLLM_SpendLogs records, as the proxy stores them
        server.route(SPEND_LOGS, logs)

It answers as LiteLLM's spend_management_endpoints.py does (docs/litellm.md): `start_date` and `end_date` are
required ("YYYY-MM-DD HH:MM:SS", UTC) and both inclusive on startTime; records come newest first; `page` counts
from 1 and `page_size` is 1 to 100 (FastAPI's 422 otherwise); the envelope is
{"data", "total", "page", "page_size", "total_pages"}; errors are ProxyException bodies ({"error": {...}}).
`before_page(page)` lets a test change the log between pages (a request landing, a retention job deleting).
"""

import datetime as dt

from .provider_server import Reply

SPEND_LOGS = "/spend/logs/v2"


def proxy_error(status: int, message: str, kind: str) -> Reply:
    return Reply(status, {"error": {"message": message, "type": kind, "param": "None", "code": str(status)}})


def start_time(record: dict) -> dt.datetime:
    moment = dt.datetime.fromisoformat(record["startTime"].replace("Z", "+00:00"))
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)


class SpendLogs:
    def __init__(self, records, *, before_page=None):
        self.records = list(records)
        self.before_page = before_page

    def __call__(self, query: dict) -> Reply:
        start, end = query.get("start_date", [None])[0], query.get("end_date", [None])[0]
        if start is None or end is None:
            return proxy_error(400, "Start date and end date are required", "bad_request")
        page, size = int(query.get("page", ["1"])[0]), int(query.get("page_size", ["50"])[0])
        if page < 1 or not 1 <= size <= 100:
            return Reply(422, {"detail": [{"type": "less_than_equal", "loc": ["query", "page_size"], "msg": "Input should be less than or equal to 100"}]})
        if self.before_page is not None:
            self.before_page(self, page)
        low, high = (dt.datetime.strptime(v, "%Y-%m-%d %H:%M:%S").replace(tzinfo=dt.UTC) for v in (start, end))
        found = sorted((r for r in self.records if low <= start_time(r) <= high), key=start_time, reverse=True)
        return Reply(200, {
            "data": found[(page - 1) * size:page * size],
            "total": len(found),
            "page": page,
            "page_size": size,
            "total_pages": (len(found) + size - 1) // size,
        })
