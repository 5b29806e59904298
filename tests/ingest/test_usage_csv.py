"""The product's usage CSV (ingest/connectors/usage_csv/file.py) and the field parsers it shares (parsing.py).

Parsing is pure: no database. Amounts are exact Decimals, never floats; a line it cannot read stops
the file with an error that names the file and the line.
"""

import datetime as dt
import io
from decimal import Decimal
from pathlib import Path

import pytest

from ingest.connectors.base import ProviderError
from ingest.connectors.parsing import parse_count, parse_day, parse_decimal, parse_tags
from ingest.connectors.registry import file_source_for
from ingest.connectors.usage_csv.file import UsageCsv

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "usage_csv"
UTC = dt.UTC


def parse_file(name: str) -> list:
    with (FIXTURES / name).open("rb") as stream:
        return list(UsageCsv().parse(stream, file_name=name))


def parse_text(text: str, name: str = "inline.csv") -> list:
    return list(UsageCsv().parse(io.BytesIO(text.encode()), file_name=name))


def parse_error(name: str) -> str:
    with pytest.raises(ProviderError) as excinfo:
        parse_file(name)
    assert excinfo.value.permanent is True
    return str(excinfo.value)


# --- the field parsers ---


@pytest.mark.parametrize(
    "text, expected",
    [
        ("0.000004500000000000000000000000000000000", Decimal("0.000004500000000000000000000000000000000")),
        ("0E-6176", Decimal("0E-6176")),
        ("12", Decimal("12")),
        ("-3.5", Decimal("-3.5")),
        (" 0.1 ", Decimal("0.1")),
    ],
)
def test_decimals_are_parsed_exactly_never_through_a_float(text, expected):
    value = parse_decimal(text)

    assert isinstance(value, Decimal)
    assert value == expected
    assert value.as_tuple() == expected.as_tuple()


def test_a_long_decimal_keeps_every_digit():
    long = "0.000004500000000000000000000000000000000"
    assert str(parse_decimal(long)) == long
    assert parse_decimal("0.1") + parse_decimal("0.2") == Decimal("0.3")


@pytest.mark.parametrize("text", ["abc", "1,5", "$3", "NaN", "Infinity", "-inf", ""])
def test_a_cost_that_is_not_a_finite_number_is_refused(text):
    with pytest.raises(ValueError, match="number"):
        parse_decimal(text)


def test_counts_are_whole_non_negative_numbers_and_blank_is_zero():
    assert parse_count("1200", "input_tokens") == 1200
    assert parse_count(" ", "input_tokens") == 0
    with pytest.raises(ValueError, match="output_tokens is negative"):
        parse_count("-5", "output_tokens")
    with pytest.raises(ValueError, match="requests '2.5' is not a whole number"):
        parse_count("2.5", "requests")


def test_days_are_iso_dates():
    assert parse_day("2025-01-14") == dt.date(2025, 1, 14)
    with pytest.raises(ValueError, match="YYYY-MM-DD"):
        parse_day("14/01/2025")


def test_tags_are_read_as_json_or_as_key_value_pairs():
    assert parse_tags('{"team": "support", "tier": 2}') == {"team": "support", "tier": "2"}
    assert parse_tags("team=search; env = prod ;") == {"team": "search", "env": "prod"}
    assert parse_tags("") == {}
    with pytest.raises(ValueError, match="not key=value"):
        parse_tags("team=search;oops")


def test_tags_that_are_broken_json_are_refused():
    with pytest.raises(ValueError, match="not valid JSON"):
        parse_tags('{"team": "support"')


# --- a whole file ---


def test_the_usage_csv_is_the_file_source_of_its_connector_kind():
    assert isinstance(file_source_for("usage_csv"), UsageCsv)
    with pytest.raises(LookupError, match="does not read files"):
        file_source_for("openai_api")


def test_each_row_becomes_one_utc_day_with_disjoint_token_classes():
    rows = parse_file("openai_daily.csv")

    assert len(rows) == 4
    first = rows[0]
    assert (first.period_start, first.period_end) == (
        dt.datetime(2025, 1, 14, tzinfo=UTC),
        dt.datetime(2025, 1, 15, tzinfo=UTC),
    )
    assert first.provider_slug == "openai"
    assert first.model_raw == "gpt-4o-2024-08-06"
    # input_tokens in the file counts all input; the row keeps uncached input only.
    assert (first.input_tokens, first.cached_input_tokens, first.cache_write_tokens) == (1_000_000, 200_000, 0)
    assert (first.output_tokens, first.requests) == (300_000, 420)
    assert first.cost == Decimal("5.5") and first.currency == "USD"
    assert (first.project_ref, first.api_key_ref) == ("proj_support", "key_support_bot")
    assert first.source_ref == "openai_daily.csv line 2"


