"""The OpenAI Administration API connector (ingest/connectors/openai/api.py) over real HTTP against a fake server.

Fixtures in tests/fixtures/openai_api/ follow the verbatim samples of reference/provider-formats.md §1:
string and number amounts (incl. "0E-6176"), cursor pages, empty buckets, null group keys, unknown fields.
The window is [2026-06-12, 2026-06-16) UTC; the costs and completions endpoints each serve three pages.
"""

import datetime as dt
import json
from decimal import Decimal, localcontext
from pathlib import Path

import pytest

from ingest.connectors.base import ProviderError
from ingest.connectors.openai.api import OpenAIApi
from ingest.connectors.openai.lines import model_key, parse_line_item
from ingest.http import HttpClient
from tests.fakes.provider_server import FakeProviderServer, Reply

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "openai_api"
SECRET = "sk-admin-do-not-print-7f3a9c0b1d2e"
START = dt.datetime(2026, 6, 12, tzinfo=dt.UTC)
END = dt.datetime(2026, 6, 16, tzinfo=dt.UTC)
COSTS = "/v1/organization/costs"
COMPLETIONS = "/v1/organization/usage/completions"
EMBEDDINGS = "/v1/organization/usage/embeddings"
SUPPORT, SEARCH = "proj_8mZt2hQk3LWo1Vd9", "proj_Q2w9LkT4vBn7XcZ1"


def load(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text())


def cursor_pages(pages: list[dict], *, fail_first: dict | None = None):
    """A route serving `pages` by the `page` cursor, as OpenAI does; `fail_first[cursor]` is replied once before."""
    by_cursor = {None: pages[0]}
    for page, following in zip(pages, pages[1:]):
        if page.get("next_page"):
            by_cursor[page["next_page"]] = following
    failures = dict(fail_first or {})

    def serve(query: dict) -> Reply:
        cursor = query.get("page", [None])[0]
        if cursor in failures:
            return failures.pop(cursor)
        if cursor not in by_cursor:
            return Reply(400, {"error": {"message": f"unknown page cursor {cursor!r}"}})
        return Reply(200, by_cursor[cursor])

    return serve


def standard_routes(server: FakeProviderServer, **overrides) -> None:
    server.route(COSTS, cursor_pages([load(f"costs_page{n}.json") for n in (1, 2, 3)]))
    server.route(COMPLETIONS, cursor_pages([load(f"completions_page{n}.json") for n in (1, 2, 3)]))
    server.route(EMBEDDINGS, cursor_pages([load("embeddings_page1.json")]))
    for path, route in overrides.items():
        server.route({"costs": COSTS, "completions": COMPLETIONS, "embeddings": EMBEDDINGS}[path], route)


def fetch(server: FakeProviderServer, sleeps: list | None = None, **kwargs) -> list:
    client = HttpClient(timeout=5, max_attempts=4, sleep=(sleeps if sleeps is not None else []).append)
    return list(
        OpenAIApi().fetch(client=client, base_url=server.url + "/v1", secret=SECRET, start=START, end=END, **kwargs)
    )


def billed_total_in_fixtures() -> Decimal:
    """Summed straight from the fixture text, numbers and strings alike, never through float."""
    total = Decimal(0)
    for n in (1, 2, 3):
        page = json.loads((FIXTURES / f"costs_page{n}.json").read_text(), parse_float=Decimal, parse_int=Decimal)
        for bucket in page["data"]:
            total += sum((Decimal(r["amount"]["value"]) for r in bucket["results"]), Decimal(0))
    return total


def one(rows: list, **match):
    found = [r for r in rows if all(getattr(r, k) == v for k, v in match.items())]
    assert len(found) == 1, f"{len(found)} rows match {match}"
    return found[0]


def day(d: int) -> dt.datetime:
    return dt.datetime(2026, 6, d, tzinfo=dt.UTC)


@pytest.fixture
def server():
    with FakeProviderServer() as fake:
        yield fake


@pytest.fixture
def rows(server):
    standard_routes(server)
    return fetch(server)


# --- paging and the request itself ---


