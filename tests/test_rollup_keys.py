"""The rollups keep no database-level foreign keys (finops/core/rollup_keys.py, issue 23): what a deletion does to
their rows is Django's on_delete, the same as before — a workload or team deleted leaves its rows unattributed, a
provider with spend cannot be deleted, an account deleted takes its rows — on all five rollup tables."""

import datetime as dt
from decimal import Decimal

import pytest
from django.db import connection
from django.db.models import ProtectedError

from finops.models import (
    DailyPerformance,
    DailySpend,
    MonthlyPerformance,
    MonthlySpend,
    Provider,
    TeamDailySpend,
)
from tests.conftest import make_openai_account

DAY = dt.date(2026, 10, 14)
ROLLUPS = (DailySpend, MonthlySpend, TeamDailySpend, DailyPerformance, MonthlyPerformance)


def _rows(account, workload) -> None:
    """One row of each rollup for `workload` (and its team) on `account`'s provider."""
    spend = {
        "account": account,
        "provider": account.provider,
        "model": "gpt-4o",
        "workload": workload,
        "team": workload.team,
        "currency": "USD",
        "cost_basis": "billed",
        "charge_category": "usage",
        "cost": Decimal("1.25"),
        "reporting_cost": Decimal("1.25"),
        "line_count": 1,
    }
    DailySpend.objects.create(day=DAY, **spend)
    MonthlySpend.objects.create(month=DAY.replace(day=1), **spend)
    TeamDailySpend.objects.create(
        day=DAY,
        team=workload.team,
        provider=account.provider,
        cost_basis="billed",
        charge_category="usage",
        reporting_cost=Decimal("1.25"),
        line_count=1,
    )
    performance = {"account": account, "provider": account.provider, "model": "gpt-4o", "workload": workload}
    DailyPerformance.objects.create(day=DAY, team=workload.team, requests=3, **performance)
    MonthlyPerformance.objects.create(month=DAY.replace(day=1), team=workload.team, requests=3, **performance)


@pytest.mark.django_db
def test_the_rollups_have_no_foreign_key_constraint_in_postgres():
    assert connection.vendor == "postgresql"
    tables = [model._meta.db_table for model in ROLLUPS]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT conrelid::regclass::text FROM pg_constraint "
            "WHERE contype = 'f' AND conrelid::regclass::text = ANY(%s)",
            [tables],
        )
        assert cursor.fetchall() == []


@pytest.mark.django_db
def test_a_deleted_workload_or_team_leaves_its_rollup_rows_unattributed(support_agent):
    account = make_openai_account()
    _rows(account, support_agent)
    team = support_agent.team

    support_agent.delete()
    for model in (DailySpend, MonthlySpend, DailyPerformance, MonthlyPerformance):
        assert list(model.objects.values_list("workload_id", "team_id")) == [(None, team.id)], model.__name__

    team.delete()
    for model in ROLLUPS:
        assert list(model.objects.values_list("team_id", flat=True)) == [None], model.__name__
    assert DailySpend.objects.get().reporting_cost == Decimal("1.25")  # the spend stays, unattributed


@pytest.mark.django_db
def test_a_provider_with_rollup_rows_cannot_be_deleted_and_an_account_takes_its_rows(support_agent):
    account = make_openai_account()
    provider = Provider.objects.create(slug="in-house", name="In-house")
    account.provider = provider
    account.save()
    _rows(account, support_agent)

    with pytest.raises(ProtectedError):
        provider.delete()
    assert all(model.objects.count() == 1 for model in ROLLUPS)

    account.delete()
    for model in (DailySpend, MonthlySpend, DailyPerformance, MonthlyPerformance):
        assert not model.objects.exists(), model.__name__
    assert TeamDailySpend.objects.count() == 1  # no account: re-summed by the account service (test_account_delete)
