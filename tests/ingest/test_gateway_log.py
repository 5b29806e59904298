"""Gateway request logs aggregated to hourly rows (ingest/connectors/gateway/log.py).

Fixtures: LiteLLM `/spend/logs?summarize=false` JSON, the `/spend/logs/v2` envelope, a `LiteLLM_SpendLogs` CSV
export and OpenAI-compatible JSONL (Groq, Cerebras, Moonshot, DeepInfra responses).
"""

import datetime as dt
import hashlib
import inspect
import json
import tracemalloc
from decimal import Decimal
from pathlib import Path

import pytest

from finops.performance.measures import Performance
from ingest.connectors.gateway.log import GatewayLog

from .file_sources import refusal, rows_of

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "gateway_log"
UTC = dt.UTC


def at(hour: int, day: int = 14) -> dt.datetime:
    return dt.datetime(2026, 6, day, hour, tzinfo=UTC)


def parse_file(name: str) -> list:
    with (FIXTURES / name).open("rb") as stream:
        return list(GatewayLog().parse(stream, file_name=name))


def parse_bytes(data: bytes, name: str = "inline.jsonl") -> list:
    return rows_of(GatewayLog, data, name)


def parse_error(data: bytes, name: str) -> str:
    return refusal(GatewayLog, data, name)


def fixture_error(name: str) -> str:
    return parse_error((FIXTURES / name).read_bytes(), name)


def by(rows, **match):
    found = [r for r in rows if all(getattr(r, k) == v for k, v in match.items())]
    assert len(found) == 1, found
    return found[0]


def litellm(**fields) -> dict:
    record = {
        "request_id": "r",
        "startTime": "2026-06-14T09:00:00Z",
        "endTime": "2026-06-14T09:00:01Z",
        "model": "llama-3.3-70b-versatile",
        "custom_llm_provider": "groq",
        "prompt_tokens": 10,
        "completion_tokens": 5,
        "spend": 0.001,
        "api_key": "k",
        "user": "u",
        "metadata": {},
        "request_tags": [],
    }
    record.update(fields)
    return record


def json_array(*records) -> bytes:
    return json.dumps(list(records)).encode()


# --- LiteLLM /spend/logs JSON ---


def test_litellm_spend_logs_become_one_row_per_hour_provider_model_key_and_user():
    rows = parse_file("litellm_spend_logs.json")

    assert [(r.period_start, r.provider_slug, r.model_raw, r.requests) for r in rows] == [
        (at(9), "anthropic", "claude-sonnet-4-5-20250929", 1),
        (at(9), "aws-bedrock", "us.anthropic.claude-haiku-4-5-20251001-v1:0", 2),
        (at(9), "cerebras", "cerebras/llama3.1-8b", 1),
        (at(9), "groq", "llama-3.3-70b-versatile", 3),
        (at(9), "moonshot", "kimi-k2-0905-preview", 1),
        (at(9), "openai", "gpt-4o-mini", 1),
        (at(10), "groq", "llama-3.3-70b-versatile", 1),
    ]
    assert sum(r.requests for r in rows) == 10  # every record counted once
    assert all(r.period_end - r.period_start == dt.timedelta(hours=1) for r in rows)


def test_an_hourly_row_sums_the_tokens_of_its_requests():
    groq = by(parse_file("litellm_spend_logs.json"), provider_slug="groq", period_start=at(9))

    assert (groq.input_tokens, groq.cached_input_tokens, groq.cache_write_tokens, groq.output_tokens) == (
        3500,
        0,
        0,
        1000,
    )
    assert (groq.api_key_ref, groq.user_ref) == (
        "5c1e7a0f3b9d4e2f8a6c1b0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f",
        "alice",
    )
    assert groq.source_ref == "litellm_spend_logs.json line 2"


def test_a_request_belongs_to_the_hour_it_started_in_even_if_it_ends_in_the_next():
    rows = parse_file("litellm_spend_logs.json")

    late = by(rows, provider_slug="groq", period_start=at(10))
    assert (late.requests, late.input_tokens, late.output_tokens) == (1, 300, 50)


def timing(row) -> Performance:
    return row.latency


def near(value: float, exact: float) -> bool:
    """Within the distribution's stated 1 % relative error."""
    return abs(value - exact) <= 0.01 * exact


