"""Explore: any period, filters and grouping, chart + table + CSV, scoped to what the viewer may see."""

import csv
import datetime as dt
import io
from collections import defaultdict
from decimal import Decimal
from types import SimpleNamespace

import pytest
import time_machine
from django.urls import reverse

from finops.models import AttributionRule, UsageLine, User
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

PROVIDER_PRICE = Decimal(13 * 21)
NOW = dt.datetime(2026, 11, 22, 12, tzinfo=dt.UTC)


@pytest.fixture(autouse=True)
def _frozen(time_machine):
    time_machine.move_to(NOW)


def _build_november(openai_account, support_agent, search_ranker):
    """Nov 1..21: $10/day on support (key-support, user ana, env=prod and app=chat), $2/day on search
    (key-search, ben, env=dev), $1/day unattributed (key-other, no user, no tags); and on Nov 12 usage of a
    model nobody has a price for, on support: 340k tokens of unknown cost."""
    rows = ["day,model,input_tokens,output_tokens,cost,project,api_key,user,tags"]
    for day in range(1, 22):
        rows += [
            f"2026-11-{day:02d},gpt-5-mini,1000000,0,10,support,key-support,ana,env=prod;app=chat",
            f"2026-11-{day:02d},gpt-5,100000,0,2,search,key-search,ben,env=dev",
            f"2026-11-{day:02d},gpt-4o,100000,0,1,other,key-other,,",
        ]
    rows += ["2026-11-12,my-private-model,300000,40000,,support,key-support,ana,env=prod"]
    run = usage_file_import(account=openai_account, stream=io.BytesIO("\n".join(rows).encode()), file_name="nov.csv")
    assert run.status == "succeeded", run.error
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
            openai_account=make_openai_account(),
        )
        _build_november(built.openai_account, make_support_agent(support_team), make_search_ranker(make_search_team()))
        yield built


@pytest.fixture
def november(world, db):
    """The module's November is there (built once by `world`)."""


fiona, sam, openai_account = world_rows("fiona", "sam", "openai_account")


def explore(client, **query):
    return client.get(reverse("explore"), query)


def csv_rows(response) -> list[dict]:
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    return list(csv.DictReader(io.StringIO(response.content.decode())))


def test_the_default_is_the_last_30_days_by_provider(client_as, fiona, november):
    context = explore(client_as(fiona)).context
    assert [r["label"] for r in context["table"]] == ["OpenAI"]
    assert context["table"][0]["cost"] == PROVIDER_PRICE
    assert context["table"][0]["unpriced_tokens"] == 340_000


def test_an_empty_query_shows_the_period_in_effect_in_the_day_boxes(client_as, fiona, november):
    page = explore(client_as(fiona))
    assert page.context["form"]["start"].value() == "2026-10-23" and page.context["form"]["end"].value() == "2026-11-22"
    html = page.content.decode()
    assert 'value="2026-10-23"' in html and 'value="2026-11-22"' in html
    assert page.context["form"]["group_by"].value() == "provider"


def test_grouping_by_workload_names_the_unattributed_group(client_as, fiona, november):
    table = explore(client_as(fiona), group_by="workload", start="2026-11-01", end="2026-11-02").context["table"]
    assert {r["label"]: r["cost"] for r in table} == {
        "Support agent": Decimal(10),
        "Search ranker": Decimal(2),
        "Unattributed": Decimal(1),
    }
    assert [r["label"] for r in table if r["muted"]] == ["Unattributed"]


def test_grouped_by_day_the_chart_is_one_spend_series(client_as, fiona, november):
    context = explore(client_as(fiona), group_by="day", start="2026-11-01", end="2026-11-22").context
    traces = context["chart"]["data"]
    assert [trace["name"] for trace in traces] == ["Spend"]
    assert len(traces[0]["x"]) == 21 and traces[0]["x"][0] == "2026-11-01" and traces[0]["y"][0] == 13.0
    assert len(context["table"]) == 21  # the table keeps a row per day


def test_filters_narrow_the_rows_and_the_url_carries_them(client_as, fiona, november):
    context = explore(client_as(fiona), group_by="model", team="support", start="2026-11-01", end="2026-11-08").context
    assert [(r["label"], r["cost"]) for r in context["table"]] == [("GPT-5 mini", Decimal(70))]
    assert "team=support" in context["query"]
    unattributed = explore(
        client_as(fiona), group_by="model", workload="-", start="2026-11-01", end="2026-11-08"
    ).context["table"]
    assert [(r["label"], r["cost"]) for r in unattributed] == [("GPT-4o", Decimal(7))]


def test_models_read_by_name_on_the_page_and_by_id_in_the_csv(client_as, fiona, november):
    query = {"group_by": "model", "start": "2026-11-01", "end": "2026-11-22"}
    html = explore(client_as(fiona), **query).content.decode()
    assert "GPT-5 mini" in html and "My Private Model" in html
    rows = csv_rows(explore(client_as(fiona), **query, csv="1"))
    assert {r["Model"]: r["Model id"] for r in rows}["GPT-5 mini"] == "gpt-5-mini"