def test_tags_in_a_file_may_be_json_or_key_value_pairs():
    rows = parse_file("openai_daily.csv")

    assert rows[0].tags == {"team": "support", "env": "prod"}
    assert rows[1].tags == {"team": "search", "env": "prod"}


def test_exact_decimal_costs_survive_a_file():
    costs = [row.cost for row in parse_file("exact_decimals.csv")]

    assert [str(c) for c in costs] == ["0.000004500000000000000000000000000000000", "0E-6176", "12"]


def test_a_byte_order_mark_reordered_and_unknown_columns_are_read():
    rows = parse_file("bom_extra_columns.csv")

    assert [(r.model_raw, r.period_start.date(), r.input_tokens, r.output_tokens) for r in rows] == [
        ("gpt-4o-mini", dt.date(2025, 1, 14), 10000, 2000),
        ("gpt-4o-mini", dt.date(2025, 1, 15), 5000, 1000),
    ]
    assert rows[0].project_ref == "proj_eu"
    assert not any("region" in str(vars(r)) or "eu-west-1" in str(vars(r)) for r in rows)


def test_a_blank_cost_is_none_not_zero():
    rows = parse_file("bom_extra_columns.csv")

    assert rows[0].cost is None
    assert rows[1].cost == Decimal("0.00135")


def test_a_blank_provider_and_currency_mean_the_accounts_provider_and_usd():
    rows = parse_file("bom_extra_columns.csv")

    assert rows[0].provider_slug == "" and rows[0].currency == "USD"


def test_currency_and_provider_are_normalised_to_one_spelling():
    rows = parse_text("day,provider,model,input_tokens,output_tokens,cost,currency\n2025-01-14,Groq,x,1,1,1,eur\n")

    assert (rows[0].provider_slug, rows[0].currency) == ("groq", "EUR")


def test_a_header_only_file_has_no_rows():
    assert parse_text("day,model,input_tokens,output_tokens\n") == []


# --- errors name the file and the line ---


def test_a_negative_token_count_is_refused_naming_file_and_line():
    message = parse_error("negative_tokens.csv")

    assert message.startswith("negative_tokens.csv line 3: ")
    assert "output_tokens is negative (-5)" in message


def test_a_bad_date_is_refused_naming_file_and_line():
    message = parse_error("bad_date.csv")

    assert message.startswith("bad_date.csv line 3: ")
    assert "'14/01/2025'" in message


def test_missing_columns_are_listed():
    message = parse_error("missing_columns.csv")

    assert message.startswith("missing_columns.csv: ")
    assert "missing column(s) day, input_tokens" in message
    assert "output_tokens" not in message.split("missing column(s)")[1].split("(")[0]


def test_an_empty_file_is_not_a_usage_csv():
    with pytest.raises(ProviderError, match="empty.csv: not a usage CSV, missing column"):
        parse_text("", "empty.csv")


def test_cached_and_cache_write_tokens_cannot_exceed_all_input():
    message = parse_error("cache_exceeds_input.csv")

    assert message.startswith("cache_exceeds_input.csv line 4: ")
    assert "(1100) exceed input_tokens (1000)" in message


def test_a_cost_that_is_not_a_number_is_refused_naming_file_and_line():
    message = parse_error("bad_cost.csv")

    assert message.startswith("bad_cost.csv line 2: ")
    assert "'$0.0045' is not a number" in message


def test_a_row_with_more_fields_than_the_header_is_refused():
    message = parse_error("too_many_fields.csv")

    assert message.startswith("too_many_fields.csv line 3: ")
    assert "more fields than the header" in message


def test_a_row_without_a_model_is_refused():
    with pytest.raises(ProviderError, match=r"nomodel.csv line 3: model is empty"):
        parse_text("day,model,input_tokens,output_tokens\n2025-01-14,gpt-4o,1,1\n2025-01-14, ,1,1\n", "nomodel.csv")


def test_bad_tags_are_refused_naming_file_and_line():
    with pytest.raises(ProviderError, match=r"tags.csv line 2: tag 'oops' is not key=value"):
        parse_text("day,model,input_tokens,output_tokens,tags\n2025-01-14,gpt-4o,1,1,oops\n", "tags.csv")


def test_a_day_at_the_end_of_the_calendar_is_refused_naming_file_and_line():
    with pytest.raises(ProviderError, match=r"end.csv line 2: "):
        parse_text("day,model,input_tokens,output_tokens\n9999-12-31,gpt-4o,1,1\n", "end.csv")
