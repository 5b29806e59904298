"""Importing usage files (ingest/services.py) and the daily rollup (finops/spend/services/rollups.py). The
`import_usage` command: test_import_usage_command.py.

What finance relies on: billed beats estimated, nothing is silently $0, a non-USD amount converts with
the rate of its day, the same file twice changes nothing, a restated file replaces, a bad file writes
nothing, and the rollup every page reads equals the raw lines.
"""

import csv
import datetime as dt
import io
from decimal import Decimal
from pathlib import Path

import pytest
from django.db.models import Count, Sum
from django.db.models.functions import TruncDate
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from finops.models import (
    Account,
    CostBasis,
    DailySpend,
    FxRate,
    IngestRun,
    ModelPrice,
    Provider,
    TeamDailySpend,
    UsageLine,
)
from finops.prices.services import CATALOG_EFFECTIVE_FROM
from finops.spend.services.rollups import rollup_rebuild
from ingest.services import usage_file_import
from tests.rollup_check import assert_rollup_equals_raw, rollup_groups

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "usage_csv"
MTOK = Decimal(1_000_000)
TOKEN_FIELDS = ("input_tokens", "cached_input_tokens", "cache_write_tokens", "output_tokens", "requests")
HEADER = (
    "day,provider,model,input_tokens,cached_input_tokens,cache_write_tokens,output_tokens,requests,cost,currency,"
    "project,api_key,tags"
)


def import_file(account: Account, name: str) -> IngestRun:
    with (FIXTURES / name).open("rb") as stream:
        return usage_file_import(account=account, stream=stream, file_name=name)


def import_text(account: Account, text: str, name: str = "inline.csv") -> IngestRun:
    return usage_file_import(account=account, stream=io.BytesIO(text.encode()), file_name=name)


def totals_by_day(queryset, day_field: str) -> dict:
    """Per day: Σ cost, Σ reporting cost, Σ each token class and the number of lines."""
    rows = (
        queryset.values(day_field)
        .annotate(
            cost=Sum("cost"),
            reporting_cost=Sum("reporting_cost"),
            **{f: Sum(f) for f in TOKEN_FIELDS},
        )
        .order_by(day_field)
    )
    return {row.pop(day_field): row for row in rows}


def raw_totals() -> dict:
    return totals_by_day(UsageLine.objects.annotate(day=TruncDate("period_start")), "day")


@pytest.fixture
def groq_account(db):
    groq = Provider.objects.get(slug="groq")
    return Account.objects.create(name="groq-exports", provider=groq, connector="usage_csv")


@pytest.fixture
def eur_rates(db):
    FxRate.objects.create(day=dt.date(2025, 1, 1), currency="EUR", rate=Decimal("1.08"))
    FxRate.objects.create(day=dt.date(2025, 1, 15), currency="EUR", rate=Decimal("1.04"))


# --- cost: billed, estimated, unpriced ---


def test_billed_lines_keep_the_billed_cost(openai_account):
    run = import_file(openai_account, "openai_daily.csv")

    assert run.status == IngestRun.Status.SUCCEEDED, run.error
    assert (run.lines_read, run.lines_written, run.lines_replaced, run.lines_rejected) == (4, 4, 0, 0)
    lines = UsageLine.objects.order_by("period_start", "model")
    assert [(line.model, line.cost, line.reporting_cost, line.cost_basis) for line in lines] == [
        ("gpt-4o", Decimal("5.5"), Decimal("5.5"), CostBasis.BILLED),
        ("gpt-4o-mini", Decimal("0.21"), Decimal("0.21"), CostBasis.BILLED),
        ("gpt-4o", Decimal("4.875"), Decimal("4.875"), CostBasis.BILLED),
        ("gpt-4o-mini", Decimal("0.144"), Decimal("0.144"), CostBasis.BILLED),
    ]
    first = lines[0]
    assert first.model_raw == "gpt-4o-2024-08-06"
    assert (first.input_tokens, first.cached_input_tokens, first.output_tokens) == (1_000_000, 200_000, 300_000)
    assert first.tags == {"team": "support", "env": "prod"}
    assert first.ingest_run == run


def test_exact_decimal_costs_are_stored_without_loss(openai_account):
    run = import_file(openai_account, "exact_decimals.csv")

    assert run.status == IngestRun.Status.SUCCEEDED, run.error
    assert sorted(UsageLine.objects.values_list("cost", flat=True)) == [
        Decimal("0"),
        Decimal("0.0000045"),
        Decimal("12"),
    ]
    assert DailySpend.objects.aggregate(total=Sum("cost"))["total"] == Decimal("12.0000045")