def test_the_table_downloads_as_csv_with_the_same_figures(client_as, fiona, november):
    rows = csv_rows(explore(client_as(fiona), group_by="day", start="2026-11-01", end="2026-11-03", csv="1"))
    assert [(r["Day"], r["Spend"], r["Tokens"], r["Currency"]) for r in rows] == [
        ("2026-11-01", "13.00", "1200000", "USD"),
        ("2026-11-02", "13.00", "1200000", "USD"),
    ]
    assert [r["Requests"] for r in rows] == ["", ""]  # a usage CSV reports no requests: unknown, not 0


def test_the_csv_link_on_the_page_gives_the_tables_csv(client_as, fiona, november):
    page = explore(client_as(fiona), group_by="team", start="2026-11-01", end="2026-11-08")
    link = page.context["spec"].name
    assert f"csv={link}" in page.content.decode()
    assert {
        r["Team"]
        for r in csv_rows(explore(client_as(fiona), group_by="team", start="2026-11-01", end="2026-11-08", csv=link))
    } == {"Support Platform", "Search", "Unattributed"}


def test_unknown_cost_reads_as_a_dash_with_its_unpriced_tokens_never_as_zero_dollars(client_as, fiona, november):
    page = explore(client_as(fiona), basis="unpriced", start="2026-11-01", end="2026-11-22")
    [row] = page.context["table"]
    assert row["cost"] is None and row["unpriced_tokens"] == 340_000 and row["usd_per_mtok"] is None
    html = page.content.decode()
    assert "$0.00" not in html and "340.0k tokens unpriced" in html
    assert 'data-testid="no-known-cost"' in html  # no chart of zeros


def test_the_csv_leaves_an_unknown_cost_empty_with_the_unpriced_tokens_beside_it(client_as, fiona, november):
    [row] = csv_rows(explore(client_as(fiona), basis="unpriced", start="2026-11-01", end="2026-11-22", csv="1"))
    assert row["Spend"] == "" and row["Unpriced tokens"] == "340000" and row["USD/M tokens"] == ""
    support = {
        r["Workload"]: r
        for r in csv_rows(explore(client_as(fiona), group_by="workload", start="2026-11-01", end="2026-11-22", csv="1"))
    }["Support agent"]
    # $/M over the priced tokens only: $210 over 21M priced tokens, the 340k unpriced ones beside it
    assert (support["Spend"], support["Unpriced tokens"], support["USD/M tokens"]) == ("210.00", "340000", "10.00")


def test_bad_days_or_groupings_are_explained_beside_their_fields(client_as, fiona, november):
    page = explore(client_as(fiona), start="2026-13-01", group_by="nonsense")
    html = page.content.decode()
    assert page.status_code == 200 and page.context.get("table") is None
    assert 'data-error-for="start"' in html and "Enter a day as YYYY-MM-DD." in html
    assert 'data-error-for="group_by"' in html and "nonsense is not one of the available choices" in html
    assert "Fix the query above" in html


def test_a_reversed_period_is_explained(client_as, fiona, november):
    page = explore(client_as(fiona), start="2026-11-05", end="2026-11-01").content.decode()
    assert "must be after the start day" in page and 'data-testid="form-errors"' in page


@pytest.mark.parametrize(
    "query",
    [
        {"start": "2026-13-01"},
        {"group_by": "nonsense"},
        {"start": "2026-11-05", "end": "2026-11-01"},
        {"group_by": "tag"},
        {"group_by": "api_key", "start": "2026-01-01", "end": "2026-11-01"},
    ],
)
def test_a_bad_csv_query_answers_400_with_a_plain_message(client_as, fiona, november, query):
    response = explore(client_as(fiona), **query, csv="1")
    assert response.status_code == 400 and response["Content-Type"].startswith("text/plain")
    assert (
        response.content.decode().startswith("Bad Explore query:\n")
        and len(response.content.decode().splitlines()) >= 2
    )


def lines_summed(key, start="2026-11-01", end="2026-11-22", **filters) -> dict:
    """The reference: every usage line of [start, end) read one by one and summed per key(line)."""
    totals = defaultdict(lambda: {"cost": None, "tokens": 0, "unpriced_tokens": 0})
    lines = UsageLine.objects.filter(period_start__gte=f"{start}T00:00Z", period_start__lt=f"{end}T00:00Z", **filters)
    for line in lines.select_related("tag_set", "signature"):
        total = totals[key(line)]
        tokens = line.input_tokens + line.cached_input_tokens + line.cache_write_tokens + line.output_tokens
        total["tokens"] += tokens
        if line.reporting_cost is None:
            total["unpriced_tokens"] += tokens
        else:
            total["cost"] = (total["cost"] or 0) + line.reporting_cost
    return dict(totals)


def grouped(table) -> dict:
    return {
        r["group"]: {"cost": r["cost"], "tokens": r["tokens"], "unpriced_tokens": r["unpriced_tokens"]} for r in table
    }


