"""The Anthropic Admin API connector (ingest/connectors/anthropic/api.py) against a real local HTTP server.

The cost report is in cents per day × workspace × description; the usage report has tokens per API key. The
connector splits each billed amount over the usage lines it covers, and the lines add up to the bill exactly.
"""

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path

import pytest

from ingest.connectors.anthropic.api import AnthropicApi
from ingest.connectors.base import ProviderError
from ingest.http import HttpClient
from tests.fakes.provider_server import FakeProviderServer, Reply

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "anthropic_api"
SECRET = "sk-ant-admin01-never-print-me-0123456789abcdef"
COSTS = "/v1/organizations/cost_report"
USAGE = "/v1/organizations/usage_report/messages"
UTC = dt.UTC
OCT_16, OCT_17, OCT_18, OCT_19 = (dt.datetime(2025, 10, d, tzinfo=UTC) for d in (16, 17, 18, 19))
DEFAULT_WS, SEARCH_WS = "", "wrkspc_01WtfAtqQsV3zBDs9RYpNZdR"
KEY_A, KEY_B, KEY_C = (
    "apikey_01Rj2N8SVvo6BePZj99NhmiT",
    "apikey_01Bx7M2kq9QpDw4YtRzE3vHs",
    "apikey_01Hq3LzP8WnV5cXyT2aRkJ9d",
)
CURSOR_17, CURSOR_18 = "page_MjAyNS0xMC0xN1QwMDowMDowMFo=", "page_MjAyNS0xMC0xOFQwMDowMDowMFo="
DOCS_CURSOR = "page_MjAyNS0wNS0xNFQwMDowMDowMFo="  # the next_page of the docs' verbatim examples


def fixture(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text())


def by_cursor(pages: dict):
    """A route serving the page named by the request's `page` cursor (None: the first page)."""

    def reply(query: dict) -> Reply:
        cursor = query.get("page", [None])[0]
        if cursor not in pages:
            return Reply(400, {"error": {"type": "invalid_request_error", "message": f"unknown page {cursor}"}})
        page = pages[cursor]
        return page if isinstance(page, Reply) else Reply(200, page)

    return reply


def three_pages(prefix: str) -> dict:
    return {cursor: fixture(f"{prefix}_page_{n}.json") for n, cursor in enumerate((None, CURSOR_17, CURSOR_18), 1)}


def empty_report(start="2025-10-16T00:00:00Z", end="2025-10-17T00:00:00Z") -> dict:
    return {"data": [{"starting_at": start, "ending_at": end, "results": []}], "has_more": False, "next_page": None}


def one_day(results: list, day: str = "2025-10-16") -> dict:
    following = (dt.date.fromisoformat(day) + dt.timedelta(days=1)).isoformat()
    report = empty_report(f"{day}T00:00:00Z", f"{following}T00:00:00Z")
    report["data"][0]["results"] = results
    return report


def usage_result(model="claude-sonnet-4-5-20250929", workspace=None, key=KEY_A, uncached=0, output=0, **extra) -> dict:
    return {
        "uncached_input_tokens": uncached,
        "cache_read_input_tokens": 0,
        "cache_creation": {"ephemeral_1h_input_tokens": 0, "ephemeral_5m_input_tokens": 0},
        "output_tokens": output,
        "model": model,
        "workspace_id": workspace,
        "api_key_id": key,
        "service_tier": "standard",
        **extra,
    }


def cost_result(
    amount, description="Claude Sonnet 4.5 Usage - Output Tokens", model="claude-sonnet-4-5-20250929", workspace=None
) -> dict:
    return {
        "amount": amount,
        "currency": "USD",
        "cost_type": "tokens" if model else None,
        "description": description,
        "model": model,
        "token_type": "output_tokens" if model else None,
        "service_tier": "standard",
        "workspace_id": workspace,
    }


def web_search(amount, workspace=None) -> dict:
    return {
        "amount": amount,
        "currency": "USD",
        "cost_type": "web_search",
        "description": "Web Search Usage",
        "model": None,
        "token_type": None,
        "service_tier": None,
        "workspace_id": workspace,
    }