def test_rows_without_cost_are_estimated_from_the_catalog_price_of_their_day(groq_account):
    price = ModelPrice.objects.get(provider__slug="groq", model="gpt-oss-120b", effective_from=CATALOG_EFFECTIVE_FROM)
    assert price.cache_write_per_mtok is None

    run = import_file(groq_account, "groq_no_cost.csv")

    assert run.status == IngestRun.Status.SUCCEEDED, run.error
    # 1,000,000 input of which 200,000 cached, 250,000 output.
    expected = (
        Decimal(800_000) * price.input_per_mtok
        + Decimal(200_000) * price.cached_input_per_mtok
        + Decimal(250_000) * price.output_per_mtok
    ) / MTOK
    assert expected == Decimal("0.285")  # 0.8 × $0.15 + 0.2 × $0.075 + 0.25 × $0.60
    for line in UsageLine.objects.filter(model="gpt-oss-120b"):
        assert (line.cost, line.reporting_cost, line.currency, line.cost_basis) == (
            expected,
            expected,
            "USD",
            CostBasis.ESTIMATED,
        )
        assert line.model_raw == "groq/openai/gpt-oss-120b"


def test_a_dated_price_change_applies_from_its_date(groq_account):
    ModelPrice.objects.create(
        provider=Provider.objects.get(slug="groq"),
        model="gpt-oss-120b",
        effective_from=dt.date(2025, 3, 1),
        input_per_mtok=Decimal("0.1"),
        output_per_mtok=Decimal("0.5"),
        cached_input_per_mtok=Decimal("0.05"),
        source=ModelPrice.Source.CONFIG,
    )

    import_file(groq_account, "groq_no_cost.csv")

    costs = dict(UsageLine.objects.filter(model="gpt-oss-120b").values_list("period_start__date", "cost"))
    assert costs == {
        dt.date(2025, 2, 28): Decimal("0.285"),
        # 0.8 × $0.10 + 0.2 × $0.05 + 0.25 × $0.50
        dt.date(2025, 3, 1): Decimal("0.215"),
    }


def test_an_estimated_price_uses_the_cache_write_rate_or_else_the_input_rate(openai_account):
    anthropic = Provider.objects.get(slug="anthropic")
    price = ModelPrice.objects.filter(provider=anthropic, model="claude-sonnet-4-5").get()
    text = (
        "day,provider,model,input_tokens,cached_input_tokens,cache_write_tokens,output_tokens\n"
        "2025-01-14,anthropic,claude-sonnet-4-5-20250929,1000000,300000,100000,200000\n"
        "2025-01-14,openai,gpt-4o,1000000,0,100000,0\n"
    )

    run = import_text(openai_account, text)

    assert run.status == IngestRun.Status.SUCCEEDED, run.error
    sonnet = UsageLine.objects.get(model="claude-sonnet-4-5")
    assert sonnet.provider == anthropic
    write_rate = price.cache_write_per_mtok if price.cache_write_per_mtok is not None else price.input_per_mtok
    assert (
        sonnet.cost
        == (
            600_000 * price.input_per_mtok
            + 300_000 * price.cached_input_per_mtok
            + 100_000 * write_rate
            + 200_000 * price.output_per_mtok
        )
        / MTOK
    )
    # gpt-4o has no cache-write price: those tokens are charged as plain input ($2.50/M).
    assert UsageLine.objects.get(model="gpt-4o").cost == Decimal("2.5")


def test_an_unknown_model_is_unpriced_with_no_cost_never_zero(groq_account):
    import_file(groq_account, "groq_no_cost.csv")

    line = UsageLine.objects.get(model="acme-finetune-7b")
    assert line.cost_basis == CostBasis.UNPRICED
    assert line.cost is None and line.reporting_cost is None
    assert (line.input_tokens, line.output_tokens) == (50_000, 10_000)
    rollup = DailySpend.objects.get(model="acme-finetune-7b")
    assert rollup.cost_basis == CostBasis.UNPRICED
    assert rollup.cost is None and rollup.reporting_cost is None
    assert rollup.input_tokens == 50_000


def test_a_non_usd_row_converts_with_the_latest_rate_on_or_before_its_day(openai_account, eur_rates):
    run = import_file(openai_account, "eur_billed.csv")

    assert run.status == IngestRun.Status.SUCCEEDED, run.error
    lines = UsageLine.objects.order_by("period_start").values_list(
        "period_start__date", "cost", "currency", "reporting_cost"
    )
    assert list(lines) == [
        (dt.date(2025, 1, 10), Decimal("100"), "EUR", Decimal("108")),  # the 1 Jan rate
        (dt.date(2025, 1, 15), Decimal("10"), "EUR", Decimal("10.4")),  # the rate of that very day
        (dt.date(2025, 1, 20), Decimal("50"), "EUR", Decimal("52")),  # still the 15 Jan rate
    ]
    assert DailySpend.objects.get(day=dt.date(2025, 1, 10)).currency == "EUR"