def test_costs_and_completions_are_read_across_every_page_by_following_the_cursor(server, rows):
    for path, fixture in ((COSTS, "costs"), (COMPLETIONS, "completions")):
        sent = [r.query for r in server.requests if r.path == path]
        assert len(sent) == 3
        assert "page" not in sent[0]
        assert sent[1]["page"] == [load(f"{fixture}_page1.json")["next_page"]]
        assert sent[2]["page"] == [load(f"{fixture}_page2.json")["next_page"]]
    assert {r.period_start for r in rows} == {day(12), day(13), day(14), day(15)}


def test_each_endpoint_is_asked_for_daily_buckets_of_the_window_grouped_by_its_dimensions(server, rows):
    queries = {r.path: r.query for r in server.requests if "page" not in r.query}
    for query in queries.values():
        assert query["start_time"] == ["1781222400"] and query["end_time"] == ["1781568000"]
        assert query["bucket_width"] == ["1d"]
    assert queries[COSTS]["group_by"] == ["project_id", "line_item"] and queries[COSTS]["limit"] == ["180"]
    assert queries[COMPLETIONS]["group_by"] == ["project_id", "api_key_id", "model", "batch", "service_tier"]
    assert queries[COMPLETIONS]["limit"] == ["31"]
    assert queries[EMBEDDINGS]["group_by"] == ["project_id", "api_key_id", "model"]


def test_the_admin_key_is_sent_as_a_bearer_token_on_every_request(server, rows):
    assert len(server.requests) == 7
    assert all(r.headers["Authorization"] == f"Bearer {SECRET}" for r in server.requests)


# --- money and tokens ---


def test_every_billed_amount_is_yielded_exactly_once_to_the_last_decimal(rows):
    assert all(isinstance(r.cost, Decimal) for r in rows if r.cost is not None)
    assert sum(r.cost for r in rows if r.cost is not None) == billed_total_in_fixtures() == Decimal("2.1340587")


def test_string_and_number_amounts_are_parsed_exactly_and_the_currency_is_upper_case(rows):
    assert one(rows, model_raw="web search tool calls").cost == Decimal("0.25")  # a JSON number
    assert one(rows, model_raw="Vector storage").cost == Decimal("0.1")  # a 40-digit string
    assert str(one(rows, model_raw="whisper-1").cost) == "0.006"  # no float noise such as 0.006000000000000000124
    assert {r.currency for r in rows} == {"USD"}


def test_token_classes_are_disjoint_whether_or_not_openai_sends_the_uncached_count(rows):
    older_shape = one(rows, api_key_ref="key_support_a")  # only input_tokens and input_cached_tokens
    assert (older_shape.input_tokens, older_shape.cached_input_tokens, older_shape.cache_write_tokens) == (
        8000,
        2000,
        0,
    )
    assert (older_shape.output_tokens, older_shape.requests) == (6000, 42)
    newer_shape = one(rows, api_key_ref="key_support_b")  # input_uncached_tokens and input_cache_write_tokens too
    assert (newer_shape.input_tokens, newer_shape.cached_input_tokens, newer_shape.cache_write_tokens) == (
        3000,
        800,
        200,
    )
    embedding = one(rows, model_raw="text-embedding-3-small")
    assert (embedding.input_tokens, embedding.output_tokens, embedding.requests) == (1000, 0, 3)


# --- joining billed cost onto usage ---


def test_a_days_billed_cost_for_a_model_is_split_over_its_usage_rows_by_tokens(rows):
    key_a, key_b = one(rows, api_key_ref="key_support_a"), one(rows, api_key_ref="key_support_b")
    billed = Decimal("0.00165") + Decimal("0.00015") + Decimal("0.0042")  # input + cached input + output lines
    assert key_a.cost + key_b.cost == billed
    assert abs(key_a.cost - billed * 16000 / 21000) <= Decimal("1e-18")  # 16000 of the 21000 tokens
    assert key_a.tags == {} and key_a.currency == "USD"