@pytest.fixture
def server():
    with FakeProviderServer() as fake:
        yield fake


@pytest.fixture
def sleeps():
    return []


def fetch(server, sleeps=None, *, start=OCT_16, end=OCT_19, weigh=None) -> list:
    client = HttpClient(timeout=5, max_attempts=4, sleep=(sleeps if sleeps is not None else []).append)
    return list(
        AnthropicApi().fetch(client=client, base_url=server.url, secret=SECRET, start=start, end=end, weigh=weigh)
    )


def fetch_error(server, sleeps=None, **kwargs) -> ProviderError:
    with pytest.raises(ProviderError) as caught:
        fetch(server, sleeps, **kwargs)
    assert SECRET not in str(caught.value)
    return caught.value


def requests_to(server, path: str) -> list:
    return [r for r in server.requests if r.path == path]


def line(rows, *, day=OCT_16, key=None, model=None, workspace=None, tier="standard"):
    matches = [
        r
        for r in rows
        if r.period_start == day
        and (key is None or r.api_key_ref == key)
        and (model is None or r.model_raw == model)
        and (workspace is None or r.project_ref == workspace)
        and (tier is None or r.service_tier == tier)
    ]
    assert len(matches) == 1, matches
    return matches[0]


@pytest.fixture
def three_day_window(server):
    server.route(COSTS, by_cursor(three_pages("cost")))
    server.route(USAGE, by_cursor(three_pages("usage")))
    return server


# --- requests: auth, parameters, pages ---


def test_the_admin_key_and_api_version_travel_as_headers_on_every_request(three_day_window):
    fetch(three_day_window)

    assert len(three_day_window.requests) == 6
    for request in three_day_window.requests:
        assert request.headers["x-api-key"] == SECRET
        assert request.headers["anthropic-version"] == "2023-06-01"
        assert SECRET not in json.dumps(request.query)


def test_both_reports_are_asked_for_the_window_in_daily_buckets_with_the_allowed_groupings(three_day_window):
    fetch(three_day_window)

    cost, usage = requests_to(three_day_window, COSTS)[0].query, requests_to(three_day_window, USAGE)[0].query
    for query in (cost, usage):
        assert query["starting_at"] == ["2025-10-16T00:00:00Z"] and query["ending_at"] == ["2025-10-19T00:00:00Z"]
        assert query["bucket_width"] == ["1d"] and query["limit"] == ["31"]
    assert cost["group_by[]"] == ["workspace_id", "description"]
    assert set(usage["group_by[]"]) == {
        "workspace_id",
        "api_key_id",
        "model",
        "service_tier",
        "context_window",
        "inference_geo",
        "account_id",
        "service_account_id",
    }


@pytest.mark.parametrize("path", [COSTS, USAGE])
def test_every_page_is_followed_by_sending_back_the_cursor_until_has_more_is_false(three_day_window, path):
    rows = fetch(three_day_window)

    pages = requests_to(three_day_window, path)
    assert [r.query.get("page") for r in pages] == [None, [CURSOR_17], [CURSOR_18]]
    assert {r.period_start for r in rows} == {OCT_16, OCT_17}  # the third page is an empty bucket


def test_has_more_without_a_cursor_is_a_malformed_page(server):
    server.route(COSTS, [{**empty_report(), "has_more": True, "next_page": None}])
    error = fetch_error(server)
    assert error.reason == "malformed" and "cost_report page 1" in str(error) and "next_page is missing" in str(error)


def test_a_cursor_that_comes_back_again_stops_the_fetch_instead_of_looping(server):
    server.route(COSTS, [{**empty_report(), "has_more": True, "next_page": CURSOR_17}])
    error = fetch_error(server)
    assert error.reason == "malformed" and "cost_report page 2" in str(error) and "repeats" in str(error)
    assert len(server.requests) == 2


# --- parsing: exact money, token classes, references ---