def test_a_missing_fx_rate_fails_the_run_naming_currency_and_day_and_writes_nothing(openai_account, eur_rates):
    run = import_file(openai_account, "gbp_billed.csv")

    assert run.status == IngestRun.Status.FAILED
    assert "GBP" in run.error and "2025-01-15" in run.error
    assert (run.lines_written, run.lines_replaced) == (0, 0)
    assert not UsageLine.objects.exists()
    assert not DailySpend.objects.exists()


def test_a_rate_only_after_the_day_is_not_used(openai_account, eur_rates):
    text = "day,model,input_tokens,output_tokens,cost,currency\n2024-12-31,gpt-4o,1,1,5,EUR\n"

    run = import_text(openai_account, text)

    assert run.status == IngestRun.Status.FAILED
    assert "EUR" in run.error and "2024-12-31" in run.error
    assert not UsageLine.objects.exists()


# --- idempotency and restatements ---


def test_importing_the_same_file_twice_leaves_every_total_unchanged(openai_account):
    import_file(openai_account, "openai_daily.csv")
    raw, rollup = raw_totals(), rollup_groups()

    second = import_file(openai_account, "openai_daily.csv")

    assert second.status == IngestRun.Status.SUCCEEDED
    assert second.lines_written == second.lines_replaced == 4
    assert UsageLine.objects.count() == 4
    assert raw_totals() == raw
    assert rollup_groups() == rollup
    assert raw[dt.date(2025, 1, 14)]["cost"] == Decimal("5.71")


def test_a_restated_file_for_the_same_days_replaces_what_was_there(openai_account):
    import_file(openai_account, "openai_daily.csv")

    run = import_file(openai_account, "openai_daily_restated.csv")

    assert (run.lines_written, run.lines_replaced) == (3, 4)
    totals = raw_totals()
    assert {day: t["cost"] for day, t in totals.items()} == {
        dt.date(2025, 1, 14): Decimal("5.725"),
        dt.date(2025, 1, 15): Decimal("4.9545"),
    }
    assert totals[dt.date(2025, 1, 14)]["requests"] == 431
    assert not UsageLine.objects.filter(period_start__date=dt.date(2025, 1, 14), model="gpt-4o-mini").exists()
    assert not DailySpend.objects.filter(day=dt.date(2025, 1, 14), model="gpt-4o-mini").exists()
    assert_rollup_equals_raw()


def test_a_file_covering_other_days_adds_to_what_was_there(openai_account):
    import_file(openai_account, "openai_daily.csv")
    before = raw_totals()

    run = import_file(openai_account, "openai_next_day.csv")

    assert (run.lines_written, run.lines_replaced) == (1, 0)
    after = raw_totals()
    assert {d: t for d, t in after.items() if d != dt.date(2025, 1, 16)} == before
    assert after[dt.date(2025, 1, 16)]["cost"] == Decimal("4.25")
    assert_rollup_equals_raw()


def test_a_file_only_replaces_its_own_accounts_days(openai_account, db):
    other = Account.objects.create(name="openai-staging", provider=openai_account.provider, connector="usage_csv")
    import_file(openai_account, "openai_daily.csv")

    import_file(other, "openai_daily_restated.csv")

    assert UsageLine.objects.filter(account=openai_account).count() == 4
    assert UsageLine.objects.filter(account=other).count() == 3
    assert DailySpend.objects.filter(account=openai_account).aggregate(c=Sum("cost"))["c"] == Decimal("10.729")
    assert_rollup_equals_raw()


def test_identical_lines_within_a_file_are_both_kept(openai_account):
    text = "day,model,input_tokens,output_tokens,cost\n2025-01-14,gpt-4o,10,5,1.5\n2025-01-14,gpt-4o,10,5,1.5\n"

    import_text(openai_account, text)
    import_text(openai_account, text)

    assert UsageLine.objects.count() == 2
    assert DailySpend.objects.get().cost == Decimal("3")


