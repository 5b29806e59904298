"""The demo organisation's last full month exported as FOCUS 1.2 (issue 14: a test checks an export of the demo
against the FOCUS 1.2 column table, and the FinOps Foundation's focus-validator where its rules fit). The demo is
loaded once through its real import paths (tests/demo_helpers.py's TODAY) and rolled back after the module."""

import tracemalloc
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import transaction
from django.db.models import Sum

from finops.demo import load_demo
from finops.models import CostBasis, UsageLine
from finops.reports.usage_focus import write_focus_csv
from finops.selectors.spend_report import spend_rows
from finops.selectors.usage_focus import month_lines
from finops.months import month_of
from tests.conftest import reseed_reference_data
from tests.demo_helpers import LAST_DAY, TODAY
from tests.focus_helpers import VALIDATOR_RULES_IGNORED, money_sum, problems, read_csv, validator_failures

MONTH = month_of(LAST_DAY)  # the last full month before the demo's today


@pytest.fixture(scope="module")
def demo(django_db_setup, django_db_blocker, tmp_path_factory):
    target = tmp_path_factory.mktemp("focus") / f"demo-{MONTH:%Y-%m}.csv"
    with django_db_blocker.unblock(), transaction.atomic():
        reseed_reference_data()
        load_demo(today=TODAY)
        call_command("export_focus", "--month", f"{MONTH:%Y-%m}", "--output", str(target), stderr=StringIO())
        yield target
        transaction.set_rollback(True)


@pytest.fixture
def exported(demo, db):
    return demo


def test_the_demos_last_full_month_conforms_to_the_focus_1_2_column_table(exported):
    header, rows = read_csv(exported.read_text())
    assert MONTH.isoformat() == "2026-10-01" and len(rows) > 1000
    assert problems(header, rows) == []
    assert {row["x_CostBasis"] for row in rows} >= {"billed", "estimated", "unpriced"}
    assert {row["ProviderName"] for row in rows} >= {"OpenAI", "Anthropic", "Groq"}


def test_the_demo_exports_totals_are_the_spend_selectors_for_the_month(exported):
    _, rows = read_csv(exported.read_text())
    (spend,) = spend_rows(start=MONTH, end=TODAY, by="month")
    assert money_sum(rows, "x_ReportingBilledCost") == spend["billed_cost"]
    assert money_sum(rows, "x_ReportingEffectiveCost") == spend["cost"]
    # In each billing currency (Moonshot bills the demo in yuan), BilledCost and EffectiveCost are the lines' own.
    lines = UsageLine.objects.filter(period_start__date__gte=MONTH, period_start__date__lt=TODAY)
    currencies = set(lines.values_list("currency", flat=True))
    assert {row["BillingCurrency"] for row in rows} == currencies and len(currencies) > 1
    for currency in currencies:
        of_currency = lines.filter(currency=currency)
        billed = of_currency.filter(cost_basis=CostBasis.BILLED).aggregate(s=Sum("cost"))["s"] or 0
        priced = of_currency.exclude(cost_basis=CostBasis.UNPRICED).aggregate(s=Sum("cost"))["s"] or 0
        assert money_sum(rows, "BilledCost", BillingCurrency=currency) == billed
        assert money_sum(rows, "EffectiveCost", BillingCurrency=currency) == priced
    tokens = sum(int(row["ConsumedQuantity"]) for row in rows if row["ConsumedUnit"] == "Tokens")
    assert tokens == spend["priced_tokens"] + spend["unpriced_tokens"]
    # One row per line, lines mixing token classes included (most of the demo's): its cost as stored.
    assert len(rows) == len({row["x_UsageLineId"] for row in rows}) == lines.count()
    assert sum(1 for row in rows if row["SkuMeter"] == "Tokens") > len(rows) / 2
    for name, column in [("input_tokens", "x_InputTokens"), ("cached_input_tokens", "x_CachedInputTokens"),
                         ("cache_write_tokens", "x_CacheWriteTokens"), ("output_tokens", "x_OutputTokens"),
                         ("requests", "x_Requests")]:
        assert sum(int(row[column]) for row in rows) == lines.aggregate(s=Sum(name))["s"], name
    for row in rows:  # a list price only where it is exact
        if row["ListUnitPrice"]:
            assert Decimal(row["ListCost"]) == Decimal(row["ListUnitPrice"]) * Decimal(row["PricingQuantity"])


def test_the_finops_foundations_validator_passes_the_demo_export_but_for_its_pre_1_2_rules(exported, tmp_path):
    failures = validator_failures(exported, tmp_path)
    assert set(failures) <= set(VALIDATOR_RULES_IGNORED), failures


def _peak(work) -> int:
    tracemalloc.start()
    try:
        work()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_the_export_is_written_in_bounded_memory(exported, tmp_path):
    """Streamed from a server-side cursor in chunks: writing the month takes a fraction of the memory that merely
    holding its lines would (what a list() of the rows, or the CSV built as one string, would cost)."""
    target = tmp_path / "again.csv"

    def write():
        with target.open("w", newline="") as out:
            write_focus_csv(month_lines(MONTH, chunk_size=200), out)

    streamed, held = _peak(write), _peak(lambda: list(month_lines(MONTH)))
    assert target.read_text() == exported.read_text()
    assert streamed < held / 3, (streamed, held)
