"""The gateway-log column reader (ingest/connectors/gateway/columns.py) against the row reader (gateway/log.py).

Both must make the same hourly lines — tokens, requests, first line, and the latency distributions and
Performance JSON byte for byte — and, imported, the same stored lines and rollups (spend and performance). What
the column reader cannot read exactly it declines, and the row reader reads it or refuses it with its own error.
"""

import csv
import datetime as dt
import hashlib
import io
import json
import random
from decimal import Decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from bench.gateway_export import spend_log_rows, write_spend_logs_csv
from finops.models import (
    Account,
    DailyPerformance,
    DailySpend,
    IngestRun,
    LineSignature,
    MonthlyPerformance,
    MonthlySpend,
    Provider,
    UsageLine,
)
from finops.performance.latency import bucket_of
from ingest.connectors.base import BatchDeclined, ProviderError
from ingest.connectors.gateway.columns import _Accumulator
from ingest.connectors.gateway.log import GatewayLog
from ingest.connectors.gateway.records import SPEND_LOG_COLUMNS
from ingest.connectors.gateway.values import BOUNDS, MAX_MS, fixed_width_times
from ingest.connectors.text_input import MAX_LINE_CHARS
from ingest.services import usage_file_import

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "gateway_log"


def by_rows(data: bytes, name: str = "log.csv") -> list:
    return list(GatewayLog.row_groups(io.BytesIO(data), file_name=name).rows())


def by_columns(data: bytes, name: str = "log.csv") -> list:
    return list(GatewayLog.column_groups(io.BytesIO(data), file_name=name).rows())


def same_lines(data: bytes, name: str = "log.csv", rows: list | None = None) -> list:
    """The column reader's lines, checked equal to the row reader's (`rows`: already read from these bytes), their
    latency JSON byte for byte."""
    rows, columns = by_rows(data, name) if rows is None else rows, by_columns(data, name)
    assert columns == rows

    def latency(row):  # a gateway cache hit has no latency of a provider's
        return None if row.latency is None else json.dumps(row.latency.as_json())

    assert [latency(r) for r in columns] == [latency(r) for r in rows]
    return columns


def generated(requests: int, *, seed: int, varied: bool = True) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(SPEND_LOG_COLUMNS)
    writer.writerows(spend_log_rows(requests, seed=seed, varied=varied))
    return out.getvalue().encode()


def csv_log(header: str, *lines: str, newline: str = "\n") -> bytes:
    return (newline.join([header, *lines]) + newline).encode()


HEADER = (
    "request_id,startTime,endTime,completionStartTime,model,custom_llm_provider,prompt_tokens,completion_tokens,"
    "spend,api_key,team_id,user,metadata,request_tags,status"
)


# --- latency buckets ---


def test_bucket_bounds_give_bucket_of_for_every_whole_millisecond():
    ms = np.concatenate(
        [
            np.arange(1, 300_000),
            np.unique(np.geomspace(300_000, MAX_MS, 200_000).astype(np.int64)),
            BOUNDS,
            BOUNDS - 1,
            [MAX_MS],
        ]
    )
    ms = ms[ms >= 1]
    found = np.searchsorted(BOUNDS, ms, side="right")
    expected = np.array([bucket_of(int(m)) for m in ms.tolist()])
    assert (found == expected).all()
    assert bucket_of(MAX_MS) == len(BOUNDS)


def test_times_read_from_the_bytes_are_pythons():
    """The numpy reading of one-layout time columns against datetime.fromisoformat, leap days and all."""
    rng = random.Random(5)
    moments = [
        dt.datetime(1900, 1, 1, tzinfo=dt.UTC) + dt.timedelta(microseconds=rng.randrange(200 * 365 * 86400 * 10**6))
        for _ in range(3000)
    ] + [dt.datetime(2024, 2, 29, 23, 59, 59, 999999, tzinfo=dt.UTC)]
    epoch = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    for layout in ("%Y-%m-%d %H:%M:%S.%f", "%Y-%m-%dT%H:%M:%S.%fZ", "%Y-%m-%dT%H:%M:%S+00:00", "%Y-%m-%d %H:%M:%S"):
        texts = [m.strftime(layout) for m in moments]
        texts = [t[:23] if layout == "%Y-%m-%d %H:%M:%S.%f" else t for t in texts]  # milliseconds, as LiteLLM
        expected = [
            (dt.datetime.fromisoformat(t.replace("Z", "+00:00")).replace(tzinfo=dt.UTC) - epoch)
            // dt.timedelta(microseconds=1)
            for t in texts
        ]
        assert fixed_width_times(pa.array(texts)).tolist() == expected, layout
    with pytest.raises(BatchDeclined):
        fixed_width_times(pa.array(["2025-02-29 10:00:00"]))  # not a leap year: fromisoformat refuses it too


