"""Property tests (hypothesis) for idempotent file imports and restatements (docs/architecture.md invariants 3 and 7).

- FOCUS exports: a restated billing month replaces the month (late-billed rows charged in the month before
  included); a file for another month adds; importing any file again changes nothing.
- Usage CSVs imported in any order with repeats: each day's totals are those of the last file covering that day.

Every example starts from no usage: its writes are rolled back when it ends (property_helpers.example_undone).
"""

import csv
import datetime as dt
import io
import json
from decimal import Decimal

import pytest
from django.db.models import Q
from hypothesis import given
from hypothesis import strategies as st

from finops.core.modelids import normalise_model
from finops.models import Account, CostBasis, IngestRun, Provider, UsageLine
from finops.prices.selectors import PriceBook, Tokens, cost_from_price
from ingest.services import usage_file_import
from tests.ingest.property_helpers import FILE_SETTINGS, example_undone, rollup_totals_by_day, totals_by_day
from tests.rollup_check import assert_rollup_equals_raw

# =====================================================================================================
# 1. FOCUS exports: a restated month replaces the month; another month adds.
# =====================================================================================================

JUNE = dt.date(2025, 6, 1)
FOCUS_HEADER = [
    "BilledCost",
    "BillingCurrency",
    "BillingPeriodStart",
    "BillingPeriodEnd",
    "ChargeCategory",
    "ChargePeriodStart",
    "ChargePeriodEnd",
    "ConsumedQuantity",
    "ConsumedUnit",
    "ServiceProviderName",
    "SkuPriceDetails",
    "SubAccountId",
]
FOCUS_MODELS = ["gpt-4o", "gpt-4o-mini"]


def month_after(month: dt.date) -> dt.date:
    return (month + dt.timedelta(days=32)).replace(day=1)


def month_before(month: dt.date) -> dt.date:
    return (month - dt.timedelta(days=1)).replace(day=1)


def _midnight(day: dt.date) -> str:
    return f"{day.isoformat()}T00:00:00Z"


@st.composite
def focus_rows(draw, month: dt.date, late: bool | None = None):
    """One FOCUS row billed in `month`; `late`: charged in the last days of the month before (None: either)."""
    late = draw(st.booleans()) if late is None else late
    if late:
        day = month - dt.timedelta(days=draw(st.integers(1, 3)))
    else:
        day = month + dt.timedelta(days=draw(st.integers(0, (month_after(month) - month).days - 1)))
    category = "Usage" if late else draw(st.sampled_from(["Usage", "Usage", "Usage", "Tax", "Credit"]))
    cost = draw(st.decimals(min_value=0, max_value=500, places=6, allow_nan=False, allow_infinity=False))
    return {
        "month": month,
        "day": day,
        "category": category,
        "cost": -cost if category == "Credit" else cost,
        "model": draw(st.sampled_from(FOCUS_MODELS)) if category == "Usage" else "",
        "direction": draw(st.sampled_from(["Input", "Output"])),
        "tokens": draw(st.integers(0, 5_000_000)) if category == "Usage" else 0,
        "project": draw(st.sampled_from(["acct-support", "acct-search"])),
    }


def focus_csv(rows: list[dict]) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(FOCUS_HEADER)
    for r in rows:
        usage = r["category"] == "Usage"
        details = {"ModelId": r["model"], "TokenDirection": r["direction"]} if usage else {}
        writer.writerow(
            [
                str(r["cost"]),
                "USD",
                _midnight(r["month"]),
                _midnight(month_after(r["month"])),
                r["category"],
                _midnight(r["day"]),
                _midnight(r["day"] + dt.timedelta(days=1)),
                r["tokens"] if usage else "",
                "Tokens" if usage else "",
                "OpenAI",
                json.dumps(details) if details else "",
                r["project"],
            ]
        )
    return out.getvalue().encode()


