"""The spend pages finance reads (issue 9): unknown cost is never $0, any period on every page, exact tables,
non-usage charges labelled, and the CSV of every table carries the page's columns."""

import csv
import datetime as dt
import io
from decimal import Decimal
from pathlib import Path
from types import SimpleNamespace

import pytest
import time_machine
from django.urls import reverse

from finops.models import Account, AttributionRule, Provider, User, Workload
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

FIXTURES = Path(__file__).parent / "fixtures"
NOW = dt.datetime(2026, 11, 22, 12, tzinfo=dt.UTC)


@pytest.fixture(autouse=True)
def _frozen(time_machine):
    time_machine.move_to(NOW)


def _build_usage(openai_account, support_agent, search_ranker, router):
    """October and November: support $10/day priced; search $2/day priced plus an unpriced fine-tune on some
    days (partly priced); the router only an in-house fine-tune nobody has a price for (unknown cost)."""
    rows = ["day,model,input_tokens,output_tokens,cost,project"]
    day = dt.date(2026, 10, 1)
    while day < dt.date(2026, 11, 22):
        rows += [
            f"{day},gpt-5-mini,1000000,0,10,support",
            f"{day},gpt-5,100000,0,2,search",
            f"{day},acme-router-ft-8b,2000000,1000000,,router",
        ]
        if day.day % 2:
            rows.append(f"{day},acme-search-ft,500000,0,,search")
        day += dt.timedelta(days=1)
    assert (
        usage_file_import(account=openai_account, stream=io.BytesIO("\n".join(rows).encode()), file_name="u.csv").status
        == "succeeded"
    )
    for priority, (workload, project) in enumerate(
        ((support_agent, "support"), (search_ranker, "search"), (router, "router")), 1
    ):
        AttributionRule.objects.create(workload=workload, priority=priority, project=project)
    history_reattribute()


@pytest.fixture(scope="module")
def world(django_db_setup, django_db_blocker):
    """The organisation and its usage, built once for the module (tests/data_once.py): every test reads it."""
    with built_once(django_db_blocker), time_machine.travel(NOW):
        support_team = make_support_team()
        built = SimpleNamespace(
            support_agent=make_support_agent(support_team),
            search_ranker=make_search_ranker(make_search_team()),
            router=Workload.objects.create(
                team=support_team, name="Ticket router (fine-tune)", slug="ticket-router", latency_profile="realtime"
            ),
            fiona=make_user("fiona", User.Role.FINANCE),
            sam=make_user("sam", User.Role.MEMBER, team=support_team),
            openai_account=make_openai_account(),
        )
        _build_usage(built.openai_account, built.support_agent, built.search_ranker, built.router)
        yield built


@pytest.fixture
def usage(world, db):
    """The module's usage is there (built once by `world`)."""


fiona, sam = world_rows("fiona", "sam")


def _csv(response) -> list[dict]:
    assert response["Content-Type"].startswith("text/csv")
    return list(csv.DictReader(io.StringIO(response.content.decode())))


def test_a_workload_of_unknown_cost_reads_a_dash_with_its_unpriced_tokens_never_zero(client_as, fiona, usage):
    response = client_as(fiona).get(reverse("workload-detail", args=["ticket-router"]))
    assert response.context["totals"].cost is None and response.context["totals"].usd_per_mtok is None
    html = response.content.decode()
    assert 'data-testid="period-spend"><span class="unknown">—</span>' in html and "90.0M tokens unpriced" in html
    assert "$0.00" not in html and "$0.00/M" not in html
    rows = _csv(client_as(fiona).get(reverse("workload-detail", args=["ticket-router"]), {"csv": "by_model"}))
    assert rows == [
        {
            "Model": "Acme Router FT 8B",
            "Model id": "acme-router-ft-8b",
            "Spend": "",
            "Unpriced tokens": "90000000",
            "Tokens": "90000000",
            "USD/M tokens": "",
            "Currency": "USD",
        }
    ]