# --- the two readers agree ---


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_generated_logs_give_the_same_lines_and_distributions(seed):
    """Streamed and not, failures, missing end and first-token times, zero-length calls, first tokens after the end,
    raw keys, users, team aliases, three time notations (so Arrow's parser, not the fixed-width one), and requests
    running past midnight."""
    data = generated(6000, seed=seed)
    lines = same_lines(data)
    assert len(lines) > 500
    days = {line.period_start.date() for line in lines}
    assert len(days) == 1 and any(line.period_start.hour == 23 for line in lines)
    assert sum(line.requests for line in lines) == 6000
    assert any(line.latency.errors for line in lines) and any(line.latency.ttft.zero for line in lines)
    assert any(line.latency.e2e.zero for line in lines)  # the zero-length calls
    assert any(line.user_ref for line in lines) and any("team_alias" in line.tags for line in lines)
    assert all(not line.api_key_ref.startswith("sk-") for line in lines)
    assert any(line.latency.streamed_ms for line in lines) and any(line.cached_input_tokens for line in lines)


@pytest.fixture(scope="module")
def bench_log() -> tuple[bytes, list]:
    """The bench's log and the row reader's lines of it, made once for the two merge thresholds below: MERGE_AT is
    the column reader's (`_Accumulator`), which the row reader never reads, so its lines of the same bytes are the
    same both times (generating the 20,000 requests and reading them by rows was ~40 % of this module's CPU)."""
    data = generated(20_000, seed=4, varied=False)
    return data, by_rows(data)


@pytest.mark.parametrize("merge_at", [_Accumulator.MERGE_AT, 50])
def test_the_bench_log_as_litellm_writes_it_gives_the_same_lines(merge_at, monkeypatch, bench_log):
    """One time notation throughout (LiteLLM's export): the times are read from the bytes. With a small merge
    threshold, the latency counts are merged many times along the file (as in a multi-million-request log)."""
    monkeypatch.setattr(_Accumulator, "MERGE_AT", merge_at)
    data, rows = bench_log
    lines = same_lines(data, rows=rows)
    assert sum(line.requests for line in lines) == 20_000 and len({line.period_start for line in lines}) == 24


@pytest.mark.parametrize("seen_at_most, new_at_most", [(64, 0.5), (1 << 17, 0.0)])
def test_combinations_of_cells_met_before_give_the_same_lines(seen_at_most, new_at_most, monkeypatch, bench_log):
    """A combination of cells met in an earlier block is answered from what was read of it then (Combinations.of):
    in small blocks (many of them, each read one ahead in the helper thread), the numbers forgotten every few
    blocks, or the search skipped after every block with a new combination, the lines are the row reader's."""
    from ingest.connectors.gateway import columns
    from ingest.connectors.gateway.combinations import Combinations

    monkeypatch.setattr(columns, "BLOCK_BYTES", 1 << 16)
    monkeypatch.setattr(Combinations, "SEEN_AT_MOST", seen_at_most)
    monkeypatch.setattr(Combinations, "NEW_AT_MOST", new_at_most)
    data, rows = bench_log
    same_lines(data, rows=rows)


def test_requests_crossing_midnight_count_in_the_hour_they_start():
    data = csv_log(
        HEADER,
        "a,2026-03-02 23:59:59.900,2026-03-03 00:00:02.150,2026-03-03 "
        "00:00:00.300,gpt-4o,openai,100,20,0,k,t,,,,success",
        "b,2026-03-03 00:00:00.100,2026-03-03 00:00:01.100,,gpt-4o,openai,100,20,0,k,t,,,,success",
    )
    lines = same_lines(data)
    assert [(line.period_start.isoformat(), line.requests) for line in lines] == [
        ("2026-03-02T23:00:00+00:00", 1),
        ("2026-03-03T00:00:00+00:00", 1),
    ]
    assert lines[0].latency.e2e.buckets == {bucket_of(2250): 1}
    assert lines[0].latency.streamed_ms == 2250 - 400 and lines[0].source_ref == "log.csv line 2"


