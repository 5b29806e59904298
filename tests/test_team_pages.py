"""The pages a team lead and finance read about teams (issue 24, "Pages"): a team page and a lead's overview show
the team's caps with the figures /caps/ shows; the teams list adds up, to the cent, to the overview's total;
a provider nobody used is not a $0.00 row."""

import datetime as dt
import io
import re
from decimal import Decimal
from types import SimpleNamespace

import pytest
import time_machine
from django.urls import reverse

from finops.alerts.selectors.caps import cap_statuses
from finops.alerts.services.caps import cap_create
from finops.models import AttributionRule, Provider, User
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

TODAY = dt.date(2026, 11, 22)
NOW = dt.datetime(2026, 11, 22, 12, tzinfo=dt.UTC)


@pytest.fixture(autouse=True)
def _frozen(time_machine):
    time_machine.move_to(NOW)


def _build_usage(openai_account, support_agent, search_ranker):
    """Since October, every day: support $10.37, search $2.11 and $0.49 no rule claims (unattributed), odd cents
    so a total rounded per row would drift from the whole."""
    rows = ["day,model,input_tokens,output_tokens,cost,project"]
    day = dt.date(2026, 10, 1)
    while day < TODAY:
        rows += [
            f"{day},gpt-5-mini,1000000,0,10.37,support",
            f"{day},gpt-5,100000,0,2.11,search",
            f"{day},gpt-5-mini,40000,0,0.49,nobody",
        ]
        day += dt.timedelta(days=1)
    run = usage_file_import(account=openai_account, stream=io.BytesIO("\n".join(rows).encode()), file_name="u.csv")
    assert run.status == "succeeded", run.error
    for priority, (workload, project) in enumerate(((support_agent, "support"), (search_ranker, "search")), 1):
        AttributionRule.objects.create(workload=workload, priority=priority, project=project)
    history_reattribute()


@pytest.fixture(scope="module")
def world(django_db_setup, django_db_blocker):
    """The organisation and its usage since October, built once for the module (tests/data_once.py): every test
    reads it (the cap some of them read is created for each, by `support_cap`)."""
    with built_once(django_db_blocker), time_machine.travel(NOW):
        support_team, search_team = make_support_team(), make_search_team()
        built = SimpleNamespace(
            support_team=support_team,
            ada=make_user("ada", User.Role.ADMIN),
            fiona=make_user("fiona", User.Role.FINANCE),
            sam=make_user("sam", User.Role.MEMBER, team=support_team),
            tess=make_user("tess", User.Role.MEMBER, team=search_team),
        )
        _build_usage(make_openai_account(), make_support_agent(support_team), make_search_ranker(search_team))
        yield built


@pytest.fixture
def usage(world, db):
    """The module's usage is there (built once by `world`)."""


support_team, ada, fiona, sam, tess = world_rows("support_team", "ada", "fiona", "sam", "tess")


@pytest.fixture
def support_cap(ada, usage, support_team):
    """$300 a month on Support: $217.77 spent by the 22nd, forecast past the cap. Created for each test that reads
    it, on the module's usage."""
    return cap_create(
        by=ada, name="Support monthly", scope="team", target="support", amount="300", recipients=["role:admins"]
    )


def _money(text: str) -> Decimal:
    return Decimal(text.replace("$", "").replace(",", ""))


def _cap_card(html: str, name: str) -> str:
    match = re.search(rf'<section class="card cap-card" data-cap="{re.escape(name)}">(.*?)</section>', html, re.S)
    assert match, f"no card for {name}"
    return match[1]


