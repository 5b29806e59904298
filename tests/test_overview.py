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
from finops.services.attribution import history_reattribute
from ingest.services import usage_file_import


@pytest.fixture(autouse=True)
def _frozen(time_machine):
    time_machine.move_to(dt.datetime(2026, 11, 22, 12, tzinfo=dt.UTC))


@pytest.fixture
def november(openai_account, support_agent, search_ranker):
    rows = ["day,model,input_tokens,output_tokens,cost,project"]
    for day in range(1, 22):  # Nov 1..21: $10/day on support, $2/day on search, $1/day unattributed
        rows += [f"2026-11-{day:02d},gpt-5-mini,1000000,0,10,support", f"2026-11-{day:02d},gpt-5,100000,0,2,search",
                 f"2026-11-{day:02d},gpt-4o,100000,0,1,other"]
    assert usage_file_import(account=openai_account, stream=io.BytesIO("\n".join(rows).encode()), file_name="nov.csv").status == "succeeded"
    AttributionRule.objects.create(workload=support_agent, priority=1, project="support")
    AttributionRule.objects.create(workload=search_ranker, priority=2, project="search")
    history_reattribute()


def test_the_forecast_adds_the_last_weeks_run_rate_for_the_days_left(client_as, fiona, november):
    forecast = client_as(fiona).get(reverse("overview")).context["forecast"]
    assert forecast.month_to_date == Decimal(13 * 21)
    assert forecast.daily_run_rate == Decimal(13) and forecast.days_left == 9  # Nov 22..30
    assert forecast.month_total == Decimal(13 * 30)


def test_top_workloads_show_their_share_and_how_many_make_80_percent(client_as, fiona, november):
    context = client_as(fiona).get(reverse("overview")).context
    top = context["tables"]["top_workloads"]
    assert [r["label"] for r in top] == ["Support agent", "Search ranker", "Unattributed"]
    assert top[0]["share"] == Decimal(10) / Decimal(13)
    assert context["workloads_to_80"] == 2  # 76.9 % after the first, so the second is needed


def test_unit_costs_are_sum_over_sum(client_as, fiona, november):
    models = {r["label"]: r for r in client_as(fiona).get(reverse("overview")).context["tables"]["models"]}
    # 30 days window covers Nov 1..21 (21 days): $210 over 21M tokens = $10/M
    assert models["gpt-5-mini"]["usd_per_mtok"] == Decimal(10)
    assert models["gpt-5"]["usd_per_mtok"] == Decimal(20)


def test_every_overview_table_downloads_as_csv(client_as, fiona, november):
    for table in ("top_workloads", "providers", "models", "freshness"):
        response = client_as(fiona).get(reverse("overview"), {"csv": table})
        assert response["Content-Type"].startswith("text/csv") and "attachment" in response["Content-Disposition"]
        rows = list(csv.reader(io.StringIO(response.content.decode())))
        assert len(rows) >= 2, table
    models = list(csv.DictReader(io.StringIO(client_as(fiona).get(reverse("overview"), {"csv": "models"}).content.decode())))
    assert {r["Model"]: r["Spend"] for r in models}["gpt-5-mini"] == "210.000000000000000000"


def test_a_member_sees_only_their_workloads_and_no_freshness_table(client_as, sam, november):
    context = client_as(sam).get(reverse("overview")).context
    assert [r["label"] for r in context["tables"]["top_workloads"]] == ["Support agent"]
    assert "freshness" not in context["tables"]
    assert client_as(sam).get(reverse("overview"), {"csv": "freshness"})["Content-Type"].startswith("text/html")


def test_team_and_workload_pages_show_unit_costs_and_download_them(client_as, sam, november):
    team = client_as(sam).get(reverse("team-detail", args=["support"])).context
    assert [r["label"] for r in team["tables"]["workloads"]] == ["Support agent"]
    assert team["tables"]["by_model"][0]["usd_per_mtok"] == Decimal(10)
    assert team["tokens_chart"]["data"][0]["name"] == "Input tokens"
    workload = client_as(sam).get(reverse("workload-detail", args=["support-agent"]))
    assert workload.context["tables"]["by_provider"][0]["label"] == "OpenAI"
    download = client_as(sam).get(reverse("workload-detail", args=["support-agent"]), {"csv": "by_model"})
    assert download.content.decode().splitlines()[1].startswith("gpt-5-mini,210.")
    # Another team's downloads answer 404 like its pages.
    assert client_as(sam).get(reverse("team-detail", args=["search"]), {"csv": "by_model"}).status_code == 404


@pytest.mark.parametrize("today", ["2026-11-03", "2026-11-22", "2026-12-31", "2026-12-01", "2027-03-30"])
def test_the_overview_periods_equal_the_daily_rollup_summed_over_them(today, client_as, fiona, sam, openai_account, support_agent):
    """The same days of last month may come from the monthly rollup minus days the overview reads anyway; early
    in a month, or when last month is shorter, from daily rows. Either way they equal the daily rows summed,
    for someone who sees everything and for a member (whose monthly rows are their teams' only)."""
    from finops.models import DailySpend, MonthlySpend
    from finops.selectors import spend

    start = dt.date(2026, 10, 1)
    rows = ["day,model,input_tokens,output_tokens,cost,project"]
    for n in range(0, 180):  # Oct 2026 .. Mar 2027, a different amount each day; some unpriced, some unattributed
        day = (start + dt.timedelta(days=n)).isoformat()
        rows += [f"{day},gpt-5-mini,{1000 + n},{n},{n % 7 + 0.25},support", f"{day},my-model,{500 + n},1,,other"]
    assert usage_file_import(account=openai_account, stream=io.BytesIO("\n".join(rows).encode()), file_name="y.csv").status == "succeeded"
    AttributionRule.objects.create(workload=support_agent, priority=1, project="support")
    history_reattribute()

    today = dt.date.fromisoformat(today)
    for user in (fiona, sam):
        daily, monthly = spend.visible_spend(user), spend.visible_spend(user, MonthlySpend)
        with CaptureQueriesContext(connection) as queries:
            read = spend.overview(daily, today, recent_days=30, monthly=monthly).periods
        wanted = spend.period_totals(daily, {**spend._month_periods(today), "recent": (today - dt.timedelta(days=30), today)})
        assert read == wanted, (user, today)
        assert read["recent"].cost > 0 and (user is fiona) == (read["recent"].unpriced_tokens > 0)
        # Late in a month, and when last month is shorter, last month's row is read (and the path is exercised).
        monthly_read = any(MonthlySpend._meta.db_table in q["sql"] for q in queries.captured_queries)
        assert monthly_read == (today.isoformat() in ("2026-11-22", "2026-12-31", "2027-03-30")), today
    assert DailySpend.objects.exists()