def test_the_rarer_litellm_columns_and_metadata_fields_read_alike():
    header = (
        "request_id,startTime,endTime,completionStartTime,model,model_group,custom_llm_provider,prompt_tokens,"
        "completion_tokens,cache_read_input_tokens,cache_creation_input_tokens,api_key,team_id,user,end_user,"
        "metadata,request_tags,status,status_code,error"
    )
    meta_hash = '"{""user_api_key_hash"": ""abc"", ""user_api_key_user_id"": ""u-9"", ""spend_logs_metadata"": null}"'
    meta_cache = (
        '"{""usage_object"": {""cache_creation_input_tokens"": 30, ""prompt_tokens_details"": '
        '{""cached_tokens"": 10, ""cache_creation_tokens"": 99}}, ""user_api_key_team_id"": ""t-meta"", '
        '""status"": ""failure"", ""user_api_key_alias"": ""alias""}"'
    )
    data = csv_log(
        header,
        f"1,2026-03-02T10:00:00Z,2026-03-02T10:00:01.5Z,,,claude-sonnet,anthropic,100,5,,,,,,eu,{meta_hash},,success,,",
        f"2,2026-03-02T10:10:00Z,2026-03-02T10:10:00.5Z,,claude,,anthropic,100,5,7,8,sk-raw,,,,{meta_cache},,,,",
        '3,2026-03-02T10:20:00Z,2026-03-02T10:20:01Z,,claude,,anthropic,100,5,7,8,k2,t,,,null,"[""a:b"", '
        '""c""]",success,503,',
        '4,2026-03-02T10:30:00Z,2026-03-02T10:30:01Z,,claude,,anthropic,100,5,,,k2,t,,,,"[""a:b"", '
        '""c""]",success,,boom',
        "5,2026-03-02T10:40:00Z,,,,,,0,0,,,k2,t,,,,,failure,,",  # no model, no tokens: a failed call, counted
        newline="\r\n",
    )
    lines = same_lines(b"\xef\xbb\xbf" + data.rstrip(b"\r\n"))  # a BOM, CRLF, no line break at the end
    assert sum(line.requests for line in lines) == 5
    assert sum(line.latency.errors for line in lines) == 4
    cached = next(line for line in lines if line.cached_input_tokens == 10)
    assert (cached.input_tokens, cached.cache_write_tokens) == (60, 30)  # metadata first, then the CSV columns
    assert {line.user_ref for line in lines} >= {"u-9"} and any(line.api_key_ref == "abc" for line in lines)


def test_a_file_the_column_reader_declines_is_read_by_the_row_reader(tmp_path):
    """Unix times, LiteLLM's spend_logs_metadata (free-form tags), a padded count, a blank line and a value across
    lines: declined by the column reader, read by the row reader, the same lines as it alone would make."""
    base = "x,2026-03-02 10:00:00,2026-03-02 10:00:01,,gpt-4o,openai,{p},5,0,k,t,,{meta},,success"
    cases = {
        "unix": csv_log(HEADER, base.format(p=10, meta="").replace("2026-03-02 10:00:00", "1772445600")),
        "spend_logs_metadata": csv_log(
            HEADER, base.format(p=10, meta='"{""spend_logs_metadata"": {""job"": ""j1""}}"')
        ),
        "padded": csv_log(HEADER, base.format(p=" 10", meta="")),
        "blank line": csv_log(HEADER, base.format(p=10, meta=""), "", base.format(p=11, meta="")),
        "multi-line value": csv_log(HEADER, base.format(p=10, meta='"{\n}"'), base.format(p=11, meta="")),
    }
    for name, data in cases.items():
        with pytest.raises(BatchDeclined):
            by_columns(data)
        assert list(GatewayLog().parse(io.BytesIO(data), file_name="log.csv")) == by_rows(data), name
    tagged = list(GatewayLog().parse(io.BytesIO(cases["spend_logs_metadata"]), file_name="log.csv"))
    assert tagged[0].tags["job"] == "j1"
    assert by_rows(cases["multi-line value"])[0].source_ref == "log.csv line 3"  # where the record ends


def test_blank_lines_at_the_end_of_an_export_keep_it_in_columns():
    """An editor's trailing blank lines change no line number: the column reader reads the file."""
    data = generated(300, seed=9, varied=False)
    assert same_lines(data + b"\n\n") == same_lines(data) == same_lines(data.rstrip(b"\n"))


def test_json_logs_stay_with_the_row_reader():
    for name in ("litellm_spend_logs.json", "litellm_spend_logs_v2.json", "openai_compatible.jsonl"):
        data = (FIXTURES / name).read_bytes()
        with pytest.raises(BatchDeclined):
            by_columns(data, name)
        assert list(GatewayLog().parse(io.BytesIO(data), file_name=name)) == by_rows(data, name)