@pytest.mark.parametrize("page", ["team", "overview"])
def test_a_lead_sees_their_teams_cap_with_the_spend_forecast_and_status_caps_shows(client_as, sam, support_cap, page):
    url = reverse("team-detail", args=["support"]) if page == "team" else reverse("overview")
    html = client_as(sam).get(url).content.decode()
    card = _cap_card(html, "Support monthly")
    on_caps = _cap_card(client_as(sam).get(reverse("cap-list")).content.decode(), "Support monthly")
    assert card == on_caps  # the same card, from the same selector, as /caps/
    status = cap_statuses([support_cap], today=TODAY)[0]
    assert status.spent == Decimal("217.77") and status.status == "forecast"
    assert "<strong>$217.77</strong> of $300.00" in card and "Forecast to breach" in card
    assert f"forecast ${status.forecast:,.2f}" in card  # the forecast the cap page and its email use


def test_a_team_without_a_cap_says_so_and_another_teams_cap_is_not_on_it(client_as, ada, tess, support_cap):
    html = client_as(tess).get(reverse("team-detail", args=["search"])).content.decode()
    assert "No cap on this team or its workloads" in html and "Support monthly" not in html
    assert "Support monthly" not in client_as(tess).get(reverse("overview")).content.decode()


def test_finance_sees_the_organisation_cap_on_the_overview_not_each_teams(client_as, fiona, ada, support_cap):
    cap_create(by=ada, name="Everything", scope="org", amount="5000", recipients=["role:admins"])
    html = client_as(fiona).get(reverse("overview")).content.decode()
    assert 'data-cap="Everything"' in html and 'data-cap="Support monthly"' not in html


@pytest.mark.parametrize("period", ["last-30", "2026-10", "mtd"])
def test_the_teams_list_adds_up_to_the_overviews_total_to_the_cent(client_as, fiona, usage, period):
    teams = client_as(fiona).get(reverse("team-list"), {"period": period}).context["rows"]
    overview = client_as(fiona).get(reverse("overview"), {"period": period}).context["totals"]
    labels = [row["label"] for row in teams]
    assert labels == ["Search", "Support Platform", "Unattributed", "Total"]
    *parts, total = teams
    assert total["total"] and total["cost"] == overview.cost == sum(row["cost"] for row in parts)
    days = {"last-30": 30, "2026-10": 31, "mtd": 21}[period]
    assert [row["cost"] for row in parts] == [Decimal("2.11") * days, Decimal("10.37") * days, Decimal("0.49") * days]
    html = client_as(fiona).get(reverse("team-list"), {"period": period}).content.decode()
    assert 'class="total" data-total="true"' in html and f"${total['cost']:,.2f}" in html
    csv = client_as(fiona).get(reverse("team-list"), {"period": period, "csv": "teams"}).content.decode().splitlines()
    assert csv[-2].startswith("Unattributed,") and csv[-1].startswith(f"Total,,2,{total['cost']:.2f},")


def test_a_member_sees_their_teams_total_without_the_unattributed_row(client_as, sam, usage):
    rows = client_as(sam).get(reverse("team-list")).context["rows"]
    assert [row["label"] for row in rows] == ["Support Platform", "Total"]
    assert rows[-1]["cost"] == rows[0]["cost"] == Decimal("10.37") * 30


def test_providers_without_usage_in_the_period_are_named_not_listed_at_zero(client_as, fiona, usage):
    response = client_as(fiona).get(reverse("provider-list"))
    assert [row["label"] for row in response.context["rows"]] == ["OpenAI"]
    html = response.content.decode()
    assert "$0.00" not in html
    idle = re.search(r'data-testid="idle-providers">No usage in this period: (.*?)\.</p>', html)[1].split(", ")
    assert "Anthropic" in idle and "OpenAI" not in idle and len(idle) == Provider.objects.count() - 1


def test_month_names_are_capitalised_in_the_headings(client_as, fiona, usage):
    html = client_as(fiona).get(reverse("team-detail", args=["support"]), {"period": "2026-10"}).content.decode()
    assert "Spend by workload, October 2026" in html and "october" not in html
    html = client_as(fiona).get(reverse("team-detail", args=["support"])).content.decode()
    assert "Spend by workload, last 30 days" in html