@st.composite
def restated_months(draw):
    """A June export; its restatement (rows removed, amounts changed, rows added, at least one billed late);
    and an export of the month before or after (which may have late-billed rows of its own)."""
    original = draw(st.lists(focus_rows(JUNE), min_size=1, max_size=6))
    restated = []
    for row in original:
        if draw(st.booleans()):  # kept…
            new_cost = draw(st.none() | st.decimals(min_value=0, max_value=500, places=6, allow_nan=False))
            if new_cost is not None:  # …with a different amount
                new_cost = -new_cost if row["category"] == "Credit" else new_cost
            restated.append(row if new_cost is None else {**row, "cost": new_cost})
    restated += draw(st.lists(focus_rows(JUNE), max_size=3))
    restated.insert(draw(st.integers(0, len(restated))), draw(focus_rows(JUNE, late=True)))
    other_month = draw(st.sampled_from([month_before(JUNE), month_after(JUNE)]))
    other = draw(st.lists(focus_rows(other_month), min_size=1, max_size=5))
    return original, restated, other


def expected_focus_totals(*files: list[dict]) -> dict:
    days: dict[dt.date, dict] = {}
    for rows in files:
        for r in rows:
            t = days.setdefault(r["day"], {"cost": Decimal(0), "input_tokens": 0, "output_tokens": 0, "lines": 0})
            t["cost"] += r["cost"]
            t["input_tokens" if r["direction"] == "Input" else "output_tokens"] += r["tokens"]
            t["lines"] += 1
    return days


def focus_totals(account: Account) -> dict:
    return {
        day: {
            "cost": t["cost"],
            "input_tokens": t["input_tokens"],
            "output_tokens": t["output_tokens"],
            "lines": t["lines"],
        }
        for day, t in totals_by_day(account).items()
    }


@pytest.fixture
def focus_account(db):
    return Account.objects.create(
        name="openai-focus", provider=Provider.objects.get(slug="openai"), connector="focus_file"
    )


def import_focus(account: Account, rows: list[dict], name: str) -> None:
    run = usage_file_import(account=account, stream=io.BytesIO(focus_csv(rows)), file_name=name)
    assert run.status == IngestRun.Status.SUCCEEDED, run.error
    assert_rollup_equals_raw(
        account=account, allow_empty=True
    )  # after every import: late lines fall on days outside the month's window


@FILE_SETTINGS
@given(months=restated_months())
def test_a_restated_focus_month_replaces_the_month_and_a_file_for_another_month_adds(focus_account, months):
    original, restated, other = months
    with example_undone():
        import_focus(focus_account, original, "focus-2025-06.csv")
        assert focus_totals(focus_account) == expected_focus_totals(original)

        import_focus(focus_account, restated, "focus-2025-06-restated.csv")
        assert focus_totals(focus_account) == expected_focus_totals(restated)  # nothing of the first export is left
        late = [r for r in restated if r["day"] < JUNE]
        assert late and UsageLine.objects.filter(
            account=focus_account,
            period_start__lt=dt.datetime.combine(JUNE, dt.time(), tzinfo=dt.UTC),
            billing_period_start=dt.datetime.combine(JUNE, dt.time(), tzinfo=dt.UTC),
        ).count() == len(late)

        import_focus(focus_account, other, "focus-other-month.csv")
        both = expected_focus_totals(restated, other)
        assert focus_totals(focus_account) == both

        # Importing either export again changes nothing: each replaces its own billing month and only that.
        import_focus(focus_account, restated, "focus-2025-06-restated.csv")
        assert focus_totals(focus_account) == both
        import_focus(focus_account, other, "focus-other-month.csv")
        assert focus_totals(focus_account) == both
        assert rollup_totals_by_day(focus_account) == totals_by_day(focus_account)


# =====================================================================================================
# 2. Usage CSVs in any order with repeats: each day is what the last file covering it says.
# =====================================================================================================

CSV_DAYS = [dt.date(2025, 1, 13) + dt.timedelta(days=n) for n in range(5)]
CSV_MODELS = ["gpt-4o-2024-08-06", "gpt-4o-mini", "mystery-model-9"]  # the last is in no catalog: unpriced
CSV_HEADER = (
    "day,provider,model,input_tokens,cached_input_tokens,cache_write_tokens,output_tokens,requests,cost,currency,"
    "project"
)