def test_the_csv_fixture_is_read_as_columns():
    same_lines((FIXTURES / "litellm_spend_logs.csv").read_bytes(), "litellm_spend_logs.csv")


# --- bad input: the row reader's error, as before ---


def row_error(data: bytes, name: str) -> str:
    with pytest.raises(ProviderError) as excinfo:
        by_rows(data, name)
    return str(excinfo.value)


def parse_error(data: bytes, name: str) -> str:
    with pytest.raises(ProviderError) as excinfo:
        list(GatewayLog().parse(io.BytesIO(data), file_name=name))
    return str(excinfo.value)


@pytest.mark.parametrize(
    "case, expected",
    [
        ("cache", "log.csv line 3: cached (90) + cache-write (0) tokens exceed prompt_tokens (10)"),
        ("end", "log.csv line 3: the end time"),
        ("nul", "log.csv line 3: holds a NUL byte"),
        ("count", "log.csv line 3: prompt_tokens '1.5' is not a whole number"),
        ("model", "log.csv line 3: model is empty but the record has tokens"),
        ("date", "log.csv line 3: startTime '2026-13-02 10:00:00' is not an ISO 8601 date-time"),
        ("fields", "log.csv line 3: more fields than the header has columns"),
        ("json", "log.csv line 3: metadata is not valid JSON"),
    ],
)
def test_malformed_logs_get_the_row_readers_located_error(case, expected):
    good = "a,2026-03-02 10:00:00,2026-03-02 10:00:01,,gpt-4o,openai,10,5,0,k,t,,,,success"
    bad = {
        "cache": good.replace(",,,,success", ',,"{""usage_object"": {""cache_read_input_tokens"": 90}}",,success'),
        "end": good.replace("10:00:01", "09:00:00"),
        "nul": good.replace("gpt-4o", "gpt\x00-4o"),
        "count": good.replace(",10,5,", ",1.5,5,"),
        "model": good.replace("gpt-4o", ""),
        "date": good.replace("2026-03-02 10:00:00,", "2026-13-02 10:00:00,"),
        "fields": good + ",extra",
        "json": good.replace(",,,,success", ',,"{not json",,success'),
    }[case]
    data = csv_log(HEADER, good, bad, good)
    error = parse_error(data, "log.csv")
    assert error == row_error(data, "log.csv")
    assert error.startswith(expected)


def test_an_overlong_line_is_refused_by_the_line_bound():
    data = csv_log(HEADER, "a,2026-03-02 10:00:00,,,gpt-4o,openai,10,5,0,k,t,,," + "x" * MAX_LINE_CHARS + ",success")
    with pytest.raises(BatchDeclined):
        by_columns(data)
    assert parse_error(data, "log.csv").startswith(f"log.csv line 2: longer than {MAX_LINE_CHARS:,} characters")


# --- imported: the same stored lines and rollups ---


class _OneWay(io.RawIOBase):
    """A stream that cannot seek (an upload read once): the import reads it record by record."""

    def __init__(self, data: bytes):
        self._data = io.BytesIO(data)

    def readable(self):
        return True

    def readinto(self, buffer):
        chunk = self._data.read(len(buffer))
        buffer[: len(chunk)] = chunk
        return len(chunk)


def _stored(model, account, drop=("id", "account_id", "ingest_run_id", "signature_id")) -> list:
    found = [{k: v for k, v in row.items() if k not in drop} for row in model.objects.filter(account=account).values()]
    return sorted(found, key=lambda row: json.dumps(row, sort_keys=True, default=str))


def test_imported_by_columns_and_by_rows_the_stored_lines_and_rollups_are_identical(db, tmp_path):
    path = tmp_path / "spend-logs.csv"
    write_spend_logs_csv(path, 4000, seed=7, varied=True)
    groq = Provider.objects.get(slug="groq")
    by_col = Account.objects.create(name="gateway-columns", provider=groq, connector="gateway_log")
    by_row = Account.objects.create(name="gateway-rows", provider=groq, connector="gateway_log")
    with path.open("rb") as stream:
        run = usage_file_import(account=by_col, stream=stream, file_name=path.name)
    assert run.status == IngestRun.Status.SUCCEEDED, run.error
    run = usage_file_import(account=by_row, stream=io.BufferedReader(_OneWay(path.read_bytes())), file_name=path.name)
    assert run.status == IngestRun.Status.SUCCEEDED, run.error
    lines = _stored(UsageLine, by_col)
    assert len(lines) > 300 and sum(line["requests"] for line in lines) == 4000
    assert lines == _stored(UsageLine, by_row)
    for rollup in (DailySpend, MonthlySpend, DailyPerformance, MonthlyPerformance):
        assert _stored(rollup, by_col) and _stored(rollup, by_col) == _stored(rollup, by_row), rollup.__name__