@pytest.mark.parametrize(
    "group_by,field", [("api_key", "api_key_ref"), ("project", "project_ref"), ("user", "user_ref")]
)
def test_grouping_by_api_key_project_or_user_equals_summing_the_lines(client_as, fiona, november, group_by, field):
    table = explore(client_as(fiona), group_by=group_by, start="2026-11-01", end="2026-11-22").context["table"]
    assert grouped(table) == lines_summed(lambda line: getattr(line, field))
    assert len(table) == 3


def test_grouping_by_a_tag_key_puts_lines_without_it_in_their_own_group(client_as, fiona, november):
    page = explore(client_as(fiona), group_by="tag", tag="env", start="2026-11-01", end="2026-11-22")
    table = page.context["table"]
    assert grouped(table) == lines_summed(lambda line: line.tag_set.tags.get("env"))
    assert {r["label"] for r in table} == {"prod", "dev", "(no env tag)"}
    assert "(no env tag)" in page.content.decode() and page.context["group_label"] == "Tag env"


def test_line_groupings_honour_the_filters_and_name_missing_refs(client_as, fiona, november):
    unattributed = explore(
        client_as(fiona), group_by="user", workload="-", start="2026-11-01", end="2026-11-22"
    ).context["table"]
    assert [(r["label"], r["cost"], r["muted"]) for r in unattributed] == [("(no user)", Decimal(21), True)]
    by_model = explore(
        client_as(fiona), group_by="api_key", model="gpt-5", start="2026-11-01", end="2026-11-08"
    ).context["table"]
    assert [(r["label"], r["cost"]) for r in by_model] == [("key-search", Decimal(14))]
    unpriced = explore(
        client_as(fiona), group_by="project", basis="unpriced", start="2026-11-01", end="2026-11-22"
    ).context["table"]
    assert [(r["label"], r["cost"], r["unpriced_tokens"]) for r in unpriced] == [("support", None, 340_000)]


def test_line_groupings_by_month_have_monthly_points(fiona, november):
    table, points = explore_rows(
        user=fiona, start=dt.date(2026, 8, 23), end=dt.date(2026, 11, 22), filters={}, group_by="api_key"
    )
    assert {p["day"] for p in points} == {dt.date(2026, 11, 1)}  # 91 days: monthly points
    assert grouped(table) == lines_summed(lambda line: line.api_key_ref)


def test_a_member_cannot_group_another_teams_lines_in(client_as, sam, november):
    for group_by in ("api_key", "project", "user"):
        table = explore(client_as(sam), group_by=group_by, start="2026-11-01", end="2026-11-22").context["table"]
        assert len(table) == 1, group_by
    table = explore(client_as(sam), group_by="tag", tag="env", start="2026-11-01", end="2026-11-22").context["table"]
    assert grouped(table) == lines_summed(lambda line: line.tag_set.tags.get("env"), signature__team__slug="support")
    assert explore(client_as(sam), group_by="api_key", team="search").context["table"] == []
    assert explore(client_as(sam), group_by="api_key", workload="-").context["table"] == []


def test_line_groupings_refuse_a_period_over_92_days(client_as, fiona, november):
    page = explore(client_as(fiona), group_by="project", start="2026-08-01", end="2026-11-22")
    assert page.context.get("table") is None
    assert "at most 92 days (this one has 113)" in page.content.decode()
    assert explore(client_as(fiona), group_by="project", start="2026-08-22", end="2026-11-22").context[
        "table"
    ]  # 92 days


def test_grouping_by_tag_needs_a_tag_key(client_as, fiona, november):
    html = explore(client_as(fiona), group_by="tag").content.decode()
    assert 'data-error-for="tag"' in html and "Name the tag key" in html


def test_a_member_explores_only_their_teams_spend(client_as, sam, november):
    table = explore(client_as(sam), group_by="team").context["table"]
    assert [(r["label"], r["cost"]) for r in table] == [("Support Platform", Decimal(210))]
    assert explore(client_as(sam), group_by="team", team="search").context["table"] == []


def test_the_filter_lists_show_names_and_keep_slugs_as_values(client_as, fiona, openai_account):
    # A model of its own, imported on top of the module's November (rolled back after the test).
    csv = "day,model,input_tokens,output_tokens,cost\n2026-11-20,claude-sonnet-4-5,10,10,1.00\n"
    usage_file_import(account=openai_account, stream=io.BytesIO(csv.encode()), file_name="u.csv")
    html = client_as(fiona).get(reverse("explore")).content.decode()
    assert '<option value="openai">OpenAI</option>' in html
    assert '<option value="claude-sonnet-4-5">Claude Sonnet 4.5</option>' in html
    assert '<option value="billed">Billed</option>' in html


def test_the_model_filter_lists_each_model_once_in_the_databases_order(fiona, november):
    """choices() for someone who sees everything: the skip scan (one recursive statement) finds exactly the
    distinct models of the rollup, in Postgres' order, the empty model ("no model") included when there is one."""
    from finops.core import access
    from finops.models import MonthlySpend
    from finops.spend.selectors.explore import choices

    assert access.sees_everything(fiona)
    distinct = list(MonthlySpend.objects.order_by("model").values_list("model", flat=True).distinct())
    assert len(distinct) > 1 and choices(fiona)["model"] == distinct
