"""Explore over more than 90 days reads whole months from the monthly rollup and the edges from the daily one:
its table is exactly the daily rollup summed over [start, end), whichever way each edge month is read."""

import datetime as dt
import io
from csv import DictReader
from decimal import Decimal
from types import SimpleNamespace

import pytest
from django.db.models import F, Sum
from django.urls import reverse

from finops.core import display
from finops.models import AttributionRule, DailySpend, User
from finops.spend.selectors import periods, spend
from finops.spend.selectors.explore import explore_rows
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


def _build_year(openai_account, support_agent, search_ranker):
    """Spend on every day from 2025-12-20 to 2026-05-10, distinct per day and project, and lines that sit only
    in days a period leaves out (gpt-4.1 on 2026-01-03, o3 on 2026-05-09)."""
    rows = ["day,model,input_tokens,output_tokens,cost,project"]
    day = dt.date(2025, 12, 20)
    while day < dt.date(2026, 5, 10):
        n = day.toordinal() % 97
        rows += [
            f"{day},gpt-5-mini,{1000 + n},{10 + n},{Decimal(n) / 8 + 1},support",
            f"{day},gpt-5,{2000 + n},{20 + n},{Decimal(n) / 16 + 2},search",
            f"{day},gpt-4o,{300 + n},{3},{Decimal('0.333333333333333333')},other",
        ]
        day += dt.timedelta(days=1)
    rows += [
        "2026-01-03,gpt-4.1,100,10,5.5,other",
        "2026-05-09,o3,100,10,6.25,search",
        "2026-02-10,my-private-model,7,7,,support",
    ]
    run = usage_file_import(account=openai_account, stream=io.BytesIO("\n".join(rows).encode()), file_name="year.csv")
    assert run.status == "succeeded", run.error
    AttributionRule.objects.create(workload=support_agent, priority=1, project="support")
    AttributionRule.objects.create(workload=search_ranker, priority=2, project="search")
    history_reattribute()


@pytest.fixture(scope="module")
def world(django_db_setup, django_db_blocker):
    """The organisation and its year of spend, built once for the module (tests/data_once.py): every test reads
    it."""
    with built_once(django_db_blocker):
        support_team = make_support_team()
        built = SimpleNamespace(
            support_agent=make_support_agent(support_team),
            search_ranker=make_search_ranker(make_search_team()),
            fiona=make_user("fiona", User.Role.FINANCE),
            sam=make_user("sam", User.Role.MEMBER, team=support_team),
            openai_account=make_openai_account(),
        )
        _build_year(built.openai_account, built.support_agent, built.search_ranker)
        yield built


@pytest.fixture
def year(world, db):
    """The module's year of spend is there (built once by `world`)."""


fiona, sam = world_rows("fiona", "sam")


def summed_daily(start, end, key, **filters):
    """The reference: DailySpend over [start, end) summed per group in SQL (a group with no priced line has no
    cost: SQL's SUM of NULLs, never 0)."""
    rows = DailySpend.objects.filter(day__gte=start, day__lt=end, **filters).values(group=F(key))
    return {
        r["group"]: (r["cost"], r["tokens"], r["requests"])
        for r in rows.annotate(cost=Sum("reporting_cost"), tokens=spend.TOKEN_SUM, requests=Sum("requests")).order_by()
    }


PERIODS = [
    (
        dt.date(2025, 12, 25),
        dt.date(2026, 5, 8),
        dt.date(2026, 5, 8),
    ),  # start edge read by days, end edge as May minus its days
    (
        dt.date(2026, 1, 4),
        dt.date(2026, 5, 9),
        dt.date(2026, 6, 1),
    ),  # January minus Jan 1–3 (gpt-4.1 nets out), May by days
    (dt.date(2025, 12, 1), dt.date(2026, 5, 1), dt.date(2026, 5, 1)),  # whole months only
    (dt.date(2025, 12, 31), dt.date(2026, 4, 2), dt.date(2026, 4, 2)),  # one day at each edge
]


@pytest.mark.parametrize("start,end,today", PERIODS)
@pytest.mark.parametrize("group_by,key", [("model", "model"), ("workload", "workload__name"), ("basis", "cost_basis")])
def test_a_long_period_gives_exactly_the_daily_rollups_sums(fiona, year, start, end, today, group_by, key):
    table, points = explore_rows(user=fiona, start=start, end=end, filters={}, group_by=group_by, today=today)
    assert {r["group"]: (r["cost"], r["tokens"], r["requests"]) for r in table} == summed_daily(start, end, key)
    assert all(p["day"].day == 1 for p in points)  # monthly points
    assert sum((p["cost"] or 0 for p in points), Decimal(0)) == sum(r["cost"] or 0 for r in table)