def test_the_column_writer_attributes_a_scattered_logs_signatures_as_the_row_writer_does(db, tmp_path):
    """The column writer finds a scattered log's signatures in bulk and attributes the new ones by the rules (by
    tag, user, model and key, in priority order): every signature gets the workload and team the row writer gives
    it, and the lines are the same."""
    from finops.models import AttributionRule, Team, Workload
    from finops.spend.services.attribution import RuleMatcher

    path = tmp_path / "scattered.csv"
    write_spend_logs_csv(path, 3000, seed=13, shape="scattered")
    team = Team.objects.create(name="Platform")
    first, second, third = (
        Workload.objects.create(name=name, slug=name, team=team) for name in ("tagged", "user", "model")
    )
    AttributionRule.objects.create(workload=first, priority=1, tags={"team_id": "finance"}, user="user-03")
    AttributionRule.objects.create(workload=second, priority=2, user="user-07")
    AttributionRule.objects.create(workload=third, priority=3, model="*qwen*")
    assert RuleMatcher().rules
    groq = Provider.objects.get(slug="groq")
    by_col = Account.objects.create(name="scattered-columns", provider=groq, connector="gateway_log")
    by_row = Account.objects.create(name="scattered-rows", provider=groq, connector="gateway_log")
    with path.open("rb") as stream:
        assert usage_file_import(account=by_col, stream=stream, file_name=path.name).status == "succeeded"
    run = usage_file_import(account=by_row, stream=io.BufferedReader(_OneWay(path.read_bytes())), file_name=path.name)
    assert run.status == "succeeded", run.error
    assert _stored(UsageLine, by_col) == _stored(UsageLine, by_row)

    def attributed(account):
        return sorted(
            LineSignature.objects.filter(account=account).values_list(
                "api_key_ref", "user_ref", "model", "tag_set_id", "workload_id", "team_id"
            )
        )

    signatures = attributed(by_col)
    assert len(signatures) > 2000 and signatures == attributed(by_row)
    assert {workload for *_, workload, _ in signatures} == {first.id, second.id, third.id, None}


def test_litellms_own_export_is_stored_alike_by_columns_and_by_rows_and_no_unpriced_line_is_a_zero(db):
    """The fixture in LiteLLM's spend-log layout (tests/fixtures/gateway_log, its columns as the proxy writes them),
    not the team's generator: both writers store the same lines and rollups, and a line without a known price has
    no cost (null), never $0."""
    data = (FIXTURES / "litellm_spend_logs.csv").read_bytes()
    groq = Provider.objects.get(slug="groq")
    by_col = Account.objects.create(name="litellm-columns", provider=groq, connector="gateway_log")
    by_row = Account.objects.create(name="litellm-rows", provider=groq, connector="gateway_log")
    run = usage_file_import(account=by_col, stream=io.BytesIO(data), file_name="litellm_spend_logs.csv")
    assert run.status == IngestRun.Status.SUCCEEDED, run.error
    run = usage_file_import(account=by_row, stream=io.BufferedReader(_OneWay(data)), file_name="litellm_spend_logs.csv")
    assert run.status == IngestRun.Status.SUCCEEDED, run.error
    lines = _stored(UsageLine, by_col)
    assert lines and lines == _stored(UsageLine, by_row)
    assert all(line["cost"] is None or line["cost"] > 0 or line["requests"] == 0 for line in lines)
    for rollup in (DailySpend, MonthlySpend, DailyPerformance, MonthlyPerformance):
        assert _stored(rollup, by_col) == _stored(rollup, by_row), rollup.__name__


