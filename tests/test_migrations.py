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


@pytest.mark.django_db(transaction=True)
def test_upgrading_stores_each_distinct_tag_set_once_and_every_line_keeps_its_tags():
    old = migrate(BEFORE_TAG_SETS)
    Provider, Account, UsageLine = (old.get_model("finops", name) for name in ("Provider", "Account", "UsageLine"))
    provider = Provider.objects.get(slug="openai")
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
