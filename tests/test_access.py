"""Who sees what, in pages and the API (docs/architecture.md invariant 9): another team's object answers 404."""

import datetime as dt
import io
from decimal import Decimal

import pytest
from django.urls import reverse

from finops.models import AttributionRule, DailySpend
from finops.spend.services.attribution import history_reattribute
from ingest.services import usage_file_import

PAGES = ["overview", "team-list", "workload-list", "provider-list"]


@pytest.fixture
def attributed_spend(openai_account, support_agent, search_ranker):
    """$12 to Support's agent, $30 to Search's ranker and $5 that no workload claims, on 2026-11-20."""
    csv = (
        "day,model,input_tokens,output_tokens,cost,project\n"
        "2026-11-20,gpt-5-mini,1000,100,12,proj_support\n"
        "2026-11-20,gpt-5-mini,3000,300,30,proj_search\n"
        "2026-11-20,gpt-5-mini,500,50,5,proj_misc\n"
    )
    run = usage_file_import(account=openai_account, stream=io.BytesIO(csv.encode()), file_name="usage.csv")
    assert run.status == "succeeded", run.error
    AttributionRule.objects.create(workload=support_agent, priority=1, project="proj_support")
    AttributionRule.objects.create(workload=search_ranker, priority=2, project="proj_search")
    history_reattribute()


@pytest.mark.parametrize("name", PAGES + ["source-list"])
def test_every_page_asks_an_anonymous_visitor_to_sign_in(client, db, name):
    response = client.get(reverse(name))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_the_login_page_and_the_health_check_answer_without_signing_in(client, db):
    assert client.get(reverse("login")).status_code == 200
    health = client.get(reverse("health"))
    assert health.status_code == 200 and health.json() == {"status": "ok", "database": "ok"}


def test_the_api_refuses_an_anonymous_caller(client, db):
    assert client.get("/api/v1/teams").status_code == 401
    assert client.get("/api/schema/").status_code == 401


@pytest.mark.parametrize("name", PAGES)
def test_every_role_can_open_the_main_pages(client_as, ada, fiona, sam, name):
    for user in (ada, fiona, sam):
        assert client_as(user).get(reverse(name)).status_code == 200, (user, name)


def test_a_team_member_sees_only_their_team_in_lists(client_as, sam, tess, support_agent, search_ranker):
    teams = client_as(sam).get(reverse("team-list")).content.decode()
    assert "Support Platform" in teams and "Search" not in teams
    workloads = client_as(sam).get(reverse("workload-list")).content.decode()
    assert "Support agent" in workloads and "Search ranker" not in workloads


def test_another_teams_pages_answer_404_to_a_member(client_as, sam, support_agent, search_ranker):
    client = client_as(sam)
    assert client.get(reverse("team-detail", args=["support"])).status_code == 200
    assert client.get(reverse("workload-detail", args=["support-agent"])).status_code == 200
    assert client.get(reverse("team-detail", args=["search"])).status_code == 404
    assert client.get(reverse("workload-detail", args=["search-ranker"])).status_code == 404


def test_finance_and_admins_see_every_team(client_as, ada, fiona, support_agent, search_ranker):
    for user in (ada, fiona):
        client = client_as(user)
        assert client.get(reverse("team-detail", args=["search"])).status_code == 200
        assert client.get(reverse("workload-detail", args=["support-agent"])).status_code == 200


def test_sources_are_for_finance_and_admins_only(client_as, ada, fiona, sam, openai_account):
    assert client_as(ada).get(reverse("source-list")).status_code == 200
    assert client_as(fiona).get(reverse("source-detail", args=[openai_account.pk])).status_code == 200
    assert client_as(sam).get(reverse("source-list")).status_code == 404
    assert client_as(sam).get(reverse("source-detail", args=[openai_account.pk])).status_code == 404
    nav = client_as(sam).get(reverse("overview")).content.decode()
    assert reverse("source-list") not in nav


def test_only_admins_reach_the_django_admin(client_as, ada, fiona, sam):
    assert client_as(ada).get("/admin/").status_code == 200
    for user in (fiona, sam):
        response = client_as(user).get("/admin/")
        assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_a_members_overview_counts_only_their_teams_spend(client_as, sam, fiona, attributed_spend):
    assert DailySpend.objects.count() > 0
    with_totals = lambda user: client_as(user).get(reverse("overview")).context["totals"]  # noqa: E731
    # Everything happened "yesterday" relative to the frozen clock below.
    assert with_totals(sam).cost == Decimal("12")
    finance = with_totals(fiona)
    assert finance.cost == Decimal("47") and finance.unattributed_cost == Decimal("5")


@pytest.fixture(autouse=True)
def _frozen_clock(time_machine):
    time_machine.move_to(dt.datetime(2026, 11, 22, 12, tzinfo=dt.UTC))


def test_the_overview_tells_an_admin_what_to_do_when_there_is_no_data(client_as, ada):
    page = client_as(ada).get(reverse("overview")).content.decode()
    assert "No spend yet" in page and "import_usage" in page and "apply_config" in page


def test_the_api_scopes_teams_and_workloads_to_a_member(client_as, sam, support_agent, search_ranker):
    client = client_as(sam)
    assert [t["slug"] for t in client.get("/api/v1/teams").json()["results"]] == ["support"]
    assert [w["slug"] for w in client.get("/api/v1/workloads").json()["results"]] == ["support-agent"]
    assert client.get("/api/v1/teams/search").status_code == 404
    assert client.get("/api/v1/workloads/search-ranker").status_code == 404
    assert client.get("/api/v1/accounts").status_code == 404  # spans teams: not even confirmed (docs/access.md)
    me = client.get("/api/v1/me").json()
    assert me == {"username": "sam", "email": "sam@example.com", "role": "member", "teams": ["support"]}


def test_finance_reads_accounts_through_the_api(client_as, fiona, openai_account):
    names = [a["name"] for a in client_as(fiona).get("/api/v1/accounts").json()["results"]]
    assert names == ["openai-prod"]