def test_the_column_writer_prices_discounts_and_converts_each_line_as_the_row_writer_does(db, tmp_path):
    """A gateway log's lines are estimated from list prices line by line: the column writer (a seekable upload on
    Postgres) finds each (provider, model, day)'s price once, and stores what the row writer stores — a price in
    force from a day on only (the lines before it unpriced, cost null), a price in euros converted at the day's
    rate, a contract's discount on the days of its term — in every line and rollup."""
    from finops.core.modelids import normalise_model
    from finops.models import Contract, FxRate, ModelPrice
    from finops.prices.selectors import Tokens, cost_from_price

    second_day = dt.date(2026, 3, 12)  # the log spans 23 days from 2 March
    moonshot, openai = Provider.objects.get(slug="moonshot"), Provider.objects.get(slug="openai")
    kimi = ModelPrice.objects.create(
        provider=moonshot,
        model=normalise_model("kimi-k2-0905-preview"),
        effective_from=second_day,
        currency="EUR",
        input_per_mtok=Decimal("0.55"),
        output_per_mtok=Decimal("2.21"),
        cached_input_per_mtok=Decimal("0.137"),
    )
    FxRate.objects.create(day=dt.date(2026, 3, 1), currency="EUR", rate=Decimal("1.0842"))
    Contract.objects.create(
        name="openai enterprise",
        provider=openai,
        start=second_day,
        end=dt.date(2027, 1, 1),
        commitment=Decimal("100000"),
        discount_pct=Decimal("12.5"),
    )
    path = tmp_path / "spend-logs.csv"
    write_spend_logs_csv(path, 3000, seed=19, shape="scattered")
    groq = Provider.objects.get(slug="groq")
    by_col = Account.objects.create(name="priced-columns", provider=groq, connector="gateway_log")
    by_row = Account.objects.create(name="priced-rows", provider=groq, connector="gateway_log")
    with path.open("rb") as stream:
        assert usage_file_import(account=by_col, stream=stream, file_name=path.name).status == "succeeded"
    run = usage_file_import(account=by_row, stream=io.BufferedReader(_OneWay(path.read_bytes())), file_name=path.name)
    assert run.status == IngestRun.Status.SUCCEEDED, run.error

    lines = _stored(UsageLine, by_col)
    assert lines == _stored(UsageLine, by_row)
    for rollup in (DailySpend, MonthlySpend, DailyPerformance, MonthlyPerformance):
        assert _stored(rollup, by_col) == _stored(rollup, by_row), rollup.__name__
    kinds = {(line["currency"], line["cost_basis"]) for line in lines}
    assert {("EUR", "estimated"), ("USD", "estimated"), ("USD", "unpriced")} <= kinds
    kimi_lines = [line for line in lines if line["model"] == kimi.model]
    assert {line["cost_basis"] for line in kimi_lines if line["period_start"].date() < second_day} == {"unpriced"}
    euro = next(line for line in kimi_lines if line["currency"] == "EUR" and line["cost"])
    assert euro["reporting_cost"] == (euro["cost"] * Decimal("1.0842")).quantize(euro["reporting_cost"])
    discounted = next(
        line for line in lines if line["provider_id"] == openai.id and line["period_start"].date() >= second_day
    )
    listed = cost_from_price(
        ModelPrice.objects.get(provider=openai, model=discounted["model"]),
        Tokens(
            *(discounted[k] for k in ("input_tokens", "cached_input_tokens", "cache_write_tokens", "output_tokens"))
        ),
    )
    assert discounted["cost"] == (listed * Decimal("0.875")).quantize(discounted["cost"])


@pytest.mark.slow  # left out of make test-fast (tests/conftest.py says why)
def test_a_log_of_more_signatures_than_the_writer_caches_stores_each_once_and_the_same_lines(db, tmp_path, monkeypatch):
    """A log whose keys, users and teams do not come together has a signature per line, far more than the row
    writer's key cache holds: a line of a signature seen again after it left the cache points at the signature
    already stored, which is staged for storing once (not attributed and stored again), and the lines are those of
    an import with room for every key — also when the memory of what was handed over is itself emptied. The row
    writer is what a log read record by record goes through (an upload that cannot be read twice, a JSON log); the
    column writer, which asks for each distinct signature once, stages each once however small the caches."""
    from ingest import columnar_gateway, keys, preparing, writing

    path = tmp_path / "scattered.csv"
    write_spend_logs_csv(path, 3000, seed=11, shape="scattered")
    groq = Provider.objects.get(slug="groq")
    roomy = Account.objects.create(name="roomy", provider=groq, connector="gateway_log")
    with path.open("rb") as stream:
        assert usage_file_import(account=roomy, stream=stream, file_name=path.name).status == IngestRun.Status.SUCCEEDED
    roomy_lines = _stored(UsageLine, roomy)  # what each cramped import must store: read once, not once an import
    staged: list[int] = []
    store = keys.signatures_store
    monkeypatch.setattr(
        keys,
        "signatures_store",
        lambda signatures: (staged.extend(keys.signature_ids_of(signatures)), store(signatures)),
    )
    monkeypatch.setattr(preparing.LinePreparer, "CACHE_LIMIT", 16)
    monkeypatch.setattr(preparing.LinePreparer, "KEYS_AT_ONCE", 8)
    monkeypatch.setattr(writing.CopyWriter, "CHUNK", 50)
    monkeypatch.setattr(columnar_gateway, "GATEWAY_CHUNK", 64)  # the column writer's COPYs, keys stored between them
    for taken_limit, by_columns in ((preparing.LinePreparer.TAKEN_LIMIT, False), (64, False), (64, True)):
        monkeypatch.setattr(preparing.LinePreparer, "TAKEN_LIMIT", taken_limit)
        staged.clear()
        cramped = Account.objects.create(
            name=f"cramped-{taken_limit}-{by_columns}", provider=groq, connector="gateway_log"
        )
        with path.open("rb") as stream:
            run = usage_file_import(
                account=cramped,
                stream=stream if by_columns else io.BufferedReader(_OneWay(stream.read())),
                file_name=path.name,
            )
        assert run.status == IngestRun.Status.SUCCEEDED, run.error
        lines = _stored(UsageLine, cramped)
        assert len(lines) > 2000 and lines == roomy_lines
        used = set(UsageLine.objects.filter(account=cramped).values_list("signature_id", flat=True))
        assert set(LineSignature.objects.filter(account=cramped).values_list("id", flat=True)) == used
        if taken_limit > len(used) or by_columns:
            assert sorted(staged) == sorted(used)  # each once
        else:
            assert set(staged) == used and len(staged) > len(used)  # forgotten ones staged again, harmlessly
    for rollup in (DailySpend, DailyPerformance):
        assert _stored(rollup, cramped) == _stored(rollup, roomy), rollup.__name__


