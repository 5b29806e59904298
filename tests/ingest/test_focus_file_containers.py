"""FOCUS exports in their containers (gzip, Parquet), errors that name the file and the line, and flat memory
(ingest/connectors/focus/file.py). The formats themselves: test_focus_file.py."""

import datetime as dt
import gzip
import inspect
import io
import tracemalloc
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq
import pytest

from ingest.connectors.base import ProviderError
from ingest.connectors.focus.file import FocusFile

from .focus_file_helpers import (
    FIXTURES,
    UTC,
    fixture_error,
    focus_csv,
    parse_bytes,
    parse_error,
    parse_file,
    without_source,
)

# --- containers ---


def test_a_gzipped_csv_is_detected_by_its_magic_bytes_whatever_its_name():
    plain = parse_file("aws_bedrock_focus_1_0.csv")
    data = gzip.compress((FIXTURES / "aws_bedrock_focus_1_0.csv").read_bytes())

    for name in ("export.csv.gz", "export.csv"):
        rows = parse_bytes(data, name)
        assert [without_source(r) for r in rows] == [without_source(r) for r in plain]
    assert rows[1].source_ref == "export.csv line 3"


def test_a_parquet_file_converted_from_the_csv_reads_the_same_rows(tmp_path):
    for name in ("aws_bedrock_focus_1_0.csv", "azure_openai_focus_1_2.csv", "gcp_vertex_focus_1_3.csv"):
        table = pa_csv.read_csv(FIXTURES / name)
        path = tmp_path / name.replace(".csv", ".parquet")
        pq.write_table(table, path)
        with path.open("rb") as stream:
            rows = list(FocusFile().parse(stream, file_name=path.name))

        assert [without_source(r) for r in rows] == [without_source(r) for r in parse_file(name)]
        assert rows[0].source_ref == f"{path.name} row 1"
    assert pa.types.is_floating(table.schema.field("BilledCost").type)  # doubles, read back exactly


def test_a_parquet_export_with_map_tags_timestamps_and_decimal_costs_is_read(tmp_path):
    utc_ms = pa.timestamp("ms", tz="UTC")
    table = pa.table(
        {
            "BilledCost": pa.array([Decimal("0.057189"), Decimal("-1.5")], pa.decimal128(20, 9)),
            "BillingCurrency": ["USD", "USD"],
            "ChargeCategory": ["Usage", "Credit"],
            "ChargePeriodStart": pa.array([dt.datetime(2026, 3, 14, tzinfo=UTC)] * 2, utc_ms),
            "ChargePeriodEnd": pa.array([dt.datetime(2026, 3, 15, tzinfo=UTC)] * 2, utc_ms),
            "BillingPeriodStart": pa.array([dt.datetime(2026, 3, 1)] * 2, pa.timestamp("ms")),  # naive = UTC
            "ConsumedQuantity": pa.array([17.33, None]),
            "ConsumedUnit": ["1K tokens", None],
            "ProviderName": ["AWS", "AWS"],
            "ServiceName": ["Amazon Bedrock", "Amazon Bedrock"],
            "x_UsageType": ["USW2-Claude4.6Sonnet-input-tokens", None],
            "Tags": pa.array([[("user_team", "search")], []], pa.map_(pa.string(), pa.string())),
        }
    )
    path = tmp_path / "focus_1_2_aws.parquet"
    pq.write_table(table, path)

    with path.open("rb") as stream:
        usage, credit = FocusFile().parse(stream, file_name=path.name)

    assert usage.cost == Decimal("0.057189") and credit.cost == Decimal("-1.5")
    assert (usage.input_tokens, usage.model_raw, usage.provider_slug) == (17_330, "claude-sonnet-4-6", "aws-bedrock")
    assert usage.tags["user_team"] == "search"
    assert usage.billing_period_start == dt.datetime(2026, 3, 1, tzinfo=UTC)
    assert credit.charge_category == "credit"


def test_parquet_is_read_from_a_stream_that_cannot_seek():
    buffer = io.BytesIO()
    pq.write_table(pa_csv.read_csv(FIXTURES / "per_token_api_focus_1_3.csv"), buffer)

    class Pipe(io.RawIOBase):  # like a socket or a streamed upload
        def __init__(self, data):
            self._data = io.BytesIO(data)

        def readable(self):
            return True

        def readinto(self, b):
            return self._data.readinto(b)

    rows = list(FocusFile().parse(Pipe(buffer.getvalue()), file_name="piped.parquet"))

    assert [r.cost for r in rows] == [Decimal("42.0"), Decimal("12.5"), Decimal("0.5"), Decimal("1.25"), Decimal("0.1")]


def test_a_bad_parquet_row_is_named_by_its_row_number(tmp_path):
    table = pa_csv.read_csv(io.BytesIO(focus_csv({}, {"ChargeCategory": "Refund"})))
    path = tmp_path / "bad.parquet"
    pq.write_table(table, path)

    with pytest.raises(ProviderError, match=r"^bad\.parquet row 2: ChargeCategory 'Refund' is not one of"):
        with path.open("rb") as stream:
            list(FocusFile().parse(stream, file_name="bad.parquet"))


def test_parsing_is_lazy_rows_come_from_a_generator():
    stream = (FIXTURES / "aws_bedrock_focus_1_0.csv").open("rb")
    with stream:
        rows = FocusFile().parse(stream, file_name="aws.csv")
        assert inspect.isgenerator(rows)
        assert next(rows).model_raw == "claude-sonnet-4-6"