@pytest.mark.parametrize(
    "bad_file, where",
    [
        ("negative_tokens.csv", "negative_tokens.csv line 3"),
        ("bad_date.csv", "bad_date.csv line 3"),
        ("cache_exceeds_input.csv", "cache_exceeds_input.csv line 4"),
        ("bad_cost.csv", "bad_cost.csv line 2"),
        ("too_many_fields.csv", "too_many_fields.csv line 3"),
        ("missing_columns.csv", "missing_columns.csv"),
        ("gbp_billed.csv", "GBP"),
    ],
)
def test_a_bad_file_leaves_earlier_data_untouched_and_the_run_failed(openai_account, bad_file, where):
    import_file(openai_account, "openai_daily.csv")
    raw, rollup = raw_totals(), rollup_groups()
    lines = set(UsageLine.objects.values_list("id", "cost"))

    run = import_file(openai_account, bad_file)

    assert run.status == IngestRun.Status.FAILED
    assert where in run.error
    assert (run.lines_written, run.lines_replaced) == (0, 0)
    assert run.finished_at is not None
    assert set(UsageLine.objects.values_list("id", "cost")) == lines
    assert raw_totals() == raw and rollup_groups() == rollup
    openai_account.refresh_from_db()
    assert openai_account.last_error == run.error
    assert openai_account.last_error_at is not None


@pytest.mark.parametrize(
    "line",
    [
        "2025-01-14,gpt-4o,10,5,1E+25",  # a cost NUMERIC(38, 18) cannot hold
        "2025-01-14,gpt-4o,99999999999999999999,5,1",  # a token count past bigint
    ],
)
def test_a_value_the_database_cannot_hold_fails_the_run_and_leaves_earlier_data(openai_account, line):
    import_file(openai_account, "openai_daily.csv")
    raw = raw_totals()

    run = import_text(openai_account, f"day,model,input_tokens,output_tokens,cost\n{line}\n", "huge.csv")

    assert run.status == IngestRun.Status.FAILED
    assert run.error.startswith("huge.csv line 2: ") and "beyond what can be stored" in run.error
    assert IngestRun.objects.get(pk=run.pk).status == IngestRun.Status.FAILED
    assert raw_totals() == raw
    openai_account.refresh_from_db()
    assert openai_account.last_error == run.error


def test_a_file_that_is_not_utf8_fails_the_run_and_writes_nothing(openai_account):
    stream = io.BytesIO("day,model,input_tokens,output_tokens,cost\n2025-01-14,modèle,1,1,1\n".encode("latin-1"))

    run = usage_file_import(account=openai_account, stream=stream, file_name="latin1.csv")

    assert run.status == IngestRun.Status.FAILED
    assert run.error
    assert not UsageLine.objects.exists()


def test_a_good_import_after_a_failed_one_clears_the_accounts_error(openai_account):
    import_file(openai_account, "bad_date.csv")
    openai_account.refresh_from_db()
    assert openai_account.last_error

    run = import_file(openai_account, "openai_daily.csv")

    openai_account.refresh_from_db()
    assert run.status == IngestRun.Status.SUCCEEDED
    assert openai_account.last_error == ""
    assert openai_account.last_success_at is not None


def test_an_unknown_provider_in_a_row_fails_the_run(openai_account):
    text = "day,provider,model,input_tokens,output_tokens\n2025-01-14,acme,x,1,1\n"

    run = import_text(openai_account, text, "acme.csv")

    assert run.status == IngestRun.Status.FAILED
    assert "acme.csv line 2" in run.error and "'acme'" in run.error
    assert not UsageLine.objects.exists()


# --- the rollup ---


def test_the_rollup_equals_the_raw_lines_after_a_sequence_of_imports(openai_account, groq_account, eur_rates):
    for account, name in [
        (openai_account, "openai_daily.csv"),
        (openai_account, "eur_billed.csv"),
        (groq_account, "groq_no_cost.csv"),
        (openai_account, "openai_daily_restated.csv"),
        (openai_account, "bad_date.csv"),
        (openai_account, "openai_next_day.csv"),
        (openai_account, "openai_daily.csv"),
        (groq_account, "groq_no_cost.csv"),
    ]:
        import_file(account, name)

    assert_rollup_equals_raw()
    # openai-prod ends with 14 and 15 Jan from openai_daily (4), 10 and 20 Jan from eur_billed (its 15 Jan was
    # restated since), 16 Jan (1); groq-exports with its file (3).
    assert DailySpend.objects.aggregate(n=Sum("line_count"))["n"] == UsageLine.objects.count() == 4 + 2 + 1 + 3
    assert totals_by_day(DailySpend.objects.all(), "day") == raw_totals()


def test_a_rollup_rebuild_of_the_same_days_changes_nothing(openai_account):
    import_file(openai_account, "openai_daily.csv")
    before = rollup_groups()

    rollup_rebuild(days={dt.date(2025, 1, 14), dt.date(2025, 1, 15)})

    assert rollup_groups() == before