def test_cents_strings_become_exact_dollar_decimals(server):
    server.route(COSTS, by_cursor({None: fixture("cost_report_docs_example.json"), DOCS_CURSOR: empty_report()}))
    server.route(USAGE, [empty_report("2025-08-01T00:00:00Z", "2025-08-02T00:00:00Z")])

    [row] = fetch(server, start=dt.datetime(2025, 8, 1, tzinfo=UTC), end=dt.datetime(2025, 8, 2, tzinfo=UTC))

    assert isinstance(row.cost, Decimal) and row.cost.as_tuple() == Decimal("1.2378912").as_tuple()
    assert row.currency == "USD" and row.project_ref == "wrkspc_01JwQvzr7rXLA5AGx3HKfFUJ"


@pytest.mark.parametrize(
    "amount, dollars",
    [
        ("123.45", "1.2345"),
        ("0.000000000000000000000000000000000000001", "0.00000000000000000000000000000000000000001"),
        ("12345678901234567890123456789.123456789", "123456789012345678901234567.89123456789"),
        ("-250", "-2.50"),
        ("0E-6176", "0E-6178"),
        (7, "0.07"),
        (123.45, "1.2345"),  # a JSON number, should one arrive instead of a string
    ],
)
def test_any_cents_amount_is_converted_without_rounding(server, amount, dollars):
    opus = cost_result(amount, "Claude Opus 4.1 Usage - Output Tokens", "claude-opus-4-1")
    server.route(COSTS, [one_day([cost_result("1"), opus])])
    server.route(USAGE, [empty_report()])

    rows = fetch(server, end=OCT_17)

    costs = {r.model_raw: r.cost for r in rows}
    if Decimal(dollars) == 0:
        assert "claude-opus-4-1" not in costs  # a zero cost with no usage says nothing
    else:
        assert costs["claude-opus-4-1"].as_tuple() == Decimal(dollars).as_tuple()


def test_token_buckets_map_to_the_four_disjoint_classes_with_keys_and_workspace(server):
    server.route(COSTS, [empty_report("2025-08-01T00:00:00Z", "2025-08-02T00:00:00Z")])
    server.route(USAGE, by_cursor({None: fixture("usage_report_docs_example.json"), DOCS_CURSOR: empty_report()}))

    [row] = fetch(server, start=dt.datetime(2025, 8, 1, tzinfo=UTC), end=dt.datetime(2025, 8, 2, tzinfo=UTC))

    assert (row.input_tokens, row.cached_input_tokens, row.cache_write_tokens, row.output_tokens) == (
        1500,
        200,
        1500,
        500,
    )
    assert (row.period_start, row.period_end) == (
        dt.datetime(2025, 8, 1, tzinfo=UTC),
        dt.datetime(2025, 8, 2, tzinfo=UTC),
    )
    assert (row.model_raw, row.service_tier) == ("claude-opus-4-6", "standard")
    assert (row.project_ref, row.api_key_ref, row.user_ref) == (
        "wrkspc_01JwQvzr7rXLA5AGx3HKfFUJ",
        "apikey_01Rj2N8SVvo6BePZj99NhmiT",
        "user_01WCz1FkmYMm4gnmykNKUu3Q",
    )
    assert row.tags == {
        "context_window": "0-200k",
        "inference_geo": "global",
        "service_account": "svac_01Hk3R9TWxq7CfQak00OiVw4",
    }
    assert row.cost is None and row.requests == 0


def test_the_default_workspace_and_console_usage_have_empty_references(three_day_window):
    rows = fetch(three_day_window)

    console = line(rows, key="", model="claude-sonnet-4-5-20250929")
    assert console.project_ref == "" and console.user_ref == "user_01WCz1FkmYMm4gnmykNKUu3Q"
    assert line(rows, key=KEY_B).project_ref == ""


def test_missing_optional_fields_and_unknown_extra_fields_read_as_zero_and_are_ignored(three_day_window):
    rows = fetch(three_day_window)

    haiku = line(rows, day=OCT_17, model="claude-haiku-4-5-20251001", tier="batch")
    tokens = (haiku.input_tokens, haiku.cached_input_tokens, haiku.cache_write_tokens, haiku.output_tokens)
    assert tokens == (10000, 4000, 0, 2000)
    assert haiku.user_ref == "" and haiku.tags == {}


