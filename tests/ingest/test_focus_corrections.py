"""Refunds, credits, adjustments and corrections in FOCUS files (issue 21): they import, net as FOCUS defines, and a
correction of an earlier month lands in the month it corrects (its ChargePeriod) while it belongs to the billing
period it is invoiced in (re-importing either month leaves the other's lines as they were)."""

import datetime as dt
import io
from decimal import Decimal

import pytest
from django.db.models import Sum

from finops.models import Account, DailySpend, Provider, UsageLine
from ingest.services import usage_file_import
from tests.rollup_check import assert_rollup_equals_raw

from .focus_file_helpers import focus_csv, parse_bytes

MARCH = {"BillingPeriodStart": "2026-03-01T00:00:00Z", "BillingPeriodEnd": "2026-04-01T00:00:00Z"}
APRIL = {"BillingPeriodStart": "2026-04-01T00:00:00Z", "BillingPeriodEnd": "2026-05-01T00:00:00Z"}
MARCH_14 = {"ChargePeriodStart": "2026-03-14T00:00:00Z", "ChargePeriodEnd": "2026-03-15T00:00:00Z"}
APRIL_2 = {"ChargePeriodStart": "2026-04-02T00:00:00Z", "ChargePeriodEnd": "2026-04-03T00:00:00Z"}

MARCH_FILE = focus_csv(
    {**MARCH, **MARCH_14, "BilledCost": "2.50", "ConsumedQuantity": "1000000", "SkuMeter": "gpt-4o Input Tokens"},
    {**MARCH, **MARCH_14, "BilledCost": "4.00", "ConsumedQuantity": "400000", "SkuMeter": "gpt-4o Output Tokens"},
)
APRIL_ROWS = (
    {**APRIL, **APRIL_2, "BilledCost": "1.25", "ConsumedQuantity": "500000", "SkuMeter": "gpt-4o Input Tokens"},
    # A refund of part of March's input, invoiced in April: negative quantity and cost, ChargeClass Correction.
    {
        **APRIL,
        **MARCH_14,
        "ChargeClass": "Correction",
        "BilledCost": "-0.50",
        "ConsumedQuantity": "-200000",
        "SkuMeter": "gpt-4o Input Tokens",
    },
    # A credit and an upward adjustment of April, with no quantity.
    {
        **APRIL,
        **APRIL_2,
        "ChargeCategory": "Credit",
        "BilledCost": "-1.00",
        "ConsumedQuantity": "",
        "ConsumedUnit": "",
        "SkuMeter": "",
        "ChargeDescription": "Promotional credit",
    },
    {
        **APRIL,
        **APRIL_2,
        "ChargeCategory": "Adjustment",
        "BilledCost": "0.30",
        "ConsumedQuantity": "",
        "ConsumedUnit": "",
        "SkuMeter": "",
        "ChargeDescription": "Rounding adjustment",
    },
)
APRIL_FILE = focus_csv(*APRIL_ROWS)


@pytest.fixture
def account(db):
    return Account.objects.create(
        name="openai focus", provider=Provider.objects.get(slug="openai"), connector="focus_file"
    )


def load(account, data: bytes, name: str):
    run = usage_file_import(account=account, stream=io.BytesIO(data), file_name=name)
    assert run.status == "succeeded", run.error
    return run


def month(account, start: dt.date, end: dt.date) -> dict:
    start, end = (dt.datetime.combine(day, dt.time(), tzinfo=dt.UTC) for day in (start, end))
    lines = UsageLine.objects.filter(account=account, period_start__gte=start, period_start__lt=end)
    return lines.aggregate(cost=Sum("cost"), input=Sum("input_tokens"), output=Sum("output_tokens"))


def test_a_refund_with_a_negative_quantity_is_read_as_a_negative_count():
    refund = parse_bytes(APRIL_FILE, "april.csv")[1]
    assert (refund.input_tokens, refund.cost, refund.tags["charge_class"]) == (-200_000, Decimal("-0.50"), "correction")
    assert (refund.period_start, refund.billing_period_start) == (
        dt.datetime(2026, 3, 14, tzinfo=dt.UTC),
        dt.datetime(2026, 4, 1, tzinfo=dt.UTC),
    )


@pytest.mark.parametrize("order", ["march first", "april first"])
def test_a_correction_of_last_month_nets_in_the_month_it_corrects(account, order):
    files = [(MARCH_FILE, "march.csv"), (APRIL_FILE, "april.csv")]
    for data, name in files if order == "march first" else files[::-1]:
        load(account, data, name)

    march = month(account, dt.date(2026, 3, 1), dt.date(2026, 4, 1))
    april = month(account, dt.date(2026, 4, 1), dt.date(2026, 5, 1))
    assert march == {"cost": Decimal("6.00"), "input": 800_000, "output": 400_000}  # 2.50 + 4.00 - 0.50
    assert april == {"cost": Decimal("0.55"), "input": 500_000, "output": 0}  # 1.25 - 1.00 + 0.30
    categories = dict(
        UsageLine.objects.filter(account=account, period_start__gte=dt.datetime(2026, 4, 1, tzinfo=dt.UTC))
        .values_list("charge_category")
        .annotate(Sum("cost"))
    )
    assert categories == {"usage": Decimal("1.25"), "credit": Decimal("-1.00"), "adjustment": Decimal("0.30")}
    rollup = DailySpend.objects.filter(account=account, day=dt.date(2026, 3, 14)).aggregate(
        cost=Sum("cost"), input=Sum("input_tokens")
    )
    assert rollup == {"cost": Decimal("6.00"), "input": 800_000}


