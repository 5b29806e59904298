"""An upgraded install has the schema of a new one (every column, constraint and index). Upgrading keeps its data:
lines written before tag sets existed keep their tags (migration 0009); lines attributed before line signatures
existed keep their workload and team (0012), and going back restores them; the monthly rollup starts as the daily
one summed by month (0013).

The tag sets' and the signatures' tests migrate over the migration they check (and back), not to the latest schema
(each migration on the way costs the test its SQL and Django's rendering of its states): the path from there on to the
latest schema is run by the first test (on an empty install) and, with rows, by the monthly rollup's test (from 0011,
to the latest: it reads the rollups with today's code, tests/rollup_check.py) and tests/test_migration_*.py."""

import datetime as dt
from decimal import Decimal

import pytest
from django.db import connection

from tests.migration_helpers import database_at, latest, migrate, schema_of
from tests.rollup_check import assert_monthly_equals_daily

BEFORE_TAG_SETS = [("finops", "0008_user_time_zone")]
TAG_SETS = [("finops", "0009_tag_sets")]
BEFORE_SIGNATURES = [("finops", "0011_dailyspend_page_indexes")]
SIGNATURES = [("finops", "0012_line_signatures")]

# A scratch database as an install before tag sets, and one before line signatures, each for its test
# (tests/migration_helpers.py): the suite's own database stays at the latest schema.
at_0008 = database_at(BEFORE_TAG_SETS)
at_0011 = database_at(BEFORE_SIGNATURES)


@pytest.mark.django_db(transaction=True)  # the suite's database, as a new install: made, never written to
def test_an_upgraded_install_has_the_schema_of_a_new_one(at_0008, old_schemas):
    """The suite's database was migrated from empty by Django's migrate command; the scratch one from before tag
    sets by the upgrade path the other tests take (tests/migration_helpers.py)."""
    migrate(latest())
    upgraded, new = schema_of(connection.settings_dict["NAME"]), schema_of(old_schemas.suite_database)
    assert len(new) > 500  # columns, constraints and indexes of every table
    assert sorted(upgraded - new) == sorted(new - upgraded) == []


def test_upgrading_stores_each_distinct_tag_set_once_and_every_line_keeps_its_tags(at_0008):
    Provider, Account, UsageLine = (at_0008.get_model("finops", name) for name in ("Provider", "Account", "UsageLine"))
    provider, _ = Provider.objects.get_or_create(slug="openai", defaults={"name": "OpenAI"})
    account = Account.objects.create(name="before", provider=provider, connector="usage_csv")
    written = [
        {"env": "prod", "team": "search"},
        {"team": "search", "env": "prod"},
        {},
        {"env": "dev"},
        {"env": "prod"},
    ]
    start = dt.datetime(2026, 10, 1, tzinfo=dt.UTC)
    for n, tags in enumerate(written):
        UsageLine.objects.create(
            account=account,
            provider=provider,
            period_start=start + dt.timedelta(days=n),
            period_end=start + dt.timedelta(days=n + 1),
            model="gpt-5",
            model_raw="gpt-5",
            tags=tags,
            cost=Decimal("1.5"),
            reporting_cost=Decimal("1.5"),
            cost_basis="billed",
            line_key=f"line-{n}",
        )

    new = migrate(TAG_SETS)  # the migration under test; the path on to the latest schema: the first test

    lines = (
        new.get_model("finops", "UsageLine").objects.order_by("period_start").values_list("tag_set__tags", flat=True)
    )
    assert list(lines) == written
    assert new.get_model("finops", "TagSet").objects.count() == 4  # {} and three sets (key order is not a difference)


def test_upgrading_gives_each_distinct_signature_one_row_holding_its_lines_workload_and_team_and_back(at_0011):
    get = lambda name: at_0011.get_model("finops", name)  # noqa: E731
    provider, _ = get("Provider").objects.get_or_create(slug="openai", defaults={"name": "OpenAI"})
    account = get("Account").objects.create(name="before", provider=provider, connector="usage_csv")
    team = get("Team").objects.create(name="Search", slug="search")
    workload = get("Workload").objects.create(team=team, name="Ranker", slug="ranker")
    tag_set = get("TagSet").objects.create(id=7, tags={"env": "prod"})
    start = dt.datetime(2026, 10, 1, tzinfo=dt.UTC)
    # (project, attributed?): two lines share a signature, one line has another, one is unattributed.
    written = [("proj_search", True), ("proj_search", True), ("proj_other", True), ("proj_misc", False)]
    for n, (project, attributed) in enumerate(written):
        get("UsageLine").objects.create(
            account=account,
            provider=provider,
            period_start=start + dt.timedelta(days=n),
            period_end=start + dt.timedelta(days=n + 1),
            model="gpt-5",
            model_raw="gpt-5",
            project_ref=project,
            tag_set=tag_set,
            cost=Decimal("1.5"),
            reporting_cost=Decimal("1.5"),
            cost_basis="billed",
            workload=workload if attributed else None,
            team=team if attributed else None,
        )

    new = migrate(SIGNATURES)  # up and back over the migration under test only
    lines = new.get_model("finops", "UsageLine").objects.order_by("period_start")
    assert list(lines.values_list("project_ref", "signature__workload__slug", "signature__team__slug")) == [
        ("proj_search", "ranker", "search"),
        ("proj_search", "ranker", "search"),
        ("proj_other", "ranker", "search"),
        ("proj_misc", None, None),
    ]
    assert new.get_model("finops", "LineSignature").objects.count() == 3
    assert len(set(lines.values_list("signature_id", flat=True))) == 3

    old = migrate(BEFORE_SIGNATURES)
    back = old.get_model("finops", "UsageLine").objects.order_by("period_start")
    assert list(back.values_list("workload__slug", "team__slug")) == [("ranker", "search")] * 3 + [(None, None)]


def test_upgrading_fills_the_monthly_rollup_from_the_daily_one(at_0011):
    Provider0, Account0, DailySpend0 = (
        at_0011.get_model("finops", name) for name in ("Provider", "Account", "DailySpend")
    )
    provider, _ = Provider0.objects.get_or_create(slug="openai", defaults={"name": "OpenAI"})
    account = Account0.objects.create(name="before-monthly", provider=provider, connector="usage_csv")
    common = {
        "account": account,
        "provider": provider,
        "model": "gpt-5",
        "currency": "USD",
        "cost_basis": "billed",
        "charge_category": "usage",
    }
    for day, cost, tokens in (("2026-09-30", "1.5", 10), ("2026-10-01", "2.25", 20), ("2026-10-31", "0.25", 30)):
        DailySpend0.objects.create(
            day=day, cost=Decimal(cost), reporting_cost=Decimal(cost), input_tokens=tokens, line_count=2, **common
        )
    MonthlySpend = migrate(latest()).get_model("finops", "MonthlySpend")
    assert {
        (r.month, r.reporting_cost, r.input_tokens, r.line_count)
        for r in MonthlySpend.objects.filter(account_id=account.id)
    } == {(dt.date(2026, 9, 1), Decimal("1.5"), 10, 2), (dt.date(2026, 10, 1), Decimal("2.5"), 50, 4)}
    assert_monthly_equals_daily()