@pytest.mark.parametrize(
    "bad, complaint",
    [
        ({"output_tokens": "lots"}, "output_tokens is 'lots'"),
        ({"uncached_input_tokens": -5}, "uncached_input_tokens is negative"),
        ({"cache_creation": [1, 2]}, "cache_creation is not an object"),
        ({"model": 42}, "model is 42"),
    ],
)
def test_a_result_it_cannot_read_fails_naming_the_page_bucket_and_result(server, bad, complaint):
    server.route(COSTS, [empty_report()])
    server.route(USAGE, [one_day([usage_result(output=1), {**usage_result(output=1), **bad}])])

    error = fetch_error(server, end=OCT_17)
    assert error.reason == "malformed" and error.permanent
    assert "usage_report/messages page 1 bucket 2025-10-16 result 2" in str(error) and complaint in str(error)


def test_a_cost_row_without_an_amount_is_malformed_rather_than_zero(server):
    server.route(COSTS, [one_day([{**cost_result("1"), "amount": None}])])
    error = fetch_error(server, end=OCT_17)
    assert error.reason == "malformed" and "cost_report page 1 bucket 2025-10-16 result 1" in str(error)


# --- the join: billed cost split over API keys ---


def test_billed_cost_is_split_over_api_keys_in_proportion_to_their_tokens(three_day_window):
    rows = fetch(three_day_window)

    # Day one, default workspace, Sonnet 4.5: (970.32225 + 1500) cents = $24.7032225 over 2000 / 6000 / 2000 tokens.
    assert line(rows, key=KEY_A).cost == Decimal("4.9406445")
    assert line(rows, key=KEY_B).cost == Decimal("14.8219335")
    assert line(rows, key="", model="claude-sonnet-4-5-20250929").cost == Decimal("4.9406445")
    assert line(rows, day=OCT_17, key=KEY_A).cost == Decimal("0.000001")  # "0.0001" cents
    assert all(r.currency == "USD" for r in rows)


def test_the_yielded_costs_add_up_exactly_to_the_cost_report_total(three_day_window):
    rows = fetch(three_day_window)

    billed_cents = sum(
        Decimal(result["amount"])
        for page in ("cost_page_1.json", "cost_page_2.json", "cost_page_3.json")
        for bucket in fixture(page)["data"]
        for result in bucket["results"]
    )
    assert sum(r.cost for r in rows if r.cost is not None) == billed_cents / 100 == Decimal("28.2082235")


def test_an_uneven_split_still_adds_up_exactly_to_the_bill(server):
    server.route(COSTS, [one_day([cost_result("100")])])
    server.route(USAGE, [one_day([usage_result(key=k, output=1) for k in (KEY_A, KEY_B, KEY_C)])])

    rows = fetch(server, end=OCT_17)

    assert sum(r.cost for r in rows) == Decimal("1")
    assert sorted(r.cost for r in rows) == [Decimal("0.333333333333333333")] * 2 + [Decimal("0.333333333333333334")]


def test_the_split_follows_the_weigh_function_when_one_is_given(server):
    server.route(COSTS, [one_day([cost_result("1000")])])
    server.route(
        USAGE, [one_day([usage_result(key=KEY_A, uncached=9000, output=100), usage_result(key=KEY_B, output=300)])]
    )

    rows = fetch(server, end=OCT_17, weigh=lambda row: Decimal(row.output_tokens) * 15 + Decimal(row.input_tokens) * 3)

    # Weights 28500 and 4500 at list price, where raw token counts (9100 vs 300) would give B far less.
    assert line(rows, key=KEY_A).cost == Decimal("8.636363636363636364")
    assert line(rows, key=KEY_B).cost == Decimal("1.363636363636363636")
    assert sum(r.cost for r in rows) == Decimal("10")


def test_usage_with_no_price_known_to_weigh_is_split_by_tokens(server):
    server.route(COSTS, [one_day([cost_result("400")])])
    server.route(USAGE, [one_day([usage_result(key=KEY_A, output=100), usage_result(key=KEY_B, output=300)])])

    rows = fetch(server, end=OCT_17, weigh=lambda row: Decimal(0))

    assert (line(rows, key=KEY_A).cost, line(rows, key=KEY_B).cost) == (Decimal("1"), Decimal("3"))


