"""What every API connector shares: the UTC window, the pages, and how a page that is not what was asked fails.

In the manner of healthchecks' transports: one base class holds the loop — check the window, build the request,
GET each page through ingest.http.HttpClient, check the envelope's `data` list, follow the next page, stop a
pager that never ends — and each connector (openai_api, anthropic_api, openrouter_api, litellm_api) supplies only
what differs: its default base URL, its auth headers, how the next page is named, and how it turns a page's
items into UsageRows (`rows`).

Decisions:
- A window is [start, end) in UTC; a naive datetime is refused (the scheduler always passes UTC, a caller that
  does not has a bug). An empty window asks nothing and yields nothing.
- Cursor pages (OpenAI, Anthropic): `has_more` says whether a page follows (absent: whether `next_page` is set),
  `next_page` is its cursor, sent back as `page`. A cursor seen before, or `has_more` without a cursor, is a
  malformed page, and MAX_PAGES pages is the end of patience: a pager that never ends is a provider fault, not a
  reason to loop forever.
- Every failure of a page's shape is a ProviderError of reason "malformed" naming the page ("costs page 3").
"""

import datetime as dt
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass

from .base import ProviderError, UsageRow

MAX_PAGES = 1000  # a cursor that never ends is a provider fault, not a reason to loop forever


def malformed(where: str, detail: str) -> ProviderError:
    return ProviderError(f"{where}: malformed response ({detail})", reason="malformed")


def utc(moment: dt.datetime, name: str) -> dt.datetime:
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ProviderError(f"the window {name} {moment.isoformat()} has no time zone; windows are UTC")
    return moment.astimezone(dt.UTC)


@dataclass(frozen=True)
class Pull:
    """One fetch: the HTTP client, the API root, the auth headers and the UTC window [start, end)."""

    client: object
    base_url: str
    headers: dict
    start: dt.datetime
    end: dt.datetime

    def get(self, path: str, params, where: str) -> dict:
        # The secret travels only in the headers; HttpClient never puts headers in a message.
        return self.client.get_json(self.base_url + path, headers=self.headers, params=params, where=where)


class ApiConnector(ABC):
    """The base of every API source (base.ApiSource). Subclasses set `kind` and `default_base_url` and define
    `rows`; they override `headers`, `next_page` or `malformed` only where their API differs."""

    kind: str
    default_base_url: str
    max_pages = MAX_PAGES
    first_page: tuple = ()  # query parameters only the first page carries (numbered pages: ("page", "1"))
    data_complaint = "expected a `data` list"  # what a page without its `data` list is told

    def fetch(
        self, *, client, base_url: str, secret: str, start: dt.datetime, end: dt.datetime, weigh=None
    ) -> Iterator[UsageRow]:
        start, end = utc(start, "start"), utc(end, "end")
        if end <= start:
            return
        pull = Pull(client, (base_url or self.default_base_url).rstrip("/"), self.headers(secret), start, end)
        yield from self.rows(pull, weigh)

    @abstractmethod
    def rows(self, pull: Pull, weigh) -> Iterator[UsageRow]:
        """The connector's own reading of the window's pages (what differs between providers)."""

    def headers(self, secret: str) -> dict:
        return {"Authorization": f"Bearer {secret}"}

    def malformed(self, where: str, detail: str) -> ProviderError:
        return malformed(where, detail)

    def page(self, pull: Pull, path: str, params, where: str) -> tuple[dict, list]:
        """One page: its body and its `data` list (a page without one is malformed)."""
        body = pull.get(path, params, where)
        data = body.get("data")
        if not isinstance(data, list):
            raise self.malformed(where, self.data_complaint)
        return body, data

    def pages(self, pull: Pull, path: str, params: list, name: str) -> Iterator[tuple[str, dict, list]]:
        """(where, body, data) for every page of `path`, "<name> page N", until `next_page` says there is none."""
        more: list = list(self.first_page)
        seen: set = set()
        for number in range(1, self.max_pages + 1):
            where = f"{name} page {number}"
            body, data = self.page(pull, path, params + more, where)
            yield where, body, data
            following = self.next_page(body, where, number, seen)
            if following is None:
                return
            more = following
        raise self.malformed(f"{name} page {self.max_pages}", f"still has_more after {self.max_pages} pages")

    def next_page(self, body: dict, where: str, number: int, seen: set) -> list | None:
        """The query parameters that ask for the page after `body`, or None after the last page (cursor pages)."""
        cursor = body.get("next_page")
        has_more = body.get("has_more")
        if has_more is None:
            has_more = cursor is not None
        if not isinstance(has_more, bool):
            raise self.malformed(where, f"has_more is {has_more!r}, not true or false")
        if not has_more:
            return None
        if not isinstance(cursor, str) or not cursor:
            raise self.malformed(where, "has_more is true but next_page is missing")
        if cursor in seen:
            raise self.malformed(where, "next_page repeats an earlier page's cursor")
        seen.add(cursor)
        return [("page", cursor)]
