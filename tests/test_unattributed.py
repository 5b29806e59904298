"""The unattributed page: spend no rule claims in a period, by API key, project, user and tag, each group one
click from a pre-filled rule form; finance and admins only."""

import csv
import datetime as dt
import io
from decimal import Decimal
from types import SimpleNamespace

import pytest
import time_machine
from django.urls import reverse

from finops.models import Account, AttributionRule, Provider, UsageLine, User
from finops.spend.services.attribution import history_reattribute
from ingest.services import usage_file_import
from tests.conftest import make_openai_account, make_support_agent, make_support_team, make_user
from tests.data_once import built_once, world_rows

DAYS = 10  # Nov 1..10
NOW = dt.datetime(2026, 11, 22, 12, tzinfo=dt.UTC)


@pytest.fixture(autouse=True)
def _frozen(time_machine):
    time_machine.move_to(NOW)


def _anthropic_account() -> Account:
    return Account.objects.create(
        name="anthropic-prod", provider=Provider.objects.get(slug="anthropic"), connector="usage_csv"
    )


def load(account, rows):
    header = "day,model,input_tokens,output_tokens,cost,project,api_key,user,tags"
    lines = [header] + [f"2026-11-{day:02d},{row}" for day in range(1, DAYS + 1) for row in rows]
    run = usage_file_import(account=account, stream=io.BytesIO("\n".join(lines).encode()), file_name="nov.csv")
    assert run.status == "succeeded", run.error


def _build_november(openai_account, anthropic_account, support_agent):
    """Per day: $10 on support (claimed by a rule) and, unclaimed, on openai-prod $1 (proj-x, key-x, ana,
    env=prod and app=chat), $0.50 (proj-y, key-x, no user, env=dev) and 200k tokens of a model nobody prices
    (proj-x, key-z, ben, no tags); on anthropic-prod $2 (proj-x, key-a, ana, env=prod)."""
    load(
        openai_account,
        [
            "gpt-5-mini,1000000,0,10,support,key-support,sue,team=support",
            "gpt-4o,100000,0,1,proj-x,key-x,ana,env=prod;app=chat",
            "gpt-4o,50000,0,0.5,proj-y,key-x,,env=dev",
            "my-private-model,150000,50000,,proj-x,key-z,ben,",
        ],
    )
    load(anthropic_account, ["claude-sonnet-4-5,200000,0,2,proj-x,key-a,ana,env=prod"])
    AttributionRule.objects.create(workload=support_agent, priority=1, project="support")
    history_reattribute()


@pytest.fixture(scope="module")
def world(django_db_setup, django_db_blocker):
    """The organisation and its November, built once for the module (tests/data_once.py): every test reads it."""
    with built_once(django_db_blocker), time_machine.travel(NOW):
        support_team = make_support_team()
        built = SimpleNamespace(
            ada=make_user("ada", User.Role.ADMIN),
            fiona=make_user("fiona", User.Role.FINANCE),
            sam=make_user("sam", User.Role.MEMBER, team=support_team),
            openai_account=make_openai_account(),
        )
        _build_november(built.openai_account, _anthropic_account(), make_support_agent(support_team))
        yield built


@pytest.fixture
def november(world, db):
    """The module's November is there (built once by `world`)."""


ada, fiona, sam, openai_account = world_rows("ada", "fiona", "sam", "openai_account")


def page(client, **query):
    return client.get(reverse("unattributed"), {"period": "2026-11", **query})


def costs(rows) -> dict:
    return {r["label"]: (r["cost"], r["unpriced_tokens"]) for r in rows}


def test_the_totals_give_the_unattributed_spend_and_its_share_of_all_spend(client_as, fiona, november):
    summary = page(client_as(fiona)).context["summary"]
    assert summary.cost == Decimal("3.5") * DAYS and summary.unpriced_tokens == 200_000 * DAYS
    assert summary.all_cost == Decimal("13.5") * DAYS and summary.share == Decimal("3.5") / Decimal("13.5")
    assert summary.lines == 4 * DAYS


def test_spend_is_grouped_by_api_key_project_and_user_biggest_first(client_as, fiona, november):
    context = page(client_as(fiona)).context
    by_key, by_project, by_user = (rows for _, _, rows in context["tables"])
    assert list(costs(by_key).items()) == [
        ("key-a", (Decimal(20), 0)),
        ("key-x", (Decimal(15), 0)),
        ("key-z", (None, 2_000_000)),
    ]
    assert list(costs(by_project).items()) == [("proj-x", (Decimal(30), 2_000_000)), ("proj-y", (Decimal(5), 0))]
    assert list(costs(by_user).items()) == [
        ("ana", (Decimal(30), 0)),
        ("(no user)", (Decimal(5), 0)),
        ("ben", (None, 2_000_000)),
    ]
    proj_x = by_project[0]
    assert (proj_x["lines"], proj_x["accounts"], proj_x["providers"]) == (
        3 * DAYS,
        "anthropic-prod, openai-prod",
        "Anthropic, OpenAI",
    )
    assert [r["label"] for r in by_user if r["muted"]] == ["(no user)"] and "action" not in by_user[1]