def test_amounts_finer_than_the_stored_scale_still_split_to_the_exact_bill(server):
    costs = [load(f"costs_page{n}.json") for n in (1, 2, 3)]
    costs[2]["data"][0]["results"][1]["amount"]["value"] = "0.0000045000000000000000000000000000007"  # 37 decimals
    standard_routes(server, costs=cursor_pages(costs))
    rows = fetch(server)
    x1, x2 = one(rows, api_key_ref="key_x1", period_start=day(14)), one(rows, api_key_ref="key_x2")
    with localcontext() as wide:
        wide.prec = 60  # the default 28 significant digits would round this very sum
        assert x1.cost + x2.cost == Decimal("0.0000387000000000000000000000000000007")
    assert x2.cost == x2.cost.quantize(Decimal("1e-18"))  # the sub-quantum rest rides on one part only


def test_the_split_follows_the_weights_the_pipeline_passes(server):
    standard_routes(server)
    rows = fetch(server, weigh=lambda row: Decimal(row.output_tokens))
    x1, x2 = one(rows, api_key_ref="key_x1", period_start=day(14)), one(rows, api_key_ref="key_x2")
    billed = Decimal("0.0000045") + Decimal("0.0000342")  # the verbatim live sample, incl. a "0E-6176" line
    assert x1.cost + x2.cost == billed
    assert abs(x1.cost - billed * 40 / 57) <= Decimal("1e-18") and abs(x2.cost - billed * 17 / 57) <= Decimal("1e-18")


def test_tier_prefixed_and_long_context_lines_join_the_models_usage_across_keys_and_tiers(rows):
    gpt5 = [r for r in rows if r.model_raw == "gpt-5-2025-08-07"]
    assert sorted(r.service_tier for r in gpt5) == ["batch", "priority", "priority"]
    assert sum(r.cost for r in gpt5) == Decimal("1.7345")
    assert one(rows, model_raw="text-embedding-3-small").cost == Decimal("0.00002")


def test_billed_lines_without_usage_become_zero_token_rows_that_keep_the_line_item(rows):
    cost_only = {r.tags["line_item"]: r for r in rows if r.tags}
    assert set(cost_only) == {
        "web search tool calls",
        "ft-gpt-4o-2024-08-06, input",
        "whisper-1, audio",
        "Vector storage",
    }
    fine_tune = cost_only["ft-gpt-4o-2024-08-06, input"]
    assert (fine_tune.model_raw, fine_tune.cost, fine_tune.project_ref) == (
        "ft-gpt-4o-2024-08-06",
        Decimal("0.0375"),
        SEARCH,
    )
    for row in cost_only.values():
        assert row.input_tokens == row.cached_input_tokens == row.cache_write_tokens == row.output_tokens == 0
        assert row.charge_category == "usage" and row.cost > 0
    assert cost_only["Vector storage"].project_ref == ""  # a null project_id


def test_usage_not_billed_yet_is_yielded_without_a_cost_for_the_pipeline_to_estimate(rows):
    today = one(rows, period_start=day(15))
    assert today.cost is None
    assert (today.input_tokens, today.cached_input_tokens, today.output_tokens) == (400, 100, 120)


def test_batch_usage_reads_as_the_batch_tier_and_null_group_keys_as_empty_strings(rows):
    batch = one(rows, model_raw="gpt-5-2025-08-07", service_tier="batch")
    assert (batch.api_key_ref, batch.input_tokens) == ("key_search_c", 40000)
    playground = one(rows, model_raw="gpt-5-2025-08-07", api_key_ref="")
    assert (playground.user_ref, playground.project_ref, playground.service_tier) == ("", SEARCH, "priority")


def test_each_row_covers_its_utc_bucket_as_a_half_open_day(rows):
    for row in rows:
        assert row.period_start.tzinfo == dt.UTC and row.period_start.time() == dt.time(0)
        assert row.period_end - row.period_start == dt.timedelta(days=1)
        assert START <= row.period_start < END
    assert one(rows, model_raw="web search tool calls").period_start == day(12)


def test_buckets_that_do_not_start_in_the_window_are_left_out(server):
    early = {
        "object": "bucket",
        "start_time": 1781136000,
        "end_time": 1781222400,
        "results": [
            {
                "object": "organization.costs.result",
                "amount": {"value": 9.99, "currency": "usd"},
                "line_item": "web search tool calls",
                "project_id": SUPPORT,
            },
        ],
    }
    costs = load("costs_page1.json")
    costs["data"].insert(0, early)
    standard_routes(server, costs=cursor_pages([costs, load("costs_page2.json"), load("costs_page3.json")]))
    rows = fetch(server)
    assert min(r.period_start for r in rows) == START
    assert sum(r.cost for r in rows if r.cost is not None) == billed_total_in_fixtures()


