"""GET /api/v1/spend and `manage.py spend` with Explore's filters, scoped per role, on an October of usage
attributed as it is imported, built once for the module (tests/data_once.py)."""

import csv
import io
import json
from types import SimpleNamespace

import pytest
from django.core.management import CommandError

from finops.models import AttributionRule, User
from tests.conftest import make_search_ranker, make_search_team, make_support_agent, make_support_team, make_user
from tests.data_once import built_once, world_rows
from tests.spend_report_helpers import (
    OCTOBER,
    api,
    october_accounts,
    october_import,
    spend,
)


@pytest.fixture(scope="module")
def world(django_db_setup, django_db_blocker):
    """gpt-5-mini ($1.50 billed) is Support's agent's, Moonshot ($2.778) Search's ranker's; gpt-5 ($7.50
    estimated) and Groq (unpriced) are unattributed. The rules exist before the import, which attributes. Built
    once for the module: every test reads it."""
    with built_once(django_db_blocker):
        support_team = make_support_team()
        built = SimpleNamespace(
            fiona=make_user("fiona", User.Role.FINANCE),
            sam=make_user("sam", User.Role.MEMBER, team=support_team),
        )
        accounts = october_accounts()
        AttributionRule.objects.create(workload=make_support_agent(support_team), priority=1, model="gpt-5-mini")
        AttributionRule.objects.create(
            workload=make_search_ranker(make_search_team()), priority=2, account=accounts["moonshot"]
        )
        october_import(accounts)
        yield built


@pytest.fixture
def attributed_october(world, db):
    """The module's attributed October is there (built once by `world`)."""


fiona, sam = world_rows("fiona", "sam")


def test_the_command_takes_the_same_filters_and_refuses_an_unknown_value(attributed_october):
    rows = json.loads(
        spend("--start", "2026-10-01", "--end", "2026-11-01", "--by", "model", "--team", "support", "--format", "json")
    )
    assert [r["group"] for r in rows] == ["gpt-5-mini"]
    with pytest.raises(CommandError, match="sales"):
        spend("--start", "2026-10-01", "--end", "2026-11-01", "--by", "model", "--team", "sales")


def test_each_filter_narrows_the_rows_as_in_explore(attributed_october, client_as, fiona):
    client = client_as(fiona)

    def groups(**filters):
        response = api(client, **OCTOBER, group_by="model", **filters)
        assert response.status_code == 200, response.content
        return {row["group"]: row["cost"] for row in response.json()}

    assert groups(team="support") == {"gpt-5-mini": "1.500000"}
    assert groups(workload="search-ranker") == {"kimi-k2.6": "2.778000"}
    assert groups(team="-") == groups(workload="-") == {"gpt-5": "7.500000", "my-private-model": None}
    assert groups(provider="groq") == {"my-private-model": None}
    assert groups(account="openai-main") == {"gpt-5-mini": "1.500000", "gpt-5": "7.500000"}
    assert groups(model="gpt-5") == {"gpt-5": "7.500000"}
    assert groups(basis="estimated") == {"gpt-5": "7.500000"}
    assert groups(basis="unpriced") == {"my-private-model": None}
    assert groups(team="", model="") == groups()  # an empty value is no filter, as in Explore


def test_unattributed_groups_are_named_and_last(attributed_october, client_as, fiona):
    rows = api(client_as(fiona), **OCTOBER, group_by="team").json()
    assert [(r["group"], r["label"]) for r in rows] == [
        ("search", "search"),
        ("support", "support"),
        (None, "Unattributed"),
    ]
    assert rows[-1]["cost"] == "7.500000" and rows[-1]["unpriced_tokens"] == 330_000


@pytest.mark.parametrize(
    "name, value",
    [
        ("team", "sales"),
        ("workload", "nope"),
        ("provider", "acme"),
        ("account", "nobody"),
        ("model", "gpt-0"),
        ("basis", "guessed"),
    ],
)
def test_a_filter_value_that_matches_nothing_is_refused(attributed_october, client_as, fiona, name, value):
    response = api(client_as(fiona), **OCTOBER, group_by="provider", **{name: value})
    assert response.status_code == 400
    assert list(response.json()) == [name] and value in response.json()[name][0]


def test_another_teams_slug_answers_a_team_lead_as_an_unknown_one_does(attributed_october, client_as, sam):
    client = client_as(sam)
    other, unknown = (api(client, **OCTOBER, group_by="model", team=slug) for slug in ("search", "nosuch"))
    assert other.status_code == unknown.status_code == 400
    assert other.json()["team"][0].replace("search", "X") == unknown.json()["team"][0].replace("nosuch", "X")
    assert api(client, **OCTOBER, group_by="model", workload="search-ranker").status_code == 400
    # Unattributed spend is no team's: a lead cannot ask for it either, nor for another team's model or account.
    assert api(client, **OCTOBER, group_by="model", team="-").status_code == 400
    assert api(client, **OCTOBER, group_by="model", model="kimi-k2.6").status_code == 400
    assert api(client, **OCTOBER, group_by="model", account="moonshot-main").status_code == 400


def test_a_team_lead_filters_within_their_own_team(attributed_october, client_as, sam):
    client = client_as(sam)
    assert [r["group"] for r in api(client, **OCTOBER, group_by="team").json()] == ["support"]
    rows = api(client, **OCTOBER, group_by="model", team="support", account="openai-main", model="gpt-5-mini").json()
    assert [(r["group"], r["cost"]) for r in rows] == [("gpt-5-mini", "1.500000")]


def test_the_api_answers_csv_with_the_same_columns_and_a_currency(attributed_october, client_as, fiona):
    client = client_as(fiona)
    response = api(client, **OCTOBER, group_by="team", format="csv")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    assert response["Content-Disposition"] == 'attachment; filename="spend-team-2026-10-01-2026-11-01.csv"'
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    as_json = api(client, **OCTOBER, group_by="team").json()
    assert list(rows[0]) == list(as_json[0])  # the same columns, in the same order, currency among them
    assert [(r["group"], r["label"], r["currency"], r["cost"]) for r in rows] == [
        ("search", "search", "USD", "2.778000"),
        ("support", "support", "USD", "1.500000"),
        ("", "Unattributed", "USD", "7.500000"),
    ]