def test_both_edge_readings_are_used_and_a_group_only_in_the_days_left_out_is_absent(fiona, year):
    how = periods.plan(dt.date(2026, 1, 4), dt.date(2026, 5, 9), today=dt.date(2026, 6, 1))
    assert dt.date(2026, 1, 1) in how.months and how.subtract_days == [(dt.date(2026, 1, 1), dt.date(2026, 1, 4))]
    assert how.add_days == [(dt.date(2026, 5, 1), dt.date(2026, 5, 9))]
    table, _ = explore_rows(
        user=fiona,
        start=dt.date(2026, 1, 4),
        end=dt.date(2026, 5, 9),
        filters={},
        group_by="model",
        today=dt.date(2026, 6, 1),
    )
    assert "gpt-4.1" not in {r["group"] for r in table}  # its only line is on Jan 3: January minus Jan 1–3
    assert "o3" not in {r["group"] for r in table}  # May 9 is outside [.., May 9)


def test_filters_and_a_members_scope_apply_to_both_rollups(sam, year):
    start, end = dt.date(2025, 12, 25), dt.date(2026, 5, 8)
    table, _ = explore_rows(user=sam, start=start, end=end, filters={"model": "gpt-5-mini"}, group_by="team", today=end)
    assert {r["group"]: (r["cost"], r["tokens"], r["requests"]) for r in table} == {
        "Support Platform": summed_daily(start, end, "team__slug", model="gpt-5-mini", team__slug="support")["support"]
    }
    unattributed, _ = explore_rows(
        user=sam, start=start, end=end, filters={"workload": "-"}, group_by="model", today=end
    )
    assert unattributed == []  # a member never sees unattributed spend


def test_the_page_says_the_chart_is_monthly_and_the_csv_has_the_exact_totals(client_as, fiona, year):
    query = {"start": "2025-12-25", "end": "2026-05-08", "group_by": "workload"}
    page = client_as(fiona).get(reverse("explore"), query)
    assert page.context["daily_points"] is False and "Monthly totals" in page.content.decode()
    xs = sorted({x for trace in page.context["chart"]["data"] for x in trace["x"]})
    assert xs == [
        "2025-12-01",
        "2026-01-01",
        "2026-02-01",
        "2026-03-01",
        "2026-04-01",
        "2026-05-01",
    ]  # the months' first days
    assert page.context["chart"]["layout"]["xaxis"]["tickformat"] == "%b %Y"  # labelled "Dec 2025", not "Dec 1"
    csv = client_as(fiona).get(reverse("explore"), {**query, "csv": "1"}).content.decode()
    expected = summed_daily(dt.date(2025, 12, 25), dt.date(2026, 5, 8), "workload__name")
    assert {row["Workload"]: row["Spend"] for row in DictReader(io.StringIO(csv))} == {
        ("Unattributed" if k is None else k): display.csv_decimal(v[0]) for k, v in expected.items()
    }
    short = client_as(fiona).get(reverse("explore"), {**query, "start": "2026-02-07"})  # exactly 90 days: daily
    assert short.context["daily_points"] is True and "Monthly totals" not in short.content.decode()
    assert short.context["chart"]["layout"].get("xaxis", {}).get("tickformat") != "%b %Y"


def test_grouped_by_day_a_long_period_keeps_one_row_per_day(fiona, year):
    table, points = explore_rows(
        user=fiona, start=dt.date(2026, 1, 1), end=dt.date(2026, 5, 1), filters={}, group_by="day"
    )
    assert len(table) == 120 and table[0]["label"] == "2026-01-01" and len(points) == 120
    assert {r["label"]: r["cost"] for r in table}["2026-02-10"] == summed_daily("2026-02-10", "2026-02-11", "day")[
        dt.date(2026, 2, 10)
    ][0]


def test_a_member_of_no_team_sees_a_long_period_empty(year):
    """Their rows are a filter nothing matches (no team): each part of the period reads nothing, and so does the
    whole (the parts are added up in one statement on Postgres: finops.spend.selectors.periods.added)."""
    lou = make_user("lou", User.Role.MEMBER)
    start, end = dt.date(2026, 1, 4), dt.date(2026, 5, 9)  # months, days added and days taken away
    table, points = explore_rows(
        user=lou, start=start, end=end, filters={}, group_by="model", today=dt.date(2026, 6, 1)
    )
    assert table == [] and points == []
