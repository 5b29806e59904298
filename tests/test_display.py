"""How figures read: exact where finance reads, compact where people glance, never $0 for unknown."""

import datetime as dt
from decimal import Decimal

import pytest

from finops.core import display
from finops.core.reporting_period import PeriodError, choices, resolve


@pytest.mark.parametrize(
    "value, exact, compact",
    [
        (Decimal("1043.123"), "$1,043.12", "$1.0k"),
        (Decimal("1234567.891"), "$1,234,567.89", "$1.2M"),
        (Decimal("0.004"), "<$0.01", "<$0.01"),
        (Decimal("-250"), "-$250.00", "-$250.00"),
        (Decimal("0"), "$0.00", "$0.00"),
        (None, "—", "—"),
    ],
)
def test_money_is_exact_in_tables_and_compact_on_cards(value, exact, compact):
    assert display.money_exact(value) == exact
    assert display.money_compact(value) == compact


def test_money_uses_the_reporting_currency_symbol(settings):
    settings.FINOPS_REPORTING_CURRENCY = "EUR"
    assert display.money_exact(Decimal("12.5")) == "€12.50" and display.per_mtok(Decimal("1.25")) == "€1.250/M"
    settings.FINOPS_REPORTING_CURRENCY = "CHF"
    assert display.money_exact(Decimal("12.5")) == "CHF 12.50"


def test_counts_have_thousands_separators_and_one_letter_for_billions():
    assert display.count(1403) == "1,403"
    assert display.tokens_compact(3_400_000_000) == "3.4B"
    assert display.tokens_compact(340_000_000) == "340.0M"
    assert display.tokens_compact(999) == "999"


def test_unknown_request_counts_read_as_a_dash_not_zero():
    assert display.requests(0) == "—" and display.requests(None) == "—" and display.requests(12345) == "12,345"


def test_a_variance_of_zero_reads_without_a_sign():
    assert display.percent_change(Decimal("-0.00001")) == "0.0 %"
    assert display.percent_change(Decimal("0")) == "0.0 %"
    assert display.percent_change(Decimal("0.125")) == "+12.5 %"
    assert display.percent_change(Decimal("-0.03")) == "-3.0 %"


def test_list_prices_show_two_decimals_and_more_only_where_the_price_has_them():
    assert [display.price(Decimal(v)) for v in ("15", "0.3", "0.075", "1.25", "0.00015")] == [
        "$15.00",
        "$0.30",
        "$0.075",
        "$1.25",
        "$0.0002",
    ]


@pytest.mark.parametrize(
    "value, text",
    [
        (dt.timedelta(microseconds=44273), "44 ms"),
        (dt.timedelta(seconds=1.234), "1.2 s"),
        (dt.timedelta(seconds=42), "42 s"),
        (4, "4 s"),
        (dt.timedelta(seconds=123), "2 min 3 s"),
        (dt.timedelta(minutes=65), "1 h 5 min"),
        (None, "—"),
    ],
)
def test_durations_read_as_people_say_them(value, text):
    assert display.duration(value) == text


def test_csv_decimals_are_plain_and_rounded_to_what_providers_bill():
    assert display.csv_decimal(Decimal("210.000000000000000000")) == "210.00"
    assert display.csv_decimal(Decimal("0.1234567891234")) == "0.123457"
    assert display.csv_decimal(Decimal("1E+3")) == "1000.00"
    assert display.csv_decimal(None) == ""


@pytest.mark.parametrize(
    "model_id, name",
    [
        ("claude-sonnet-4-5", "Claude Sonnet 4.5"),
        ("gpt-5-mini", "GPT-5 mini"),
        ("openai/gpt-oss-120b", "GPT OSS 120B"),
        ("kimi-k2.6", "Kimi K2.6"),
        ("llama-3.3-70b", "Llama 3.3 70B"),
        ("", "(no model: taxes, credits, fees)"),
    ],
)
def test_models_show_display_names(model_id, name):
    assert display.model_name(model_id) == name


def test_periods_are_half_open_utc_days_with_a_comparison():
    today = dt.date(2026, 11, 24)
    last = resolve("last-month", today=today)
    assert (last.start, last.end, last.label) == (dt.date(2026, 10, 1), dt.date(2026, 11, 1), "October 2026")
    assert (last.compare.start, last.compare.end) == (dt.date(2026, 9, 1), dt.date(2026, 10, 1))
    mtd = resolve("mtd", today=today)
    assert (mtd.start, mtd.end, mtd.compare.start, mtd.compare.end) == (
        dt.date(2026, 11, 1),
        today,
        dt.date(2026, 10, 1),
        dt.date(2026, 10, 24),
    )
    q = resolve("2026-Q1", today=today)
    assert (q.start, q.end, q.compare.start, q.compare.end) == (
        dt.date(2026, 1, 1),
        dt.date(2026, 4, 1),
        dt.date(2025, 10, 1),
        dt.date(2026, 1, 1),
    )
    custom = resolve(None, today=today, start=dt.date(2026, 10, 10), end=dt.date(2026, 10, 20))
    assert custom.key == "custom" and custom.compare.span() == (dt.date(2026, 9, 30), dt.date(2026, 10, 10))
    assert resolve(None, today=today).span() == (dt.date(2026, 10, 25), today)
    for bad in ("2026-13", "2026-Q5", "yesterday"):
        with pytest.raises(PeriodError):
            resolve(bad, today=today)
    with pytest.raises(PeriodError, match="after the start"):
        resolve("custom", today=today, start=today, end=today)
    keys = [key for key, _ in choices(today)]
    assert keys[:4] == ["last-30", "mtd", "last-month", "2026-11"] and "2026-Q4" in keys and keys[-1] == "custom"


def test_days_and_times_read_as_people_write_them_in_utc():
    assert display.day(dt.date(2026, 11, 3)) == "3 November 2026" and display.day("2027-03-02") == "2 March 2027"
    moment = dt.datetime(2026, 11, 26, 14, 5, 12, 345678, tzinfo=dt.UTC)
    assert display.utc_time(moment) == "26 November 2026, 14:05 UTC"
    # Another zone is shown in UTC; the ISO text an event's details keep reads the same.
    assert display.utc_time(moment.astimezone(dt.timezone(dt.timedelta(hours=-5)))) == "26 November 2026, 14:05 UTC"
    assert display.utc_time(moment.isoformat()) == "26 November 2026, 14:05 UTC"
    assert display.day(None) == display.utc_time("") == display.DASH
    assert [display.days_count(n) for n in (0, 1, 98, 1200)] == ["today", "1 day", "98 days", "1,200 days"]
