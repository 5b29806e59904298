"""Upgrading an install keeps its data: lines written before tag sets existed keep their tags (migration 0009)."""

import datetime as dt
from decimal import Decimal

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE_TAG_SETS = [("finops", "0008_user_time_zone")]


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


@pytest.fixture
def at_0008(transactional_db):
    """The database as an install before tag sets, migrated forward again afterwards whatever the test did
    (the tests after this one need the current schema)."""
    yield migrate(BEFORE_TAG_SETS)
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())


def test_upgrading_stores_each_distinct_tag_set_once_and_every_line_keeps_its_tags(at_0008):
    Provider, Account, UsageLine = (at_0008.get_model("finops", name) for name in ("Provider", "Account", "UsageLine"))
    # A transactional test may start from an emptied database: the seeded providers are not guaranteed.
    provider, _ = Provider.objects.get_or_create(slug="openai", defaults={"name": "OpenAI"})
    account = Account.objects.create(name="before", provider=provider, connector="usage_csv")
    written = [{"env": "prod", "team": "search"}, {"team": "search", "env": "prod"}, {}, {"env": "dev"}, {"env": "prod"}]
    start = dt.datetime(2026, 10, 1, tzinfo=dt.UTC)
    for n, tags in enumerate(written):
        UsageLine.objects.create(
            account=account, provider=provider, period_start=start + dt.timedelta(days=n),
            period_end=start + dt.timedelta(days=n + 1), model="gpt-5", model_raw="gpt-5", tags=tags,
            cost=Decimal("1.5"), reporting_cost=Decimal("1.5"), cost_basis="billed", line_key=f"line-{n}",
        )

    executor = MigrationExecutor(connection)
    new = migrate(executor.loader.graph.leaf_nodes())

    lines = new.get_model("finops", "UsageLine").objects.order_by("period_start").values_list("tag_set__tags", flat=True)
    assert list(lines) == written
    assert new.get_model("finops", "TagSet").objects.count() == 4  # {} and three sets (key order is not a difference)
