"""Explore: any period, filters and grouping, chart + table + CSV, scoped to what the viewer may see."""

import csv
import io
from decimal import Decimal

import pytest
from django.urls import reverse

from tests.test_overview import _frozen, november  # noqa: F401 - shared fixtures


def explore(client, **query):
    return client.get(reverse("explore"), query)


def test_the_default_is_the_last_30_days_by_provider(client_as, fiona, november):
    context = explore(client_as(fiona)).context
    assert [r["label"] for r in context["table"]] == ["OpenAI"]
    assert context["table"][0]["cost"] == Decimal(13 * 21)


def test_grouping_by_workload_names_the_unattributed_group(client_as, fiona, november):
    table = explore(client_as(fiona), group_by="workload", start="2026-11-01", end="2026-11-02").context["table"]
    assert {r["label"]: r["cost"] for r in table} == {"Support agent": Decimal(10), "Search ranker": Decimal(2), "Unattributed": Decimal(1)}


def test_filters_narrow_the_rows_and_the_url_carries_them(client_as, fiona, november):
    context = explore(client_as(fiona), group_by="model", team="support", start="2026-11-01", end="2026-11-08").context
    assert [(r["label"], r["cost"]) for r in context["table"]] == [("gpt-5-mini", Decimal(70))]
    assert "team=support" in context["query"]
    unattributed = explore(client_as(fiona), group_by="model", workload="-", start="2026-11-01", end="2026-11-08").context["table"]
    assert [(r["label"], r["cost"]) for r in unattributed] == [("gpt-4o", Decimal(7))]


def test_the_table_downloads_as_csv_with_the_same_figures(client_as, fiona, november):
    response = explore(client_as(fiona), group_by="day", start="2026-11-01", end="2026-11-03", csv="1")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [(r["Day"], r["Spend"]) for r in rows] == [("2026-11-01", "13.000000000000000000"), ("2026-11-02", "13.000000000000000000")]


def test_a_reversed_period_is_explained(client_as, fiona, november):
    page = explore(client_as(fiona), start="2026-11-05", end="2026-11-01").content.decode()
    assert "must be after the start day" in page


def test_a_member_explores_only_their_teams_spend(client_as, sam, november):
    table = explore(client_as(sam), group_by="team").context["table"]
    assert [(r["label"], r["cost"]) for r in table] == [("Support Platform", Decimal(210))]
    assert explore(client_as(sam), group_by="team", team="search").context["table"] == []