def test_each_hourly_row_keeps_a_mergeable_latency_distribution_of_its_requests():
    groq = timing(by(parse_file("litellm_spend_logs.json"), provider_slug="groq", period_start=at(9)))

    # durations 1200, 800, 3000 ms; first tokens after 300 ms, none (whole 800 ms), 500 ms
    assert (groq.requests, groq.errors, groq.e2e.count, groq.ttft.count) == (3, 0, 3, 3)
    assert near(groq.p_ms(0.5), 1200) and near(groq.p_ms(0.99), 3000) and near(groq.p_ms(0.01), 800)
    assert near(groq.ttft_p_ms(0.5), 500) and near(groq.ttft_p_ms(0.99), 800)
    assert groq.timed_ms == 5000
    # streamed: the two with a first token before their end (900 ms + 2500 ms of generation)
    assert groq.streamed_ms == 3400
    assert groq.as_json() == Performance.from_json(json.loads(json.dumps(groq.as_json()))).as_json()


def test_failed_requests_count_as_requests_and_errors_and_their_latency_is_kept():
    bedrock = by(parse_file("litellm_spend_logs.json"), provider_slug="aws-bedrock")

    assert (bedrock.requests, bedrock.input_tokens, bedrock.output_tokens) == (2, 400, 120)
    measured = timing(bedrock)
    assert (measured.requests, measured.errors, measured.error_rate) == (2, 1, 0.5)
    assert near(measured.p_ms(0.5), 2000) and near(measured.p_ms(1), 30000)


def test_cache_reads_and_writes_are_split_out_of_the_cache_inclusive_prompt_tokens():
    rows = parse_file("litellm_spend_logs.json")

    openai = by(rows, provider_slug="openai")
    assert (openai.input_tokens, openai.cached_input_tokens, openai.cache_write_tokens) == (400, 600, 0)
    anthropic = by(rows, provider_slug="anthropic")
    assert (anthropic.input_tokens, anthropic.cached_input_tokens, anthropic.cache_write_tokens) == (500, 2000, 500)
    assert anthropic.output_tokens == 250


def test_the_gateway_spend_is_not_taken_as_cost_the_catalog_prices_the_tokens():
    rows = parse_file("litellm_spend_logs.json") + parse_file("litellm_spend_logs.csv")

    assert {r.cost for r in rows} == {None}
    assert {r.charge_category for r in rows} == {"usage"}


def test_team_key_alias_end_user_request_tags_and_spend_metadata_become_tags():
    rows = parse_file("litellm_spend_logs.json")

    assert by(rows, provider_slug="groq", period_start=at(9)).tags == {
        "env": "prod",
        "feature": "summaries",
        "key_alias": "support-bot",
        "team_alias": "Support Platform",
        "team_id": "support",
    }
    assert by(rows, provider_slug="moonshot").tags == {
        "end_user": "customer-42",
        "env": "prod",
        "experiment": "true",
        "team_id": "search",
    }


def test_a_litellm_record_that_stored_the_full_response_is_still_read_as_litellm():
    response = {"id": "chatcmpl-1", "model": "llama-3.3-70b-versatile", "usage": {"prompt_tokens": 999}}
    records = [litellm(response=response), litellm(response=json.dumps(response))]

    (row,) = parse_bytes(json_array(*records), "stored.json")

    assert (row.requests, row.input_tokens, row.provider_slug, row.api_key_ref) == (2, 20, "groq", "k")


def test_records_that_differ_only_in_their_tags_stay_in_separate_rows():
    data = json_array(
        litellm(request_tags=["env:prod"]), litellm(request_tags=["env:staging"]), litellm(request_tags=["env:prod"])
    )

    rows = parse_bytes(data, "tags.json")

    assert sorted((r.tags["env"], r.requests) for r in rows) == [("prod", 2), ("staging", 1)]