def test_a_cost_of_no_model_is_its_own_line_per_key_never_inside_a_models_cost(three_day_window):
    rows = fetch(three_day_window)

    # "Web Search Usage" (cost_type web_search), 100 cents in the search workspace, whose only key is the Opus one:
    # a "web search" line of that key with no tokens; the Opus line keeps only Opus' cost (none is billed for it).
    opus = line(rows, key=KEY_C, model="claude-opus-4-6")
    assert (opus.project_ref, opus.cost) == (SEARCH_WS, None)
    search = line(rows, key=KEY_C, model="web search", tier="")
    assert (search.project_ref, search.cost, search.tags) == (SEARCH_WS, Decimal("1"), opus.tags)
    assert (search.input_tokens, search.cached_input_tokens, search.cache_write_tokens, search.output_tokens) == (
        0,
        0,
        0,
        0,
    )
    assert "Web Search Usage" in search.source_ref


def test_a_charge_of_no_model_is_split_per_key_by_the_same_weights_and_sums_to_the_bill(server):
    server.route(COSTS, [one_day([cost_result("1000"), web_search("300")])])
    server.route(USAGE, [one_day([usage_result(key=KEY_A, output=100), usage_result(key=KEY_B, output=300)])])

    rows = fetch(server, end=OCT_17)

    searches = {r.api_key_ref: r.cost for r in rows if r.model_raw == "web search"}
    assert searches == {KEY_A: Decimal("0.75"), KEY_B: Decimal("2.25")}
    # per-model totals are the cost report's per-model amounts: the model's lines hold its $10, no more
    assert sum(r.cost for r in rows if r.model_raw != "web search") == Decimal("10")
    assert sum(r.cost for r in rows) == Decimal("13")


def test_a_cost_no_usage_covers_becomes_a_billed_line_with_no_tokens(three_day_window):
    rows = fetch(three_day_window)

    haiku = line(rows, model="claude-3-5-haiku-20241022", tier=None)
    assert (haiku.cost, haiku.currency, haiku.project_ref, haiku.api_key_ref) == (
        Decimal("2.505"),
        "USD",
        SEARCH_WS,
        "",
    )
    assert haiku.service_tier == "batch"
    assert (haiku.input_tokens, haiku.cached_input_tokens, haiku.cache_write_tokens, haiku.output_tokens) == (
        0,
        0,
        0,
        0,
    )
    assert "cost_report page 1" in haiku.source_ref


def test_a_cost_of_no_model_with_no_usage_is_one_line_named_after_the_charge(server):
    server.route(COSTS, [fixture("cost_report_two_days.json")])
    server.route(USAGE, [one_day([usage_result(uncached=10)])])

    rows = fetch(server, end=OCT_18)

    search = line(rows, model="web search", tier=None)
    assert (search.cost, search.project_ref) == (Decimal("1"), SEARCH_WS)
    assert line(rows, key=KEY_A, model="claude-sonnet-4-5-20250929").cost == Decimal("9.7032225")
    assert sum(r.cost for r in rows) == Decimal("10.7032225")


def test_usage_no_cost_covers_keeps_no_cost_so_it_is_priced_from_the_catalog(three_day_window):
    rows = fetch(three_day_window)

    assert line(rows, day=OCT_17, model="claude-haiku-4-5-20251001", tier="batch").cost is None


def test_priority_tier_usage_takes_no_share_of_the_cost_report_which_never_includes_it(three_day_window):
    rows = fetch(three_day_window)

    priority = line(rows, key=KEY_A, tier="priority")
    assert priority.cost is None and (priority.input_tokens, priority.output_tokens) == (5000, 1000)


def test_the_model_is_read_from_the_description_when_the_cost_row_names_none(server):
    server.route(
        COSTS,
        [
            one_day(
                [
                    cost_result("300", "Claude Haiku 3.5 Usage - Input Tokens", model=None),
                    cost_result("500", "Claude Sonnet 4.5 Usage - Input Tokens, Cache Hit", model=None),
                ]
            )
        ],
    )
    server.route(
        USAGE,
        [
            one_day(
                [
                    usage_result("claude-3-5-haiku-20241022", key=KEY_A, uncached=10),
                    usage_result("claude-sonnet-4-5-20250929", key=KEY_B, uncached=10),
                ]
            )
        ],
    )

    rows = fetch(server, end=OCT_17)

    assert len(rows) == 2
    assert line(rows, key=KEY_A).cost == Decimal("3") and line(rows, key=KEY_B).cost == Decimal("5")