@pytest.mark.parametrize("shape", ["scattered", "proxy", "busy-day"])
def test_the_identity_cells_read_apart_or_with_the_rest_make_the_same_groups(tmp_path, shape):
    """Who sent a request (key, user, team and their metadata fallbacks) is read apart from the rest of a record
    (numbered in numpy, paired per distinct pair), each part of it apart from the others (IDENTITY_PARTS); read
    whole, or with the rest by _litellm_request alone, the hourly groups are the same, key for key, count for count
    and distribution for distribution."""
    from ingest.connectors.gateway.columns import column_groups
    from ingest.connectors.gateway.log import IDENTIFY, IDENTITY_CELLS, IDENTITY_METADATA, _litellm_request

    path = tmp_path / "log.csv"
    write_spend_logs_csv(path, 3000, seed=5, shape=shape, varied=shape == "busy-day")
    read = {}
    for apart, identify in (("no", None), ("whole", IDENTIFY[:3]), ("parts", IDENTIFY)):
        with path.open("rb") as stream:
            read[apart] = sorted(
                column_groups(stream, file_name=path.name, interpret=_litellm_request, identify=identify),
                key=lambda group: group[0],
            )
    assert IDENTIFY[1:3] == (IDENTITY_CELLS, IDENTITY_METADATA)
    assert len(read["parts"]) > 1000 and read["parts"] == read["whole"] == read["no"]


def test_the_identity_parts_put_together_are_litellm_identitys_whole_answer():
    """IDENTITY_PARTS says which cells each part of litellm_identity's answer is read from: read from its own cells
    alone (every other identity cell empty), each part gives what the whole answer says of it, for every
    combination of cells — empty, blank, padded, a raw key, metadata fallbacks — and no two parts say one thing."""
    import itertools

    from ingest.connectors.gateway.log import IDENTITY_CELLS, IDENTITY_METADATA, IDENTITY_PARTS, litellm_identity

    choices = {
        "api_key": ("", " ", "k1", " k1 ", "sk-raw"),
        "user": ("", "u1", " u1"),
        "team_id": ("", "t1", " "),
        "user_api_key_hash": (None, "", "h1"),
        "user_api_key_user_id": (None, "u-meta"),
        "user_api_key_team_id": (None, "t-meta", " "),
        "user_api_key_alias": (None, "a1", ""),
    }
    assert set(choices) == {*IDENTITY_CELLS, *IDENTITY_METADATA} == {c for _, cells in IDENTITY_PARTS for c in cells}

    def answer(cells: dict) -> tuple:
        metadata = {name: cells[name] for name in IDENTITY_METADATA if cells.get(name) is not None}
        return litellm_identity(*(cells.get(name, "") for name in IDENTITY_CELLS), metadata)

    for combination in itertools.product(*choices.values()):
        cells = dict(zip(choices, combination))
        api_key, user, tags = answer(cells)
        pieces = {"api_key": "", "user": "", "tags": {}}
        for name, part in IDENTITY_PARTS:
            key_of, user_of, tags_of = answer({c: cells[c] for c in part})
            said = {"api_key"} if key_of else set()
            said |= ({"user"} if user_of else set()) | set(tags_of)
            assert said <= {name}, (name, cells)  # its own answer, or nothing
            pieces["api_key"] += key_of
            pieces["user"] += user_of
            pieces["tags"].update(tags_of)
        assert (pieces["api_key"], pieces["user"], pieces["tags"]) == (api_key, user, tags), cells