@pytest.mark.parametrize(
    "provider, model, slug",
    [
        ("groq", "llama-3.3-70b-versatile", "groq"),
        ("cerebras", "llama3.1-8b", "cerebras"),
        ("moonshot", "kimi-k2-0905-preview", "moonshot"),
        ("openai", "gpt-4o", "openai"),
        ("anthropic", "claude-sonnet-4-5", "anthropic"),
        ("bedrock", "anthropic.claude-3-haiku-20240307-v1:0", "aws-bedrock"),
        ("bedrock_converse", "us.amazon.nova-pro-v1:0", "aws-bedrock"),
        ("azure", "gpt-4.1", "azure-openai"),
        ("vertex_ai", "gemini-2.5-flash", "gcp-vertex"),
        ("vertex_ai-anthropic_models", "claude-sonnet-4-5", "gcp-vertex"),
        ("together_ai", "meta-llama/Llama-3.3-70B-Instruct-Turbo", "together"),
        ("fireworks_ai", "accounts/fireworks/models/llama-v3p1-8b-instruct", "fireworks"),
        ("deepinfra", "meta-llama/Llama-3.3-70B-Instruct", "deepinfra"),
        ("openrouter", "openrouter/openai/gpt-4o", "openrouter"),
        ("", "groq/llama-3.1-8b-instant", "groq"),  # no provider: the model's gateway prefix
        ("", "llama-3.1-8b-instant", ""),  # nothing to go on: the account's provider
        ("mistral", "mistral-large-latest", "mistral"),  # unknown: kept, so the import names it
    ],
)
def test_the_litellm_provider_maps_to_our_provider_slug(provider, model, slug):
    (row,) = parse_bytes(json_array(litellm(custom_llm_provider=provider, model=model)), "providers.json")

    assert row.provider_slug == slug
    assert row.model_raw == model


def test_the_spend_logs_v2_envelope_is_streamed_from_its_data_array():
    rows = parse_file("litellm_spend_logs_v2.json")

    assert [(r.provider_slug, r.input_tokens, r.output_tokens, r.user_ref) for r in rows] == [
        ("fireworks", 900, 100, "dana"),
        ("together", 700, 300, "dana"),
    ]
    assert rows[1].source_ref == "litellm_spend_logs_v2.json line 3"


# --- LiteLLM_SpendLogs CSV ---


def test_a_litellm_spend_logs_csv_export_is_aggregated_the_same_way():
    rows = parse_file("litellm_spend_logs.csv")

    assert [(r.period_start, r.provider_slug, r.model_raw, r.requests) for r in rows] == [
        (at(14, 15), "cerebras", "llama3.1-8b", 2),
        (at(14, 15), "deepinfra", "meta-llama/Llama-3.3-70B-Instruct", 1),
        (at(15, 15), "azure-openai", "gpt-4.1", 1),
        (at(15, 15), "gcp-vertex", "gemini-2.5-flash", 1),
        (at(15, 15), "openrouter", "openrouter/moonshotai/kimi-k2", 1),
    ]
    cerebras = rows[0]
    assert (cerebras.input_tokens, cerebras.output_tokens) == (1000, 400)
    assert cerebras.tags == {"env": "prod", "key_alias": "support-bot", "team_id": "support"}
    assert (timing(cerebras).e2e.count, timing(cerebras).timed_ms) == (2, 2750)
    assert near(timing(cerebras).p_ms(0.5), 750) and near(timing(cerebras).p_ms(0.99), 2000)
    deepinfra = rows[1]
    assert (deepinfra.input_tokens, deepinfra.cached_input_tokens) == (750, 250)


# --- OpenAI-compatible JSONL ---


def test_openai_compatible_jsonl_is_aggregated_per_hour_with_cached_tokens_split_out():
    rows = parse_file("openai_compatible.jsonl")

    assert [
        (
            r.period_start,
            r.provider_slug,
            r.model_raw,
            r.requests,
            r.input_tokens,
            r.cached_input_tokens,
            r.output_tokens,
        )
        for r in rows
    ] == [
        (at(9), "cerebras", "llama3.1-8b", 1, 50, 0, 500),
        (at(9), "groq", "llama-3.3-70b-versatile", 2, 352, 768, 100),  # x_groq: a Groq response
        (at(10), "deepinfra", "deepinfra/meta-llama/Llama-3.3-70B-Instruct", 1, 10, 0, 5),
        (at(10), "moonshot", "kimi-k2-0905-preview", 1, 600, 400, 300),  # {"response": …, "metadata": …}
    ]


def test_jsonl_latency_comes_from_explicit_times_or_the_groq_total_time():
    rows = parse_file("openai_compatible.jsonl")

    cerebras = timing(by(rows, provider_slug="cerebras"))
    assert (cerebras.e2e.count, cerebras.timed_ms, cerebras.streamed_ms, cerebras.streamed_tokens) == (1, 400, 280, 500)
    assert near(cerebras.p_ms(0.99), 400) and near(cerebras.ttft_p_ms(0.5), 120)
    speed, basis = cerebras.output_tokens_per_s
    assert (round(speed, 2), basis) == (Decimal("1785.71"), "generation")  # 500 tokens in 280 ms after the first
    groq = timing(by(rows, provider_slug="groq"))
    assert (groq.e2e.count, groq.timed_ms, groq.streamed_ms) == (2, 800, 0)
    assert near(groq.p_ms(0.5), 289) and near(groq.p_ms(0.99), 511)
    assert groq.output_tokens_per_s == (Decimal(100 * 1000) / Decimal(800), "end-to-end")  # nothing streamed
    deepinfra = timing(by(rows, provider_slug="deepinfra"))  # no times at all: counted, nothing invented
    assert (deepinfra.requests, deepinfra.e2e.count, deepinfra.p_ms(0.99), deepinfra.output_tokens_per_s) == (
        1,
        0,
        None,
        (None, ""),
    )


