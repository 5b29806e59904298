"""The API connectors' shared base (ingest/connectors/api_base.py): the window and the cursor-page loop, over HTTP.

Each connector's own tests cover its pages; these cover what the base alone decides, for every connector at once.
"""

import datetime as dt
import itertools

import pytest

from ingest.connectors.api_base import ApiConnector
from ingest.connectors.base import ProviderError, UsageRow
from ingest.http import HttpClient
from tests.fakes.provider_server import FakeProviderServer, Reply

START, END = dt.datetime(2026, 6, 14, tzinfo=dt.UTC), dt.datetime(2026, 6, 15, tzinfo=dt.UTC)


class Pager(ApiConnector):
    """A connector of cursor pages whose rows are one per `data` item."""

    kind = "pager"
    default_base_url = "http://unused.invalid"
    max_pages = 3

    def rows(self, pull, weigh):
        for where, _, data in self.pages(pull, "/items", [("limit", "2")], "items"):
            for item in data:
                yield UsageRow(pull.start, pull.end, model_raw=str(item), source_ref=where)


@pytest.fixture
def server():
    with FakeProviderServer() as fake:
        yield fake


def pull(server, **window) -> list:
    client = HttpClient(timeout=5, max_attempts=1)
    window = {"start": START, "end": END, **window}
    return list(Pager().fetch(client=client, base_url=server.url, secret="k", **window))


def error_of(server) -> ProviderError:
    with pytest.raises(ProviderError) as caught:
        pull(server)
    return caught.value


def test_cursor_pages_are_followed_and_each_cursor_is_sent_back_as_page(server):
    server.route(
        "/items",
        [
            {"data": [1, 2], "has_more": True, "next_page": "c2"},
            {"data": [3], "has_more": False, "next_page": None},
        ],
    )

    rows = pull(server)

    assert [r.model_raw for r in rows] == ["1", "2", "3"] and [r.source_ref for r in rows] == ["items page 1"] * 2 + [
        "items page 2"
    ]
    assert [r.query.get("page") for r in server.requests] == [None, ["c2"]]
    assert all(r.headers["Authorization"] == "Bearer k" for r in server.requests)


def test_a_pager_that_never_ends_stops_at_max_pages_as_a_malformed_response(server):
    cursors = itertools.count(1)
    server.route("/items", lambda query: Reply(200, {"data": [], "has_more": True, "next_page": f"c{next(cursors)}"}))

    error = error_of(server)

    assert error.reason == "malformed" and "items page 3: malformed response (still has_more after 3 pages)" in str(
        error
    )
    assert len(server.requests) == 3


@pytest.mark.parametrize(
    "page, complaint",
    [
        ({"data": [], "has_more": "yes"}, "has_more is 'yes', not true or false"),
        ({"data": [], "has_more": True}, "has_more is true but next_page is missing"),
        ({"data": [], "has_more": True, "next_page": "same"}, "next_page repeats an earlier page's cursor"),
        ({"items": []}, "expected a `data` list"),
    ],
)
def test_a_page_that_cannot_be_followed_is_malformed_and_named(server, page, complaint):
    server.route("/items", [page])

    error = error_of(server)

    assert error.reason == "malformed" and error.permanent and complaint in str(error)


def test_an_empty_window_asks_nothing_and_a_window_without_a_time_zone_is_refused(server):
    assert pull(server, end=START) == [] and server.requests == []
    with pytest.raises(ProviderError, match="has no time zone"):
        pull(server, start=dt.datetime(2026, 6, 14))
    assert server.requests == []