def test_fine_tuned_usage_carries_the_cost_of_its_ft_line_item(server):
    bucket = {"object": "bucket", "start_time": 1781222400, "end_time": 1781308800}
    costs = {
        "object": "page",
        "has_more": False,
        "next_page": None,
        "data": [
            {
                **bucket,
                "results": [
                    {
                        "object": "organization.costs.result",
                        "amount": {"value": "0.0375", "currency": "usd"},
                        "line_item": "ft-gpt-4o-mini-2024-07-18, input",
                        "project_id": SUPPORT,
                    },
                ],
            }
        ],
    }
    usage = {
        "object": "page",
        "has_more": False,
        "next_page": None,
        "data": [
            {
                **bucket,
                "results": [
                    {
                        "object": "organization.usage.completions.result",
                        "input_tokens": 12500,
                        "output_tokens": 0,
                        "num_model_requests": 9,
                        "project_id": SUPPORT,
                        "api_key_id": "key_ft",
                        "model": "ft:gpt-4o-mini-2024-07-18:acme::B7xQ2",
                    },
                ],
            }
        ],
    }
    standard_routes(
        server,
        costs=cursor_pages([costs]),
        completions=cursor_pages([usage]),
        embeddings=cursor_pages([{**usage, "data": []}]),
    )
    [row] = fetch(server)
    assert (row.model_raw, row.cost, row.input_tokens) == (
        "ft:gpt-4o-mini-2024-07-18:acme::B7xQ2",
        Decimal("0.0375"),
        12500,
    )


@pytest.mark.parametrize(
    "text, model, tier, direction, per_token",
    [
        ("gpt-4o-mini-2024-07-18, input", "gpt-4o-mini-2024-07-18", "", "input", True),
        ("gpt-4o-mini-2024-07-18, cached input", "gpt-4o-mini-2024-07-18", "", "cached input", True),
        ("gpt-audio-mini-2025-12-15 audio, input", "gpt-audio-mini-2025-12-15", "", "input", True),
        ("gpt-image-2-2026-04-21 image, cached input", "gpt-image-2-2026-04-21", "", "cached input", True),
        ("priority | gpt-5.6-sol, output, long context", "gpt-5.6-sol", "priority", "output, long context", True),
        ("evals | gpt-4o-mini-2024-07-18, input", "gpt-4o-mini-2024-07-18", "evals", "input", True),
        ("ft-gpt-4o-2024-08-06, input", "ft-gpt-4o-2024-08-06", "", "input", True),
        ("whisper-1, audio", "whisper-1", "", "audio", False),
        ("web search tool calls", "", "", "", False),
        ("Vector storage", "", "", "", False),
        ("input_tokens", "", "", "", False),  # the spec's own example value
    ],
)
def test_line_items_are_read_best_effort_and_kept_whole(text, model, tier, direction, per_token):
    item = parse_line_item(text)
    assert (item.text, item.model, item.tier, item.direction, item.per_token) == (
        text,
        model,
        tier,
        direction,
        per_token,
    )


def test_usage_and_cost_model_names_compare_by_their_normalised_form():
    assert model_key("gpt-4o-mini-2024-07-18") == model_key("gpt-4o-mini") == "gpt-4o-mini"
    assert model_key("ft:gpt-4o-2024-08-06:acme::abc123") == model_key("ft-gpt-4o-2024-08-06") == "ft-gpt-4o"


# --- failures ---


def test_a_rejected_key_fails_with_an_auth_error_that_never_shows_the_key(server):
    standard_routes(server, costs=[Reply(401, {"error": {"message": f"Incorrect API key provided: {SECRET[:8]}***"}})])
    with pytest.raises(ProviderError) as caught:
        fetch(server)
    assert caught.value.reason == "auth" and caught.value.permanent
    assert "costs page 1" in str(caught.value) and SECRET not in str(caught.value)
    assert len(server.requests) == 1