def test_a_raw_api_key_in_a_log_is_stored_only_as_its_sha256():
    groq = by(parse_file("openai_compatible.jsonl"), provider_slug="groq")

    assert groq.api_key_ref == hashlib.sha256(b"sk-live-groq-0001").hexdigest()
    assert "sk-live" not in repr(groq)
    assert (groq.user_ref, groq.tags) == ("carol", {"feature": "chat", "team_id": "support"})


def test_anthropic_native_usage_is_read_as_disjoint_token_classes():
    line = {
        "id": "msg_1",
        "type": "message",
        "model": "claude-sonnet-4-5",
        "created": 1781427600,
        "usage": {
            "input_tokens": 100,
            "cache_read_input_tokens": 2000,
            "cache_creation_input_tokens": 300,
            "output_tokens": 50,
        },
    }
    (row,) = parse_bytes(json.dumps(line).encode())

    assert (row.input_tokens, row.cached_input_tokens, row.cache_write_tokens, row.output_tokens) == (
        100,
        2000,
        300,
        50,
    )


def test_percentiles_of_a_thousand_requests_stay_within_one_percent():
    lines = [
        json.dumps(
            {
                "id": f"c{n}",
                "created": 1781427600 + n,
                "model": "llama3.1-8b",
                "usage": {"prompt_tokens": 1, "completion_tokens": 1},
                "metadata": {"provider": "cerebras", "latency_ms": n},
            }
        )
        for n in range(1, 1001)
    ]
    (row,) = parse_bytes("\n".join(lines).encode())

    latency = timing(row)
    assert (latency.e2e.count, latency.timed_ms) == (1000, 500_500)
    assert near(latency.p_ms(0.5), 500) and near(latency.p_ms(0.95), 950) and near(latency.p_ms(0.99), 990)
    assert row.requests == 1000 and (row.input_tokens, row.output_tokens) == (1000, 1000)


# --- format detection and streaming ---


def test_the_format_is_told_from_the_content_not_the_file_name():
    as_csv = (FIXTURES / "litellm_spend_logs.json").read_bytes()
    as_json = (FIXTURES / "litellm_spend_logs.csv").read_bytes()

    assert len(parse_bytes(as_csv, "spend.csv")) == 7
    assert len(parse_bytes(as_json, "spend.json")) == 5
    assert len(parse_bytes(b"\xef\xbb\xbf" + as_csv, "bom.json")) == 7


def test_parse_is_a_generator():
    with (FIXTURES / "openai_compatible.jsonl").open("rb") as stream:
        assert inspect.isgenerator(GatewayLog().parse(stream, file_name="x.jsonl"))


def test_a_json_array_larger_than_the_read_buffer_is_streamed_and_errors_keep_their_line():
    records = [
        litellm(request_id=f"r{n}", startTime=f"2026-06-14T{n % 24:02d}:00:00Z", endTime=None) for n in range(8000)
    ]
    records[-1]["prompt_tokens"] = -1
    text = "[\n" + ",\n".join(json.dumps(r, indent=2) for r in records) + "\n]\n"  # ~2.4 MB, many lines per record
    assert len(text) > 2 * (1 << 20)
    lines_before_last = text[: text.rindex('{\n  "request_id": "r7999"')].count("\n")

    message = parse_error(text.encode(), "big.json")
    assert message == f"big.json line {lines_before_last + 1}: prompt_tokens is negative (-1)"

    records[-1]["prompt_tokens"] = 10
    rows = parse_bytes(json.dumps(records).encode(), "big.json")  # one single line of 2 MB
    assert sum(r.requests for r in rows) == 8000 and len(rows) == 24