def test_costs_and_usage_join_only_within_the_same_workspace_and_day(server):
    server.route(COSTS, [one_day([cost_result("700", workspace=SEARCH_WS)])])
    server.route(USAGE, [one_day([usage_result(workspace=None, output=5)])])

    rows = fetch(server, end=OCT_17)

    assert line(rows, key=KEY_A).cost is None
    assert line(rows, key="", workspace=SEARCH_WS).cost == Decimal("7")


# --- failures ---


def test_rejected_credentials_fail_with_reason_auth_and_never_show_the_key(server):
    rejected = {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}
    server.route(COSTS, [Reply(401, rejected)])

    error = fetch_error(server)

    assert error.reason == "auth" and error.permanent
    assert "cost_report page 1" in str(error) and "HTTP 401" in str(error)
    assert len(server.requests) == 1


def test_a_429_is_retried_after_the_seconds_anthropic_asks_for(three_day_window, sleeps):
    pages = three_pages("usage")
    limited = {"type": "error", "error": {"type": "rate_limit_error", "message": "Rate limited"}}
    served = []

    def usage(query):
        if query.get("page") == [CURSOR_17] and not served:
            served.append(1)
            return Reply(429, limited, {"Retry-After": "13"})
        return Reply(200, pages[query.get("page", [None])[0]])

    three_day_window.route(USAGE, usage)

    rows = fetch(three_day_window, sleeps)

    assert sleeps == [13.0]
    assert [r.query.get("page") for r in requests_to(three_day_window, USAGE)] == [
        None,
        [CURSOR_17],
        [CURSOR_17],
        [CURSOR_18],
    ]
    assert sum(r.cost for r in rows if r.cost is not None) == Decimal("28.2082235")


def test_a_server_error_is_retried_and_the_fetch_then_completes(server, sleeps):
    broken = {"type": "error", "error": {"type": "api_error", "message": "Internal server error"}}
    server.route(COSTS, [Reply(500, broken), fixture("cost_report_two_days.json")])
    server.route(USAGE, [Reply(503, "upstream unavailable"), one_day([usage_result(uncached=10)])])

    rows = fetch(server, sleeps, end=OCT_18)

    assert len(sleeps) == 2 and all(0 <= s <= 60 for s in sleeps)
    assert len(requests_to(server, COSTS)) == 2 and len(requests_to(server, USAGE)) == 2
    assert sum(r.cost for r in rows) == Decimal("10.7032225")


@pytest.mark.parametrize(
    "bad_page, complaint",
    [
        (Reply(200, '{"data": [truncated'), "malformed response (not JSON)"),
        (Reply(200, {"has_more": False}), "expected a `data` list"),
        (
            Reply(200, {"data": [{"starting_at": "yesterday", "ending_at": "2025-10-18T00:00:00Z"}]}),
            "not an RFC 3339 time",
        ),
        (Reply(200, {"data": [{**empty_report()["data"][0], "results": {}}]}), "`results` is not a list"),
    ],
)
def test_a_malformed_page_fails_naming_the_endpoint_and_page(three_day_window, bad_page, complaint):
    pages = three_pages("usage")
    pages[CURSOR_17] = bad_page
    three_day_window.route(USAGE, by_cursor(pages))

    error = fetch_error(three_day_window)

    assert error.reason == "malformed" and error.permanent
    assert "Anthropic usage_report/messages page 2" in str(error) and complaint in str(error)


def test_an_empty_window_asks_for_nothing(server):
    assert fetch(server, start=OCT_17, end=OCT_17) == []
    assert server.requests == []


def test_a_window_without_a_time_zone_is_refused(server):
    error = fetch_error(server, start=dt.datetime(2025, 10, 16))
    assert "no time zone" in str(error) and server.requests == []