@st.composite
def csv_rows(draw):
    uncached, cached, cache_write = (draw(st.integers(0, 3_000_000)) for _ in range(3))
    return {
        "day": draw(st.sampled_from(CSV_DAYS)),
        "model": draw(st.sampled_from(CSV_MODELS)),
        "uncached": uncached,
        "cached": cached,
        "cache_write": cache_write,
        "output": draw(st.integers(0, 1_000_000)),
        "requests": draw(st.integers(0, 500)),
        "cost": draw(st.none() | st.decimals(min_value=0, max_value=1000, places=8, allow_nan=False)),
        "project": draw(st.sampled_from(["", "proj_a", "proj_b"])),
    }


def usage_csv(rows: list[dict]) -> bytes:
    lines = [CSV_HEADER]
    for r in rows:
        lines.append(
            ",".join(
                str(v)
                for v in [
                    r["day"].isoformat(),
                    "openai",
                    r["model"],
                    r["uncached"] + r["cached"] + r["cache_write"],
                    r["cached"],
                    r["cache_write"],
                    r["output"],
                    r["requests"],
                    "" if r["cost"] is None else r["cost"],
                    "USD",
                    r["project"],
                ]
            )
        )
    return ("\n".join(lines) + "\n").encode()


def expected_reporting_cost(row: dict, book: PriceBook) -> Decimal | None:
    if row["cost"] is not None:
        return row["cost"]
    price = book.price_on(normalise_model(row["model"]), row["day"])
    if price is None:
        return None
    return cost_from_price(price, Tokens(row["uncached"], row["cached"], row["cache_write"], row["output"]))


@pytest.fixture
def csv_account(db):
    return Account.objects.create(
        name="openai-csv", provider=Provider.objects.get(slug="openai"), connector="usage_csv"
    )


@FILE_SETTINGS
@given(
    files=st.lists(st.lists(csv_rows(), max_size=6), min_size=1, max_size=4),
    order=st.lists(st.integers(0, 3), min_size=1, max_size=8),
)
def test_usage_csvs_imported_in_any_order_with_repeats_leave_each_day_as_the_last_file_covering_it_says(
    csv_account, files, order
):
    with example_undone():
        book = PriceBook.for_provider(csv_account.provider)

        latest: dict[dt.date, list[dict]] = {}
        for position in order:
            rows = files[position % len(files)]
            run = usage_file_import(
                account=csv_account, stream=io.BytesIO(usage_csv(rows)), file_name=f"f{position}.csv"
            )
            assert run.status == IngestRun.Status.SUCCEEDED, run.error
            for day in {r["day"] for r in rows}:  # a file replaces exactly the days it has rows for
                latest[day] = [r for r in rows if r["day"] == day]

        expected = {}
        for day, rows in latest.items():
            costs = [c for c in (expected_reporting_cost(r, book) for r in rows) if c is not None]
            expected[day] = {
                "cost": sum(costs, Decimal(0)) if costs else None,
                "reporting_cost": sum(costs, Decimal(0)) if costs else None,
                "input_tokens": sum(r["uncached"] for r in rows),
                "cached_input_tokens": sum(r["cached"] for r in rows),
                "cache_write_tokens": sum(r["cache_write"] for r in rows),
                "output_tokens": sum(r["output"] for r in rows),
                "requests": sum(r["requests"] for r in rows),
                "lines": len(rows),
            }
        assert totals_by_day(csv_account) == expected
        assert rollup_totals_by_day(csv_account) == expected
        assert (
            not UsageLine.objects.filter(account=csv_account)
            .filter(Q(cost_basis=CostBasis.UNPRICED) & ~Q(model="mystery-model-9"))
            .exists()
        )
        assert_rollup_equals_raw(account=csv_account, allow_empty=True)
