"""Any period's sums on the spend pages equal the daily rollup summed over it, and one pass by day gives every
tile's totals: each test imports its own months of usage (the overview's figures on one November:
tests/test_overview.py)."""

import datetime as dt
import io

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from finops.models import AttributionRule, TeamDailySpend
from finops.spend.services.attribution import history_reattribute
from ingest.services import usage_file_import


@pytest.fixture(autouse=True)
def _frozen(time_machine):
    time_machine.move_to(dt.datetime(2026, 11, 22, 12, tzinfo=dt.UTC))


@pytest.mark.parametrize(
    "key, start, end",
    [
        ("last-30", None, None),
        ("2026-12", None, None),
        ("2027-Q1", None, None),
        ("custom", "2026-10-20", "2027-03-11"),
        ("custom", "2026-11-05", "2026-11-06"),
    ],
)
def test_any_period_sums_equal_the_daily_rollup_summed_over_it(
    key, start, end, fiona, sam, openai_account, support_agent
):
    """Periods past a quarter, or holding a whole month, read whole months from the monthly rollup and the
    edges from daily rows. Either way every group's sums equal the daily rows summed over the period, for
    someone who sees everything and for a member (whose monthly rows are their teams' only)."""
    from django.db.models import Sum

    from finops.core.reporting_period import resolve
    from finops.models import MonthlySpend
    from finops.spend.selectors import spend

    first = dt.date(2026, 10, 1)
    rows = ["day,model,input_tokens,output_tokens,cost,project"]
    for n in range(0, 180):  # Oct 2026 .. Mar 2027, a different amount each day; some unpriced, some unattributed
        day = (first + dt.timedelta(days=n)).isoformat()
        rows += [f"{day},gpt-5-mini,{1000 + n},{n},{n % 7 + 0.25},support", f"{day},my-model,{500 + n},1,,other"]
    assert (
        usage_file_import(account=openai_account, stream=io.BytesIO("\n".join(rows).encode()), file_name="y.csv").status
        == "succeeded"
    )
    AttributionRule.objects.create(workload=support_agent, priority=1, project="support")
    history_reattribute()

    today = dt.date(2027, 3, 30)
    period = resolve(
        key, today=today, start=start and dt.date.fromisoformat(start), end=end and dt.date.fromisoformat(end)
    )
    for user in (fiona, sam):
        daily, monthly = spend.visible_spend(user), spend.visible_spend(user, MonthlySpend)
        with CaptureQueriesContext(connection) as queries:
            read = {
                r["workload_id"]: r
                for r in spend.sums(daily, monthly, period.start, period.end, ("workload_id",), today=today)
            }
        wanted = {
            r["workload_id"]: r
            for r in spend.period(daily, period.start, period.end)
            .values("workload_id")
            .annotate(cost=Sum("reporting_cost"), tokens=spend.TOKEN_SUM, unpriced=spend.UNPRICED_TOKEN_SUM)
            .order_by()
        }
        assert read.keys() == wanted.keys(), (user, key)
        for workload, row in wanted.items():
            assert (read[workload]["cost"], read[workload]["tokens"], read[workload]["unpriced_tokens"]) == (
                row["cost"],
                row["tokens"],
                row["unpriced"] or 0,
            ), (user, key, workload)
        # The unattributed group is all unpriced: its cost is unknown (None), never 0.
        if user is fiona:
            assert (
                read[None]["cost"] is None and read[None]["unpriced_tokens"] > 0 and read[None]["usd_per_mtok"] is None
            )
        # Whole months come from the monthly rollup: a long period's, and a period of whole months (issue 23).
        monthly_read = any(MonthlySpend._meta.db_table in q["sql"] for q in queries.captured_queries)
        whole_months = period.start.day == 1 and period.end.day == 1
        assert monthly_read == (period.days > spend.DAILY_READ_MAX_DAYS or whole_months), key


@pytest.mark.parametrize(
    "key, start, end",
    [
        ("last-30", None, None),
        ("last-month", None, None),
        ("2026-Q3", None, None),
        ("custom", "2026-08-20", "2026-11-11"),
    ],
)
def test_sums_by_each_key_at_once_equal_the_finer_sums_regrouped(
    key, start, end, fiona, sam, openai_account, support_agent
):
    """The overview reads its workload table and its model table in one statement (GROUPING SETS, issue 23): each
    equals the sums by workload × model regrouped by that key, value for value (a cost None where no line of the
    group is priced, a workload of priced and unpriced models, the unattributed group), whether the period is read
    as whole months with days taken away, whole months alone, or days; for everyone and for a member."""
    from finops.core.reporting_period import resolve
    from finops.models import MonthlySpend
    from finops.spend.selectors import spend

    _four_months_imported(openai_account, support_agent, unpriced_support=True)

    today = dt.date(2026, 11, 22)
    period = resolve(
        key, today=today, start=start and dt.date.fromisoformat(start), end=end and dt.date.fromisoformat(end)
    )
    for user in (fiona, sam):
        daily, monthly = spend.visible_spend(user), spend.visible_spend(user, MonthlySpend)
        for beyond in (0, spend.DAILY_READ_MAX_DAYS):
            keys = ("workload_id", "model")
            with CaptureQueriesContext(connection) as queries:
                each = spend.sums_each(daily, monthly, *period.span(), keys, today=today, months_beyond_days=beyond)
            assert len(queries.captured_queries) == 1, (user, key, beyond)
            pairs = spend.sums(daily, monthly, *period.span(), keys, today=today, months_beyond_days=beyond)
            assert pairs, (user, key)
            for name in keys:
                wanted = {row[name]: row for row in spend.regroup(pairs, name)}
                assert {row[name]: row for row in each[name]} == wanted, (user, key, beyond, name)
        if user is fiona:
            assert {r["model"]: r["cost"] for r in each["model"]}["my-model"] is None
            assert {r["workload_id"]: r["cost"] for r in each["workload_id"]}[None] is not None
            assert {r["workload_id"]: r["unpriced_tokens"] for r in each["workload_id"]}[None] > 0