def test_combinations_whose_mixes_meet_are_read_by_the_row_reader(monkeypatch, tmp_path):
    """The column reader finds a combination of key, user, tags by a 64-bit mix of their numbers; two different ones
    of one mix would be one combination, so meeting them declines the file, whose lines the row reader then reads:
    the same lines."""
    from ingest.connectors.gateway import combinations

    path = tmp_path / "log.csv"
    write_spend_logs_csv(path, 500, seed=5, shape="scattered")
    data = path.read_bytes()
    expected = by_rows(data)
    monkeypatch.setattr(combinations, "_mix", lambda rows: np.zeros(len(rows), dtype=np.int64))
    with pytest.raises(BatchDeclined, match="share a mix"):
        by_columns(data)
    assert len(expected) > 400 and list(GatewayLog().parse(io.BytesIO(data), file_name="log.csv")) == expected


@pytest.mark.slow  # left out of make test-fast (tests/conftest.py says why)
def test_the_demos_gateway_logs_read_alike(tmp_path_factory):
    """The demo's LiteLLM exports (Groq, Cerebras, Moonshot) load through the column reader, as a customer's do."""
    import yaml

    from demo.generate import EXPORTS, render_config
    from demo.spend_logs import SpendLogs
    from tests.demo_helpers import TODAY, demo_files

    # The accounts whose export is a spend log, in the run's demo files (tests/demo_helpers.py: generated once a run).
    gateway = {
        a["name"]
        for a in yaml.safe_load(render_config(TODAY))["accounts"]
        if issubclass(EXPORTS[a["connector"]], SpendLogs)
    }
    logs = [
        path
        for paths in demo_files(tmp_path_factory, gateway).values()
        for path in paths
        if path.name.endswith("spend-logs.csv")
    ]
    assert len(logs) == 3
    for path in logs:
        assert same_lines(path.read_bytes(), path.name)


def test_who_sent_a_request_reads_alike_when_its_cells_and_metadata_vary_apart_from_the_rest():
    """The column reader reads the key, user and team cells (and their metadata fallbacks) apart from the rest of a
    record: a team_id or key_alias request tag is overridden by the record's own, a missing cell falls back to
    LiteLLM's metadata, a raw key is hashed, whatever the combination."""
    rng = random.Random(23)
    keys = ("", "k1", "k2", "sk-raw-one")
    metas = (
        "",
        '{"user_api_key_hash": "h-meta", "user_api_key_user_id": "u-meta"}',
        '{"user_api_key_team_id": "t-meta", "user_api_key_alias": "alias-meta"}',
        '{"user_api_key_alias": "alias-meta", "user_api_key_team_alias": "team-alias"}',
    )
    tags = ("", '["team_id:t-tag", "key_alias:alias-tag"]', '["prod"]')
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(HEADER.split(","))
    for n in range(400):
        start = dt.datetime(2026, 3, 2, 10, tzinfo=dt.UTC) + dt.timedelta(seconds=n * 17)
        writer.writerow(
            [
                n,
                start.strftime("%Y-%m-%d %H:%M:%S.000"),
                (start + dt.timedelta(seconds=1)).strftime("%Y-%m-%d %H:%M:%S.000"),
                "",
                rng.choice(("gpt-4o", "claude")),
                rng.choice(("openai", "anthropic")),
                100,
                5,
                "0.1",
                rng.choice(keys),
                rng.choice(("", "t-cell")),
                rng.choice(("", "u-cell")),
                rng.choice(metas),
                rng.choice(tags),
                rng.choice(("success", "failure")),
            ]
        )
    lines = same_lines(out.getvalue().encode())
    assert sum(line.requests for line in lines) == 400
    teams = {line.tags.get("team_id") for line in lines}
    assert {"t-cell", "t-meta", "t-tag", None} <= teams  # the cell over metadata over a request tag; or none
    assert {line.tags.get("key_alias") for line in lines} >= {"alias-meta", "alias-tag"}
    assert {line.api_key_ref for line in lines} >= {"k1", "h-meta", "", hashlib.sha256(b"sk-raw-one").hexdigest()}
    assert "sk-raw-one" not in {line.api_key_ref for line in lines}
    assert {line.user_ref for line in lines} >= {"u-cell", "u-meta", ""}