def test_a_partly_priced_group_shows_the_priced_part_and_flags_the_rest(client_as, fiona, usage):
    response = client_as(fiona).get(reverse("team-detail", args=["search"]))
    totals = response.context["totals"]
    assert totals.cost == Decimal(60) and totals.unpriced_tokens == 16 * 500000  # Oct 23 .. Nov 21, odd days
    # $/M tokens over priced tokens only: $60 over 3M priced tokens.
    assert totals.usd_per_mtok == Decimal(20)
    html = response.content.decode()
    assert (
        'data-testid="period-spend">$60.00 <span class="unpriced"' in html and "+ 8.0M tokens unpriced</span>" in html
    )


def test_top_workloads_rank_known_spend_and_list_unknown_cost_apart(client_as, fiona, usage):
    context = client_as(fiona).get(reverse("overview")).context
    assert [r["label"] for r in context["tables"]["top_workloads"]] == ["Support agent", "Search ranker"]
    assert [r["label"] for r in context["tables"]["unknown_cost_workloads"]] == ["Ticket router (fine-tune)"]
    # Support makes 10/12 = 83 % of known spend: one workload makes 80 %, of two with a known cost.
    assert (context["workloads_to_80"], context["workload_count"]) == (1, 2)
    models = {r["model"]: r for r in context["tables"]["by_model"]}
    assert models["acme-router-ft-8b"]["cost"] is None and models["acme-router-ft-8b"]["usd_per_mtok"] is None
    assert list(models)[-2:] == ["acme-router-ft-8b", "acme-search-ft"]  # unknown cost after every known one


@pytest.mark.parametrize(
    "name, args",
    [
        ("overview", []),
        ("team-list", []),
        ("team-detail", ["support"]),
        ("workload-list", []),
        ("workload-detail", ["support-agent"]),
        ("provider-list", []),
        ("provider-detail", ["openai"]),
    ],
)
def test_every_spend_page_reports_on_the_period_in_its_url(name, args, client_as, fiona, usage):
    response = client_as(fiona).get(reverse(name, args=args), {"period": "last-month"})
    assert response.status_code == 200
    period = response.context["period"]
    assert (period.start, period.end, period.label) == (dt.date(2026, 10, 1), dt.date(2026, 11, 1), "October 2026")
    html = response.content.decode()
    assert '<option value="last-month" selected>' in html and "2026-10-01 → 2026-10-31" in html
    # The menu keeps the period while moving between the spend pages.
    assert f'href="{reverse("team-list")}?period=last-month"' in html


def test_the_period_changes_the_figures_and_shows_the_comparison(client_as, sam, usage):
    october = client_as(sam).get(reverse("team-detail", args=["support"]), {"period": "2026-10"}).context
    assert october["totals"].cost == Decimal(310) and october["before"].cost is None  # nothing in September
    mtd = client_as(sam).get(reverse("team-detail", args=["support"]), {"period": "mtd"}).context
    assert mtd["totals"].cost == Decimal(210) and mtd["before"].cost == Decimal(210)  # Nov 1-21 against Oct 1-21
    assert mtd["change"] == 0
    custom = client_as(sam).get(
        reverse("workload-detail", args=["support-agent"]),
        {"period": "custom", "start": "2026-10-30", "end": "2026-11-02"},
    )
    assert custom.context["totals"].cost == Decimal(30)


def test_a_bad_period_shows_an_error_and_the_default_not_a_blank_page(client_as, fiona, usage):
    response = client_as(fiona).get(reverse("overview"), {"period": "2026-13"})
    assert response.status_code == 200 and response.context["period"].key == "last-30"
    assert "There is no month 2026-13." in response.content.decode()
    response = client_as(fiona).get(
        reverse("team-list"), {"period": "custom", "start": "2026-11-05", "end": "2026-11-01"}
    )
    assert "The end day must be after the start day" in response.content.decode()