def test_each_grouping_adds_up_to_the_unattributed_lines(client_as, fiona, november):
    lines = UsageLine.objects.filter(signature__workload__isnull=True)
    cost = sum(line.reporting_cost for line in lines if line.reporting_cost is not None)
    for _, _, rows in page(client_as(fiona)).context["tables"]:
        assert sum(r["cost"] or 0 for r in rows) == cost == Decimal("3.5") * DAYS
        assert sum(r["lines"] for r in rows) == lines.count()


def test_a_line_counts_under_each_of_its_tags_and_the_page_says_so(client_as, fiona, november):
    response = page(client_as(fiona))
    spec, rows = response.context["tag_table"]
    assert list(costs(rows).items()) == [
        ("env=prod", (Decimal(30), 0)),
        ("app=chat", (Decimal(10), 0)),
        ("env=dev", (Decimal(5), 0)),
        ("(no tags)", (None, 2_000_000)),
    ]
    assert 'data-testid="tag-overlap"' in response.content.decode()


def test_create_a_rule_opens_the_rule_form_pre_filled(client_as, ada, november, openai_account):
    context = page(client_as(ada)).context
    key_x = next(r for _, _, rows in context["tables"] for r in rows if r["label"] == "key-x")
    text, url = key_x["action"]
    assert text == "Create a rule"
    form = client_as(ada).get(url).context["form"]
    assert form["api_key"].value() == "key-x"
    assert str(form["account"].value()) == str(openai_account.id)  # the group's lines come from one account
    assert str(form["provider"].value()) == str(openai_account.provider_id)
    assert not form["project"].value() and not form["tags_text"].value()


def test_a_tag_groups_rule_link_pre_fills_the_tags_and_no_account_when_it_spans_two(client_as, ada, november):
    _, rows = page(client_as(ada)).context["tag_table"]
    env_prod = next(r for r in rows if r["label"] == "env=prod")
    form = client_as(ada).get(env_prod["action"][1]).context["form"]
    assert form["tags_text"].value() == "env=prod"
    assert form["account"].value() is None and form["provider"].value() is None
    assert "action" not in next(r for r in rows if r["label"] == "(no tags)")


def test_the_rule_form_still_opens_empty_without_a_query(client_as, ada, november):
    form = client_as(ada).get(reverse("rule-create")).context["form"]
    assert (
        not form["api_key"].value() and not form["tags_text"].value() and form["priority"].value() == 11
    )  # after the last rule


def test_each_table_downloads_as_csv_with_the_unpriced_tokens_beside_the_spend(client_as, fiona, november):
    response = page(client_as(fiona), csv="by_api_key")
    assert response["Content-Type"].startswith("text/csv")
    rows = {r["API key"]: r for r in csv.DictReader(io.StringIO(response.content.decode()))}
    assert (rows["key-z"]["Spend"], rows["key-z"]["Unpriced tokens"], rows["key-z"]["Accounts"]) == (
        "",
        "2000000",
        "openai-prod",
    )
    assert rows["key-a"]["Spend"] == "20.00" and rows["key-a"]["Currency"] == "USD"
    tags = list(csv.DictReader(io.StringIO(page(client_as(fiona), csv="by_tag").content.decode())))
    assert {(r["Tag key"], r["Tag value"]) for r in tags} == {
        ("env", "prod"),
        ("app", "chat"),
        ("env", "dev"),
        ("", ""),
    }


def test_a_period_with_nothing_unattributed_says_so(client_as, fiona, november):
    response = page(client_as(fiona), period="2026-10")
    assert response.status_code == 200 and 'data-testid="nothing-unattributed"' in response.content.decode()
    assert response.context["summary"].cost is None


def test_a_period_over_92_days_keeps_the_totals_and_asks_for_a_shorter_one_for_the_groups(client_as, fiona, november):
    query = {"period": "custom", "start": "2026-06-01", "end": "2026-11-22"}
    response = page(client_as(fiona), **query)
    assert response.context["summary"].cost == Decimal("3.5") * DAYS and response.context["tables"] == []
    assert 'data-testid="period-too-long"' in response.content.decode()
    assert page(client_as(fiona), **query, csv="by_project").status_code == 400


def test_a_member_gets_404(client_as, sam, november):
    assert page(client_as(sam)).status_code == 404
    assert page(client_as(sam), csv="by_project").status_code == 404