# Three days, a few models (priced, priced with cache tokens, unknown), USD and EUR, billed or estimated.
DAYS = [dt.date(2025, 1, 14), dt.date(2025, 1, 15), dt.date(2025, 1, 16)]
CATALOG = {  # $/M: input, cached input, output (cache writes are charged as input)
    "gpt-4o": (Decimal("2.5"), Decimal("1.25"), Decimal("10")),
    "gpt-4o-mini": (Decimal("0.15"), Decimal("0.075"), Decimal("0.6")),
}
EUR_RATE = Decimal("1.08")


@st.composite
def usage_rows(draw):
    uncached, cached, cache_write = (draw(st.integers(0, 5_000_000)) for _ in range(3))
    return {
        "day": draw(st.sampled_from(DAYS)),
        "model": draw(st.sampled_from([*CATALOG, "mystery-model"])),
        "uncached": uncached,
        "cached": cached,
        "cache_write": cache_write,
        "output": draw(st.integers(0, 2_000_000)),
        "requests": draw(st.integers(0, 1000)),
        "cost": draw(st.none() | st.decimals(min_value=0, max_value=1000, places=6, allow_nan=False)),
        "currency": draw(st.sampled_from(["USD", "EUR"])),
        "project": draw(st.sampled_from(["", "proj_a", "proj_b"])),
    }


def csv_text(rows: list[dict]) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(HEADER.split(","))
    for r in rows:
        writer.writerow(
            [
                r["day"].isoformat(),
                "openai",
                r["model"],
                r["uncached"] + r["cached"] + r["cache_write"],
                r["cached"],
                r["cache_write"],
                r["output"],
                r["requests"],
                "" if r["cost"] is None else str(r["cost"]),
                r["currency"],
                r["project"],
                "",
                "",
            ]
        )
    return out.getvalue()


def expected_reporting_cost(r: dict) -> Decimal | None:
    if r["cost"] is not None:
        return r["cost"] * (EUR_RATE if r["currency"] == "EUR" else 1)
    if r["model"] not in CATALOG:
        return None
    input_rate, cached_rate, output_rate = CATALOG[r["model"]]
    return (
        (r["uncached"] + r["cache_write"]) * input_rate + r["cached"] * cached_rate + r["output"] * output_rate
    ) / MTOK


@pytest.mark.slow  # left out of make test-fast (tests/conftest.py says why)
@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(
    files=st.lists(st.lists(usage_rows(), max_size=5), min_size=1, max_size=4),
    order=st.lists(st.integers(0, 3), min_size=1, max_size=8),
)
def test_rollup_equals_raw_and_totals_are_those_of_the_last_import_of_each_day(openai_account, files, order):
    # One database transaction serves every example: start each from no usage.
    DailySpend.objects.all().delete()
    TeamDailySpend.objects.all().delete()
    UsageLine.objects.all().delete()
    IngestRun.objects.all().delete()
    FxRate.objects.get_or_create(day=dt.date(2025, 1, 1), currency="EUR", defaults={"rate": EUR_RATE})

    latest: dict[dt.date, list[dict]] = {}
    for position in order:
        rows = files[position % len(files)]
        run = import_text(openai_account, csv_text(rows), f"file{position % len(files)}.csv")
        assert run.status == IngestRun.Status.SUCCEEDED, run.error
        for day in {r["day"] for r in rows}:
            latest[day] = [r for r in rows if r["day"] == day]

    expected = {}
    for day, rows in sorted(latest.items()):
        costs = [expected_reporting_cost(r) for r in rows]
        priced = [c for c in costs if c is not None]
        expected[day] = {
            "reporting_cost": sum(priced, Decimal(0)) if priced else None,
            "input_tokens": sum(r["uncached"] for r in rows),
            "cached_input_tokens": sum(r["cached"] for r in rows),
            "cache_write_tokens": sum(r["cache_write"] for r in rows),
            "output_tokens": sum(r["output"] for r in rows),
            "requests": sum(r["requests"] for r in rows),
            "lines": len(rows),
        }

    def actual(queryset, day_field, count):
        rows = queryset.values(day_field).annotate(
            reporting_cost=Sum("reporting_cost"), **{f: Sum(f) for f in TOKEN_FIELDS}, lines=count
        )
        return {row.pop(day_field): row for row in rows}

    raw = actual(UsageLine.objects.annotate(day=TruncDate("period_start")), "day", Count("id"))
    rollup = actual(DailySpend.objects.all(), "day", Sum("line_count"))
    assert raw == expected
    assert rollup == expected
    if expected:
        assert_rollup_equals_raw()
    else:
        assert not DailySpend.objects.exists()
