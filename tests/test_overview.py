"""The overview's figures: forecast, shares of spend, $/M by provider and model, freshness, CSV downloads, on one
November built once for the module (tests/data_once.py). Any period's sums: tests/test_overview_periods.py."""

import csv
import datetime as dt
import io
from decimal import Decimal
from types import SimpleNamespace

import pytest
import time_machine
from django.urls import reverse

from finops.models import AttributionRule, User
from finops.spend.services.attribution import history_reattribute
from ingest.services import usage_file_import
from tests.conftest import (
    make_openai_account,
    make_search_ranker,
    make_search_team,
    make_support_agent,
    make_support_team,
    make_user,
)
from tests.data_once import built_once, world_rows

NOW = dt.datetime(2026, 11, 22, 12, tzinfo=dt.UTC)


@pytest.fixture(autouse=True)
def _frozen(time_machine):
    time_machine.move_to(NOW)


def _build_november(openai_account, support_agent, search_ranker):
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


@pytest.fixture(scope="module")
def world(django_db_setup, django_db_blocker):
    """The organisation and its November, built once for the module (tests/data_once.py): every test reads it."""
    with built_once(django_db_blocker), time_machine.travel(NOW):
        support_team = make_support_team()
        built = SimpleNamespace(
            fiona=make_user("fiona", User.Role.FINANCE),
            sam=make_user("sam", User.Role.MEMBER, team=support_team),
        )
        _build_november(make_openai_account(), make_support_agent(support_team), make_search_ranker(make_search_team()))
        yield built


@pytest.fixture
def november(world, db):
    """The module's November is there (built once by `world`)."""


fiona, sam = world_rows("fiona", "sam")


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