@pytest.mark.parametrize("key", ["last-30", "mtd", "last-month"])
def test_one_pass_by_day_gives_every_tiles_totals_exactly(key, fiona, sam, openai_account, support_agent):
    """The spend pages read their periods' totals (and the month's, on the overview) from one grid by day;
    each equals what period_totals reads from the rollup directly, for everyone and for a member."""
    from finops.core.reporting_period import resolve
    from finops.spend.selectors import day_grid, spend

    _four_months_imported(openai_account, support_agent)

    today = dt.date(2026, 11, 22)
    period = resolve(key, today=today)
    spans = {"now": period.span(), "before": period.compare.span(), **day_grid.month_spans(today)}
    for user in (fiona, sam):
        daily = spend.visible_spend(user)
        grid = day_grid.day_grid(daily, spans, ("provider_id", "charge_category"))
        assert grid is not None
        assert day_grid.grid_span_totals(grid, spans) == spend.period_totals(daily, spans), (user, key)
        # The forecast's days, when the grid holds them (issue 23: the overview reads them from it).
        start, end = spend.forecast_days(today)
        if min(s for s, _ in spans.values()) <= start:
            assert spend.grid_daily_costs(grid, start, end) == spend.daily_costs(daily, start, end), (user, key)
            assert spend.month_forecast(daily, today, grid=grid) == spend.month_forecast(daily, today), (user, key)
    _assert_overview_grid_is_the_daily_grid(spans, (fiona, sam), key)
    # A workload deleted: its rollup rows become unattributed (SET_NULL), in DailySpend only; the overview's rollup
    # has no workload, and its grid reads the unattributed cost from DailySpend, so the tiles still agree.
    support_agent.delete()
    assert spend.period_totals(spend.visible_spend(fiona), spans)["now"].unattributed_cost > 0
    _assert_overview_grid_is_the_daily_grid(spans, (fiona, sam), key)


def _assert_overview_grid_is_the_daily_grid(spans, users, key):
    """The overview's grid (sums from TeamDailySpend, issue 23) equals the grid of the daily rollup row for row, and
    its totals what period_totals reads, for everyone and for a member."""
    from finops.spend.selectors import day_grid, spend

    keys = ("provider_id", "charge_category")
    for user in users:
        daily = spend.visible_spend(user)
        by_team = spend.visible_spend(user, TeamDailySpend)
        grid = day_grid.day_grid(daily, spans, keys, by_team=by_team)
        assert by_team.exists()
        assert sorted(grid, key=_grid_key) == sorted(day_grid.day_grid(daily, spans, keys), key=_grid_key), (user, key)
        assert day_grid.grid_span_totals(grid, spans) == spend.period_totals(daily, spans), (user, key)


def _grid_key(row: dict) -> tuple:
    return (row["day"], row["provider_id"], row["charge_category"])


def _four_months_imported(openai_account, support_agent, *, unpriced_support: bool = False) -> None:
    """Aug .. Nov 2026 of priced and unpriced lines, attributed and not (with `unpriced_support`, a workload of
    priced and unpriced models), the support project ruled to `support_agent` and history re-attributed."""
    rows = ["day,model,input_tokens,output_tokens,cost,project"]
    for n in range(0, 120):
        day = (dt.date(2026, 8, 1) + dt.timedelta(days=n)).isoformat()
        rows += [f"{day},gpt-5-mini,{1000 + n},{n},{n % 5 + 0.5},support", f"{day},my-model,{500 + n},1,,other"]
        rows += [f"{day},my-model,{300 + n},1,,support"] if unpriced_support else []
        rows += [f"{day},gpt-5,{100 + n},2,{n % 3},other"]
    stream = io.BytesIO("\n".join(rows).encode())
    assert usage_file_import(account=openai_account, stream=stream, file_name="months.csv").status == "succeeded"
    AttributionRule.objects.create(workload=support_agent, priority=1, project="support")
    history_reattribute()