# --- errors name the file and the line ---


def test_missing_required_columns_are_listed():
    message = fixture_error("missing_columns.csv")

    assert message == (
        "missing_columns.csv: not a FOCUS Cost-and-Usage export, missing column(s) BilledCost, ChargePeriodStart "
        "(a FOCUS file has at least BilledCost, BillingCurrency, ChargePeriodStart, ChargePeriodEnd, ChargeCategory)"
    )


def test_a_negative_token_count_is_a_refund_that_nets():
    """FOCUS allows any decimal ConsumedQuantity: a refund's negative count nets the usage it refunds."""
    rows = parse_file("negative_tokens.csv")
    assert [r.input_tokens + r.output_tokens for r in rows] == [50_000, -50_000]


def test_a_bad_date_names_the_file_line_and_column():
    assert fixture_error("bad_date.csv") == (
        "bad_date.csv line 3: ChargePeriodStart '14/03/2026' is not an ISO 8601 date-time (YYYY-MM-DDTHH:mm:ssZ)"
    )


@pytest.mark.parametrize(
    "overrides, problem",
    [
        (
            {"ChargeCategory": "Refund"},
            "ChargeCategory 'Refund' is not one of Usage, Purchase, Tax, Credit, Adjustment",
        ),
        ({"BilledCost": ""}, "BilledCost is empty"),
        ({"BilledCost": "$1.00"}, "'$1.00' is not a number"),
        ({"BillingCurrency": "US Dollar"}, "BillingCurrency 'US Dollar' is not an ISO 4217 code"),
        (
            {"ChargePeriodEnd": "2026-03-14T00:00:00Z"},
            "ChargePeriodEnd 2026-03-14T00:00:00Z is not after ChargePeriodStart",
        ),
        ({"Tags": "{not json"}, "Tags is not valid JSON"),
        ({"SkuMeter": "Mystery Tokens"}, "the quantity is in tokens but the token direction"),
    ],
)
def test_a_row_the_parser_cannot_trust_stops_the_file_with_its_line(overrides, problem):
    message = parse_error(focus_csv({}, overrides), "export.csv")

    assert message.startswith("export.csv line 3: ")
    assert problem in message


@pytest.mark.parametrize(
    "data, problem",
    [
        (b"", "empty.csv: the file is empty"),
        (b"PK\x03\x04rest-of-a-zip", "empty.csv: a ZIP archive"),
        (gzip.compress(focus_csv({}), mtime=0)[:40], "empty.csv: the gzip data is damaged or truncated"),
        (b"PAR1 not really parquet", "empty.csv: not a readable Parquet file"),
        (b"BilledCost,ChargePeriodStart\n\xff\xfe,2026\n", "empty.csv: not UTF-8 text"),
    ],
)
def test_a_file_that_is_not_a_focus_export_is_refused_with_a_clear_message(data, problem):
    assert parse_error(data, "empty.csv").startswith(problem)


# --- memory stays flat ---


def _write_focus_csv(path: Path, rows: int) -> None:
    line = (
        "0.0000045,USD,2026-03-01T00:00:00Z,2026-04-01T00:00:00Z,Usage,2026-03-{day:02d}T00:00:00Z,"
        "2026-03-{next:02d}T00:00:00Z,{quantity},1K tokens,AWS,Amazon Bedrock,USW2-Claude4.6Sonnet-input-tokens,"
        '"{{""team"":""t{team}""}}"\n'
    )
    with path.open("w") as f:
        f.write(
            "BilledCost,BillingCurrency,BillingPeriodStart,BillingPeriodEnd,ChargeCategory,ChargePeriodStart,"
            "ChargePeriodEnd,ConsumedQuantity,ConsumedUnit,ProviderName,ServiceName,x_UsageType,Tags\n"
        )
        for n in range(rows):
            day = n % 28 + 1
            f.write(line.format(day=day, next=day + 1, quantity=n % 997, team=n % 13))


def _peak_while_parsing(path: Path) -> tuple[int, int]:
    tracemalloc.start()
    try:
        tokens = count = 0
        with path.open("rb") as stream:
            for row in FocusFile().parse(stream, file_name=path.name):
                tokens += row.input_tokens
                count += 1
        return count, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_parsing_an_export_four_times_larger_keeps_the_same_peak_memory(tmp_path):
    # 5k and 20k rows: the reader's peak is a few hundred KB (a block of rows; 177 KB at 5k, 10k and 40k rows alike),
    # so keeping anything per row (a UsageRow and what it holds is ~740 bytes) would add ~11 MB between the two, 30
    # times the margin allowed. Larger files only made the test slower (tracemalloc costs ~0.2 ms a row): 50k and 200k
    # rows took 40-110 s, 10k and 40k ~11 s of CPU.
    warm_up, small, large = tmp_path / "1k.csv", tmp_path / "5k.csv", tmp_path / "20k.csv"
    _write_focus_csv(warm_up, 1_000)
    _write_focus_csv(small, 5_000)
    _write_focus_csv(large, 20_000)
    _peak_while_parsing(warm_up)  # one-time costs (regex compilation, bounded caches) stay out of the comparison

    small_rows, small_peak = _peak_while_parsing(small)
    large_rows, large_peak = _peak_while_parsing(large)

    assert (small_rows, large_rows) == (5_000, 20_000)
    # Four times the rows, (nearly) the same peak: nothing grows with the file.
    assert large_peak < small_peak * 1.5 + 256 * 1024, (small_peak, large_peak)
    assert large_peak < 8 * 1024 * 1024