def test_a_members_csv_downloads_keep_the_period(client_as, sam, usage):
    rows = _csv(client_as(sam).get(reverse("team-list"), {"period": "2026-10", "csv": "teams"}))
    team = {
        "Team": "Support Platform",
        "Cost centre": "CC-410",
        "Workloads": "2",
        "Spend": "310.00",
        "Unpriced tokens": "93000000",
        "Tokens": "124000000",
        "Change": "",
        "Shared charges": "",  # no tax or fee billed on its accounts: none allocated
        "Currency": "USD",
    }
    # A member's total is their own teams' (no unattributed row: they do not see it).
    assert rows == [team, {**team, "Team": "Total", "Cost centre": ""}]


@pytest.fixture
def bedrock_march(db):
    """A Bedrock FOCUS month (March, with a tax and a credit), imported for its test beside the module's usage
    (October and November: no March day of the figures it reads)."""
    account = Account.objects.create(
        name="bedrock", provider=Provider.objects.get(slug="aws-bedrock"), connector="focus_file"
    )
    with open(FIXTURES / "focus_file" / "aws_bedrock_focus_1_0.csv", "rb") as stream:
        assert usage_file_import(account=account, stream=stream, file_name="march.csv").status == "succeeded"


def test_tax_is_a_labelled_series_and_a_reconciliation_column(client_as, fiona, bedrock_march):
    response = client_as(fiona).get(reverse("provider-detail", args=["aws-bedrock"]), {"period": "2026-03"})
    names = {trace["name"] for trace in response.context["chart"]["data"]}
    assert {"Tax", "Credits"} <= names and "" not in names
    days = {r["day"]: r for r in response.context["tables"]["reconciliation"]}
    assert days[dt.date(2026, 3, 1)]["non_usage"] == Decimal("1.23") - Decimal("5.00")  # the month's tax and credit
    rows = _csv(
        client_as(fiona).get(
            reverse("provider-detail", args=["aws-bedrock"]), {"period": "2026-03", "csv": "reconciliation"}
        )
    )
    assert {r["Day"]: r["Tax, credits, fees"] for r in rows}["2026-03-01"] == "-3.77"
    overview = client_as(fiona).get(reverse("overview"), {"period": "2026-03"}).context
    assert "Tax" in {trace["name"] for trace in overview["chart"]["data"]}
    assert any(r["label"] == "(no model: taxes, credits, fees)" for r in overview["tables"]["by_model"])


def test_tables_show_exact_amounts_and_cards_compact_ones(client_as, fiona, usage):
    html = client_as(fiona).get(reverse("provider-list"), {"period": "2026-10"}).content.decode()
    assert "$372.00" in html  # OpenAI in October: 31 × $12, exact to the cent in the table
    html = client_as(fiona).get(reverse("team-detail", args=["support"]), {"period": "2026-10"}).content.decode()
    assert 'data-testid="period-spend">$310.00' in html


@pytest.mark.parametrize(
    "name, args, query, row_text",
    [
        ("overview", [], {}, "Ticket router (fine-tune)"),
        ("overview", [], {}, "Acme Router FT 8B"),
        ("team-list", [], {}, "Support Platform"),
        ("team-detail", ["support"], {}, "Ticket router (fine-tune)"),
        ("team-detail", ["support"], {}, "Acme Router FT 8B"),
        ("workload-list", [], {}, "Ticket router (fine-tune)"),
        ("workload-detail", ["ticket-router"], {}, "OpenAI"),
        ("provider-detail", ["openai"], {}, "Acme Router FT 8B"),
        ("explore", [], {"group_by": "workload"}, "Ticket router (fine-tune)"),
        ("explore", [], {"group_by": "model"}, "Acme Router FT 8B"),
    ],
)
def test_every_table_showing_the_fine_tune_says_its_cost_is_unknown_never_zero(
    name, args, query, row_text, client_as, fiona, usage
):
    html = client_as(fiona).get(reverse(name, args=args), query).content.decode()
    rows = [row for row in html.split("<tr") if row_text in row and 'class="num"' in row]
    assert rows, f"no table row for {row_text} on {name}"
    for row in rows:
        assert "tokens unpriced" in row and "$0.00" not in row, row
        if row_text not in ("Support Platform",):  # the team has priced workloads too: "$… + … tokens unpriced"
            assert '<span class="unknown">—</span>' in row, row
