"""The OpenRouter /activity connector (ingest/connectors/openrouter/api.py) against a real local HTTP server.

/activity answers one UTC day per request (`date=YYYY-MM-DD`) with billed USD per model and upstream endpoint.
"""

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path

import pytest
import time_machine

from ingest.connectors.base import ProviderError
from ingest.connectors.openrouter.api import OpenRouterApi
from ingest.http import HttpClient
from tests.fakes.provider_server import FakeProviderServer, Reply

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "openrouter_api"
SECRET = "sk-or-v1-never-print-me-0123456789abcdef0123456789abcdef"
ACTIVITY = "/api/v1/activity"
UTC = dt.UTC
AUG_24, AUG_25, AUG_26, AUG_27 = (dt.datetime(2025, 8, d, tzinfo=UTC) for d in (24, 25, 26, 27))


def fixture(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text())


def by_date(days: dict):
    """A route answering each `date` from `days` (a body or a Reply), like /activity."""

    def reply(query: dict) -> Reply:
        date = query.get("date", [None])[0]
        if date not in days:
            return Reply(
                400, {"error": {"code": 400, "message": f"date {date} is not within the last 30 completed UTC days"}}
            )
        body = days[date]
        return body if isinstance(body, Reply) else Reply(200, body)

    return reply


def three_days() -> dict:
    return {d: fixture(f"activity_{d}.json") for d in ("2025-08-24", "2025-08-25", "2025-08-26")}


def item(**fields) -> dict:
    return {
        "date": "2025-08-24",
        "model": "openai/gpt-4.1",
        "provider_name": "OpenAI",
        "usage": 0.5,
        "requests": 1,
        "prompt_tokens": 10,
        "completion_tokens": 5,
        **fields,
    }


@pytest.fixture
def server():
    with FakeProviderServer() as fake:
        yield fake


@pytest.fixture
def sleeps():
    return []


def fetch(server, sleeps=None, *, start=AUG_24, end=AUG_27, base_path="/api/v1") -> list:
    client = HttpClient(timeout=5, max_attempts=4, sleep=(sleeps if sleeps is not None else []).append)
    return list(
        OpenRouterApi().fetch(client=client, base_url=server.url + base_path, secret=SECRET, start=start, end=end)
    )


def fetch_error(server, sleeps=None, **kwargs) -> ProviderError:
    with pytest.raises(ProviderError) as caught:
        fetch(server, sleeps, **kwargs)
    assert SECRET not in str(caught.value)
    return caught.value


def asked_dates(server) -> list:
    return [r.query.get("date") for r in server.requests]


# --- requests ---


def test_each_day_of_the_window_is_asked_for_on_its_own_with_the_bearer_key(server):
    server.route(ACTIVITY, by_date(three_days()))

    rows = fetch(server)

    assert asked_dates(server) == [["2025-08-24"], ["2025-08-25"], ["2025-08-26"]]
    assert all(r.path == ACTIVITY and r.headers["Authorization"] == f"Bearer {SECRET}" for r in server.requests)
    assert [r.period_start for r in rows] == [AUG_24] * 3 + [AUG_26]
    assert all(r.period_end == r.period_start + dt.timedelta(days=1) for r in rows)


def test_the_default_base_url_is_openrouters_api_root():
    assert OpenRouterApi.default_base_url == "https://openrouter.ai/api/v1" and OpenRouterApi.kind == "openrouter_api"


@time_machine.travel(dt.datetime(2025, 8, 26, 15, 30, tzinfo=UTC), tick=False)
def test_days_that_have_not_ended_yet_are_not_asked_for(server):
    server.route(ACTIVITY, by_date(three_days()))

    rows = fetch(server, start=AUG_24, end=dt.datetime(2025, 8, 28, tzinfo=UTC))

    assert asked_dates(server) == [["2025-08-24"], ["2025-08-25"]]
    assert {r.period_start for r in rows} == {AUG_24}


def test_an_empty_window_asks_for_nothing(server):
    assert fetch(server, start=AUG_25, end=AUG_25) == [] and server.requests == []


def test_days_older_than_the_endpoint_keeps_fail_with_the_providers_message_rather_than_vanishing(server):
    server.route(ACTIVITY, by_date({}))

    error = fetch_error(server, start=AUG_24, end=AUG_25)

    assert error.reason == "bad_input" and "/activity date=2025-08-24 (page 1): HTTP 400" in str(error)
    assert "last 30 completed UTC days" in str(error)


# --- parsing ---


def test_billed_cost_is_the_usage_field_as_an_exact_decimal_in_usd(server):
    server.route(ACTIVITY, by_date({"2025-08-24": fixture("activity_docs_example.json")}))

    [row] = fetch(server, end=AUG_25)

    assert isinstance(row.cost, Decimal) and row.cost.as_tuple() == Decimal("0.015").as_tuple()
    assert row.currency == "USD" and row.provider_slug == ""


def test_prompt_and_completion_tokens_become_input_and_output_with_requests(server):
    server.route(ACTIVITY, by_date({"2025-08-24": fixture("activity_docs_example.json")}))

    [row] = fetch(server, end=AUG_25)

    # Reasoning tokens (25) are part of the 125 completion tokens; /activity has no cached-token split.
    assert (row.input_tokens, row.cached_input_tokens, row.cache_write_tokens, row.output_tokens) == (50, 0, 0, 125)
    assert row.requests == 5 and row.model_raw == "openai/gpt-4.1"


