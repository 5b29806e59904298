"""The overview's figures: forecast, shares of spend, $/M by provider and model, freshness, CSV downloads."""

import csv
import datetime as dt
import io
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from finops.models import AttributionRule
from finops.spend.services.attribution import history_reattribute
from ingest.services import usage_file_import


@pytest.fixture(autouse=True)
def _frozen(time_machine):
    time_machine.move_to(dt.datetime(2026, 11, 22, 12, tzinfo=dt.UTC))


@pytest.fixture
def november(openai_account, support_agent, search_ranker):
    rows = ["day,model,input_tokens,output_tokens,cost,project"]
    for day in range(1, 22):  # Nov 1..21: $10/day on support, $2/day on search, $1/day unattributed
        rows += [
            f"2026-11-{day:02d},gpt-5-mini,1000000,0,10,support",
            f"2026-11-{day:02d},gpt-5,100000,0,2,search",
            f"2026-11-{day:02d},gpt-4o,100000,0,1,other",
        ]
    assert (
        usage_file_import(
            account=openai_account, stream=io.BytesIO("\n".join(rows).encode()), file_name="nov.csv"
        ).status
        == "succeeded"
    )
    AttributionRule.objects.create(workload=support_agent, priority=1, project="support")
    AttributionRule.objects.create(workload=search_ranker, priority=2, project="search")
    history_reattribute()


def test_the_forecast_is_the_month_to_date_and_the_days_left_by_finops_forecast(client_as, fiona, november):
    forecast = client_as(fiona).get(reverse("overview")).context["forecast"]
    assert forecast.actual == Decimal(13 * 21)
    assert forecast.days_left == 9  # Nov 22..30
    assert forecast.total == Decimal(13 * 30)  # $13 every day: no rhythm, no trend, so $13 a day for the 9 left


def test_top_workloads_show_their_share_and_how_many_make_80_percent(client_as, fiona, november):
    context = client_as(fiona).get(reverse("overview")).context
    top = context["tables"]["top_workloads"]
    assert [r["label"] for r in top] == ["Support agent", "Search ranker", "Unattributed"]
    assert top[0]["share"] == Decimal(10) / Decimal(13)
    assert context["workloads_to_80"] == 2  # 76.9 % after the first, so the second is needed


def test_unit_costs_are_sum_over_sum(client_as, fiona, november):
    models = {r["model"]: r for r in client_as(fiona).get(reverse("overview")).context["tables"]["by_model"]}
    # 30 days window covers Nov 1..21 (21 days): $210 over 21M tokens = $10/M
    assert models["gpt-5-mini"]["usd_per_mtok"] == Decimal(10)
    assert models["gpt-5-mini"]["label"] == "GPT-5 mini"
    assert models["gpt-5"]["usd_per_mtok"] == Decimal(20)


def test_every_overview_table_downloads_as_csv(client_as, fiona, november):
    for table in ("top_workloads", "by_provider", "by_model", "freshness"):
        response = client_as(fiona).get(reverse("overview"), {"csv": table})
        assert response["Content-Type"].startswith("text/csv") and "attachment" in response["Content-Disposition"]
        rows = list(csv.reader(io.StringIO(response.content.decode())))
        assert len(rows) >= 2, table
    models = list(
        csv.DictReader(io.StringIO(client_as(fiona).get(reverse("overview"), {"csv": "by_model"}).content.decode()))
    )
    by_id = {r["Model id"]: r for r in models}
    # Plain decimals rounded to what providers bill (micro-units, trailing zeros dropped to cents), a currency.
    assert by_id["gpt-5-mini"]["Spend"] == "210.00" and by_id["gpt-5-mini"]["Currency"] == "USD"
    assert by_id["gpt-5-mini"]["Model"] == "GPT-5 mini" and by_id["gpt-5-mini"]["USD/M tokens"] == "10.00"


def test_a_member_sees_only_their_workloads_and_no_freshness_table(client_as, sam, november):
    context = client_as(sam).get(reverse("overview")).context
    assert [r["label"] for r in context["tables"]["top_workloads"]] == ["Support agent"]
    assert "freshness" not in context["tables"]
    assert client_as(sam).get(reverse("overview"), {"csv": "freshness"})["Content-Type"].startswith("text/html")


def test_team_and_workload_pages_show_unit_costs_and_download_them(client_as, sam, november):
    team = client_as(sam).get(reverse("team-detail", args=["support"])).context
    assert [r["label"] for r in team["tables"]["workloads"]] == ["Support agent"]
    assert team["tables"]["by_model"][0]["usd_per_mtok"] == Decimal(10)
    assert team["tables"]["workloads"][0]["sla"] == "4 s"
    assert team["tokens_chart"]["data"][0]["name"] == "Input tokens"
    workload = client_as(sam).get(reverse("workload-detail", args=["support-agent"]))
    assert workload.context["tables"]["by_provider"][0]["label"] == "OpenAI"
    download = client_as(sam).get(reverse("workload-detail", args=["support-agent"]), {"csv": "by_model"})
    assert download.content.decode().splitlines()[1].startswith("GPT-5 mini,gpt-5-mini,210.00,0,")
    # Another team's downloads answer 404 like its pages.
    assert client_as(sam).get(reverse("team-detail", args=["search"]), {"csv": "by_model"}).status_code == 404


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


@pytest.mark.parametrize("key", ["last-30", "mtd", "last-month"])
def test_one_pass_by_day_gives_every_tiles_totals_exactly(key, fiona, sam, openai_account, support_agent):
    """The spend pages read their periods' totals (and the month's, on the overview) from one grid by day;
    each equals what period_totals reads from the rollup directly, for everyone and for a member."""
    from finops.core.reporting_period import resolve
    from finops.spend.selectors import spend

    rows = ["day,model,input_tokens,output_tokens,cost,project"]
    for n in range(0, 120):  # Aug .. Nov 2026: priced, unpriced, attributed and not
        day = (dt.date(2026, 8, 1) + dt.timedelta(days=n)).isoformat()
        rows += [
            f"{day},gpt-5-mini,{1000 + n},{n},{n % 5 + 0.5},support",
            f"{day},my-model,{500 + n},1,,other",
            f"{day},gpt-5,{100 + n},2,{n % 3},other",
        ]
    assert (
        usage_file_import(account=openai_account, stream=io.BytesIO("\n".join(rows).encode()), file_name="g.csv").status
        == "succeeded"
    )
    AttributionRule.objects.create(workload=support_agent, priority=1, project="support")
    history_reattribute()

    today = dt.date(2026, 11, 22)
    period = resolve(key, today=today)
    spans = {"now": period.span(), "before": period.compare.span(), **spend.month_spans(today)}
    for user in (fiona, sam):
        daily = spend.visible_spend(user)
        grid = spend.day_grid(daily, spans, ("provider_id", "charge_category"))
        assert grid is not None
        assert {name: spend.grid_totals(grid, *span) for name, span in spans.items()} == spend.period_totals(
            daily, spans
        ), (user, key)
        # The forecast's days, when the grid holds them (issue 23: the overview reads them from it).
        start, end = spend.forecast_days(today)
        if min(s for s, _ in spans.values()) <= start:
            assert spend.grid_daily_costs(grid, start, end) == spend.daily_costs(daily, start, end), (user, key)
            assert spend.month_forecast(daily, today, grid=grid) == spend.month_forecast(daily, today), (user, key)