def test_restating_either_month_keeps_the_other_months_lines(account):
    load(account, MARCH_FILE, "march.csv")
    load(account, APRIL_FILE, "april.csv")

    again = load(account, MARCH_FILE, "march.csv")  # March restated: April's correction of March stays
    assert again.lines_replaced == 2
    assert month(account, dt.date(2026, 3, 1), dt.date(2026, 4, 1))["cost"] == Decimal("6.00")

    again = load(account, APRIL_FILE, "april.csv")  # April restated: its correction replaced, not doubled
    assert again.lines_replaced == 4
    assert month(account, dt.date(2026, 3, 1), dt.date(2026, 4, 1))["cost"] == Decimal("6.00")
    assert UsageLine.objects.filter(account=account).count() == 6


def test_a_file_whose_later_rows_name_another_billing_period_replaces_both_months(account, monkeypatch, caplog):
    """The column reader deletes what a file replaces before its first COPY, as its first batch shows it (the billing
    periods that batch names); a period only later rows name is replaced after the COPY. Small blocks and batches
    here, so April's rows come batches after March's: the lines of both months are replaced, once."""
    from ingest.connectors.focus import batches

    monkeypatch.setattr(batches, "BLOCK_BYTES", 1 << 12)
    monkeypatch.setattr(batches, "BATCH_ROWS", 10)
    march = {**MARCH, **MARCH_14, "BilledCost": "0.25", "ConsumedQuantity": "1000", "SkuMeter": "gpt-4o Input Tokens"}
    both = focus_csv(*[march] * 40, *APRIL_ROWS)
    with io.BytesIO(both) as stream:
        first = next(batches.focus_csv_batches(stream, file_name="both.csv"))
    assert 10 <= len(first) < 40 and set(first.billing_period_start.to_pylist()) == {
        dt.datetime(2026, 3, 1, tzinfo=dt.UTC)
    }
    load(account, MARCH_FILE, "march.csv")
    load(account, APRIL_FILE, "april.csv")

    for replaced in (6, 44):  # the two files' lines; then this file's own, imported again
        with caplog.at_level("INFO", logger="ingest.services"):
            run = load(account, both, "both.csv")
        assert "row by row" not in caplog.text  # the column reader took it
        assert run.lines_written == 44 and run.lines_replaced == replaced
        assert UsageLine.objects.filter(account=account).count() == 44
        assert month(account, dt.date(2026, 3, 1), dt.date(2026, 4, 1))["cost"] == Decimal("9.50")  # 40 × 0.25 - 0.50
        assert month(account, dt.date(2026, 4, 1), dt.date(2026, 5, 1))["cost"] == Decimal("0.55")
        assert_rollup_equals_raw(account=account)


def test_a_file_the_column_reader_declines_batches_after_its_first_is_read_row_by_row_over_the_same_lines(
    account, monkeypatch, caplog
):
    """The column reader has deleted the month (before its first COPY) and stored a batch or two when a later batch
    holds a form only the row reader reads (a quantity with an exponent): the savepoint undoes all of it, and the row
    reader replaces the month as the column reader would have, the lines and the rollup those of the file alone."""
    from ingest.connectors.focus import batches

    monkeypatch.setattr(batches, "BLOCK_BYTES", 1 << 12)
    monkeypatch.setattr(batches, "BATCH_ROWS", 10)
    march = {**MARCH, **MARCH_14, "BilledCost": "0.25", "ConsumedQuantity": "1000", "SkuMeter": "gpt-4o Input Tokens"}
    late = {**march, "ConsumedQuantity": "1E3"}  # the same 1,000 tokens
    declined = focus_csv(*[march] * 39, late)
    load(account, MARCH_FILE, "march.csv")

    with caplog.at_level("INFO", logger="ingest.services"):
        run = load(account, declined, "declined.csv")
    assert "read row by row" in caplog.text and "quantity" in caplog.text
    assert run.lines_written == 40 and run.lines_replaced == 2
    assert UsageLine.objects.filter(account=account).count() == 40
    assert month(account, dt.date(2026, 3, 1), dt.date(2026, 4, 1)) == {
        "cost": Decimal("10.00"),
        "input": 40_000,
        "output": 0,
    }
    assert_rollup_equals_raw(account=account)