def test_the_upstream_provider_and_endpoint_are_kept_in_tags(server):
    server.route(ACTIVITY, by_date(three_days()))

    rows = fetch(server)

    llama = [r for r in rows if r.model_raw == "meta-llama/llama-3.3-70b-instruct"]
    assert [r.tags["upstream"] for r in llama] == ["Groq", "Together"]
    assert llama[0].tags == {"upstream": "Groq", "endpoint": "6f1c2a9e-3b4d-4e5f-8a7b-9c0d1e2f3a4b"}
    assert llama[0].tags != llama[1].tags  # two upstreams: two lines, never merged


def test_every_amount_form_is_read_exactly(server):
    server.route(ACTIVITY, by_date(three_days()))

    rows = fetch(server)

    assert [r.cost for r in rows] == [Decimal("0.015"), Decimal("0.00123456789012"), Decimal("2"), Decimal("0.000015")]
    assert sum(r.cost for r in rows) == Decimal("2.01624956789012")


def test_a_cost_sent_as_a_decimal_string_keeps_every_digit(server):
    server.route(ACTIVITY, by_date({"2025-08-24": {"data": [item(usage="0.000000123456789012345678901234")]}}))

    [row] = fetch(server, end=AUG_25)

    assert row.cost.as_tuple() == Decimal("0.000000123456789012345678901234").as_tuple()


def test_missing_token_fields_count_as_zero_and_a_missing_cost_stays_unknown_never_zero(server):
    bare = {"date": "2025-08-24", "model": "mistralai/mistral-small", "usage": None}
    server.route(ACTIVITY, by_date({"2025-08-24": {"data": [bare]}}))

    [row] = fetch(server, end=AUG_25)

    assert (row.input_tokens, row.output_tokens, row.requests) == (0, 0, 0)
    assert row.cost is None and row.tags == {} and row.project_ref == ""


def test_a_workspace_on_the_line_becomes_its_project(server):
    server.route(ACTIVITY, by_date({"2025-08-24": {"data": [item(workspace_id="ws_search")]}}))

    [row] = fetch(server, end=AUG_25)

    assert row.project_ref == "ws_search"


def test_lines_of_another_day_are_left_to_that_days_own_request(server):
    # Should the endpoint ignore `date` and answer its whole 30 days, each line is still read exactly once.
    everything = {"data": [item(date="2025-08-23"), item(date="2025-08-24", usage=1), item(date="2025-08-25", usage=2)]}
    server.route(ACTIVITY, by_date({"2025-08-24": everything, "2025-08-25": everything}))

    rows = fetch(server, end=AUG_26)

    assert [(r.period_start, r.cost) for r in rows] == [(AUG_24, Decimal("1")), (AUG_25, Decimal("2"))]


@pytest.mark.parametrize(
    "bad, complaint",
    [
        ({"usage": "a lot"}, "usage 'a lot' is not a number"),
        ({"usage": True}, "usage is True"),
        ({"prompt_tokens": -3}, "prompt_tokens is negative"),
        ({"completion_tokens": "12"}, "completion_tokens is '12'"),
        ({"model": None, "model_permaslug": None}, "names no model"),
        ({"date": "24/08/2025"}, "is not YYYY-MM-DD"),
    ],
)
def test_a_line_it_cannot_read_fails_naming_the_day_and_line(server, bad, complaint):
    server.route(ACTIVITY, by_date({"2025-08-24": {"data": [item(), item(**bad)]}}))

    error = fetch_error(server, end=AUG_25)

    assert error.reason == "malformed" and error.permanent
    assert "OpenRouter /activity date=2025-08-24 (page 1) item 2" in str(error) and complaint in str(error)


# --- failures ---


def test_rejected_credentials_fail_with_reason_auth_and_never_show_the_key(server):
    server.route(ACTIVITY, [Reply(401, {"error": {"code": 401, "message": "No auth credentials found"}})])

    error = fetch_error(server)

    assert error.reason == "auth" and error.permanent and "HTTP 401" in str(error)
    assert len(server.requests) == 1


def test_a_429_is_retried_after_the_seconds_openrouter_asks_for(server, sleeps):
    days, limited = three_days(), []

    def activity(query):
        if query["date"] == ["2025-08-25"] and not limited:
            limited.append(query)
            return Reply(429, {"error": {"code": 429, "message": "Rate limit exceeded"}}, {"Retry-After": "4"})
        return Reply(200, days[query["date"][0]])

    server.route(ACTIVITY, activity)

    rows = fetch(server, sleeps)

    assert sleeps == [4.0]
    assert asked_dates(server) == [["2025-08-24"], ["2025-08-25"], ["2025-08-25"], ["2025-08-26"]]
    assert len(rows) == 4


def test_a_server_error_is_retried_and_the_fetch_then_completes(server, sleeps):
    broken = Reply(500, {"error": {"code": 500, "message": "Internal Server Error"}})
    server.route(ACTIVITY, [broken, fixture("activity_docs_example.json")])

    [row] = fetch(server, sleeps, end=AUG_25)

    assert len(sleeps) == 1 and 0 <= sleeps[0] <= 60
    assert row.cost == Decimal("0.015") and len(server.requests) == 2


@pytest.mark.parametrize(
    "bad_page, complaint",
    [
        (Reply(200, "<html>Bad gateway</html>"), "malformed response (not JSON)"),
        (Reply(200, {"activity": []}), "expected a `data` list"),
        (Reply(200, {"data": ["openai/gpt-4.1"]}), "item 1: malformed response (expected an object)"),
    ],
)
def test_a_malformed_page_fails_naming_the_endpoint_and_day(server, bad_page, complaint):
    days = three_days()
    days["2025-08-25"] = bad_page
    server.route(ACTIVITY, by_date(days))

    error = fetch_error(server)

    assert error.reason == "malformed" and error.permanent
    assert "OpenRouter /activity date=2025-08-25 (page 2)" in str(error) and complaint in str(error)