def test_a_rate_limited_page_is_retried_after_the_seconds_openai_asks_for(server):
    cursor = load("costs_page1.json")["next_page"]
    limited = Reply(
        429, {"error": {"message": "Rate limit reached", "type": "rate_limit_exceeded"}}, {"Retry-After": "3"}
    )
    pages = [load(f"costs_page{n}.json") for n in (1, 2, 3)]
    standard_routes(server, costs=cursor_pages(pages, fail_first={cursor: limited}))
    sleeps = []
    rows = fetch(server, sleeps)
    assert sleeps == [3.0]
    assert [r.query.get("page") for r in server.requests if r.path == COSTS].count([cursor]) == 2
    assert sum(r.cost for r in rows if r.cost is not None) == billed_total_in_fixtures()


def test_a_server_error_is_retried_and_the_read_completes(server):
    cursor = load("completions_page2.json")["next_page"]
    pages = [load(f"completions_page{n}.json") for n in (1, 2, 3)]
    standard_routes(server, completions=cursor_pages(pages, fail_first={cursor: Reply(500, "upstream hiccup")}))
    sleeps = []
    rows = fetch(server, sleeps)
    assert len(sleeps) == 1 and len(rows) == 13
    assert len([r for r in server.requests if r.path == COMPLETIONS]) == 4


def test_insufficient_quota_stops_at_once_without_retrying(server):
    quota = Reply(
        429,
        {
            "error": {
                "message": "You exceeded your current quota",
                "type": "insufficient_quota",
                "code": "insufficient_quota",
            }
        },
    )
    standard_routes(server, costs=[quota])
    sleeps = []
    with pytest.raises(ProviderError) as caught:
        fetch(server, sleeps)
    assert caught.value.reason == "quota" and caught.value.permanent
    assert sleeps == [] and len(server.requests) == 1


def test_a_page_without_data_is_malformed_and_the_error_names_the_page(server):
    pages = [load("costs_page1.json"), load("costs_page2.json")]
    pages.append({"object": "page", "has_more": False, "next_page": None})
    standard_routes(server, costs=cursor_pages(pages))
    with pytest.raises(ProviderError, match=r"costs page 3: malformed response \(no 'data' list") as caught:
        fetch(server)
    assert caught.value.reason == "malformed" and caught.value.permanent


def _broken_completions_page2(change) -> dict:
    page = load("completions_page2.json")
    change(page)
    return page


@pytest.mark.parametrize(
    "change, expected",
    [
        pytest.param(
            lambda p: p["data"][0].pop("results"), "bucket 1 has no 'results' list", id="bucket-without-results"
        ),
        pytest.param(
            lambda p: p["data"][0]["results"][1].update(object="organization.usage.images.result"),
            "result 2 is of unknown type 'organization.usage.images.result'",
            id="unknown-result-object",
        ),
        pytest.param(
            lambda p: p["data"][0]["results"][0].update(input_tokens="lots"),
            "input_tokens 'lots' is not",
            id="text-count",
        ),
        pytest.param(
            lambda p: p["data"][0]["results"][0].update(input_uncached_tokens=99),
            "do not add up to input_tokens",
            id="token-classes-disagree",
        ),
        pytest.param(
            lambda p: p.update(next_page=None), "has_more is true but next_page is missing", id="cursor-missing"
        ),
    ],
)
def test_a_usage_page_of_an_unknown_shape_is_malformed_and_names_the_page(server, change, expected):
    pages = [load("completions_page1.json"), _broken_completions_page2(change), load("completions_page3.json")]
    standard_routes(server, completions=cursor_pages(pages))
    with pytest.raises(ProviderError, match="completions page 2") as caught:
        fetch(server)
    assert caught.value.reason == "malformed" and expected in str(caught.value)


@pytest.mark.parametrize("value", ["twelve dollars", None, True, "NaN"])
def test_a_cost_amount_that_is_not_a_number_is_malformed(server, value):
    page = load("costs_page1.json")
    page["data"][0]["results"][0]["amount"]["value"] = value
    standard_routes(server, costs=cursor_pages([page, load("costs_page2.json"), load("costs_page3.json")]))
    with pytest.raises(
        ProviderError, match=r"costs page 1: malformed response \(bucket 2026-06-12 result 1: amount"
    ) as caught:
        fetch(server)
    assert caught.value.reason == "malformed"