def test_memory_grows_with_hourly_groups_not_with_records():
    def peak(records: int) -> int:
        lines = "\n".join(
            json.dumps(
                {
                    "id": f"x{n}",
                    "created": 1781427600 + (n % 24) * 3600,
                    "model": "llama3.1-8b",
                    "usage": {"prompt_tokens": 7, "completion_tokens": 3},
                    "metadata": {"latency_ms": n % 700},
                }
            )
            for n in range(records)
        ).encode()
        tracemalloc.start()
        try:
            rows = parse_bytes(lines)
            return tracemalloc.get_traced_memory()[1], len(rows)
        finally:
            tracemalloc.stop()

    peak(100)  # warm up
    small, small_rows = peak(5_000)
    large, large_rows = peak(20_000)

    assert small_rows == large_rows == 24
    assert large < small * 1.5 + 256 * 1024, (small, large)


# --- errors name the file and the line ---


def test_the_summarised_spend_logs_output_is_refused_with_what_to_export_instead():
    assert fixture_error("summarised_spend_logs.json") == (
        "summarised_spend_logs.json line 1: this is the summarised /spend/logs output (spend per day, no tokens); "
        "export per-request logs with /spend/logs?summarize=false or /spend/logs/v2"
    )


def test_a_csv_missing_required_columns_lists_them():
    message = fixture_error("missing_columns.csv")

    assert message.startswith(
        "missing_columns.csv: not a LiteLLM_SpendLogs CSV, missing column(s) startTime, model, prompt_tokens, "
        "completion_tokens"
    )


def test_an_unknown_format_says_which_formats_are_read():
    assert fixture_error("unknown_format.txt") == (
        "unknown_format.txt: unknown format; expected LiteLLM /spend/logs JSON, a LiteLLM_SpendLogs CSV export, "
        "or OpenAI-compatible JSONL"
    )


def test_a_bad_date_names_the_file_and_line():
    assert (
        fixture_error("bad_date.csv")
        == "bad_date.csv line 3: startTime 'yesterday at noon' is not an ISO 8601 date-time"
    )


def test_a_negative_token_count_names_the_file_and_line():
    assert (
        fixture_error("negative_tokens.jsonl") == "negative_tokens.jsonl line 2: usage.prompt_tokens is negative (-10)"
    )


@pytest.mark.parametrize(
    "record, problem",
    [
        (
            litellm(prompt_tokens=100, metadata={"usage_object": {"prompt_tokens_details": {"cached_tokens": 150}}}),
            "cached (150) + cache-write (0) tokens exceed prompt_tokens (100), which counts all input",
        ),
        (litellm(endTime="2026-06-14T08:59:59Z"), "the end time 2026-06-14T08:59:59+00:00 is before the start time"),
        (litellm(startTime=None), "startTime is missing"),
        (litellm(model="", model_group=""), "model is empty but the record has tokens"),
        (litellm(completion_tokens=2.5), "completion_tokens Decimal('2.5') is not a whole number"),
        (litellm(metadata="{broken"), "metadata is not valid JSON"),
        ({"hello": "world"}, "unknown record shape (keys hello): neither prompt_tokens (LiteLLM) nor a usage object"),
    ],
)
def test_a_record_the_parser_cannot_trust_stops_the_file_with_its_line(record, problem):
    message = parse_error(json_array(litellm(), record), "spend.json")

    assert message.startswith("spend.json line 1: ")
    assert problem in message


@pytest.mark.parametrize(
    "data, problem",
    [
        (b"", "x.jsonl: the file is empty"),
        (b"  \n\n", "x.jsonl: the file is empty"),
        (
            b'{"id": "a", "created": 1781427600, "model": "m", "usage": {"prompt_tokens": 1}}\n{"id": "b", "usage": ',
            "x.jsonl line 2: not valid JSON",
        ),
        (b"[1, 2]", "x.jsonl line 1: expected a JSON object per record, got int"),
        (
            b'[{"startTime": "2026-06-14T09:00:00Z", "model": "m", "prompt_tokens": 1} {"x": 1}]',
            "x.jsonl line 1: not valid JSON (expected ',' or ']')",
        ),
        (b"\xff\xfe\x00garbage", "x.jsonl: not UTF-8 text"),
    ],
)
def test_a_file_that_is_not_a_readable_gateway_log_is_refused_clearly(data, problem):
    assert parse_error(data, "x.jsonl").startswith(problem)


def test_token_counts_given_as_json_decimals_or_strings_are_whole_numbers():
    (row,) = parse_bytes(json_array(litellm(prompt_tokens="120", completion_tokens=30.0)), "strings.json")

    assert (row.input_tokens, row.output_tokens) == (120, 30)
    assert isinstance(Decimal(row.input_tokens), Decimal)
