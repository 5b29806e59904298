"""The monthly rollup equals the daily rollup summed by UTC month, after imports, restatements, re-attributions
and team moves (issue 4: Explore over long periods reads it). The migration that fills it: tests/test_migrations.py."""

import datetime as dt
import io
from decimal import Decimal

import pytest

from finops.models import Account, AttributionRule, DailySpend, MonthlySpend, Provider
from finops.spend.services.attribution import history_reattribute, workload_team_sync
from finops.spend.services.monthly_rollup import month_runs
from ingest.services import usage_file_import
from tests.rollup_check import assert_monthly_equals_daily


def import_csv(account: Account, text: str, name: str = "usage.csv"):
    run = usage_file_import(account=account, stream=io.BytesIO(text.encode()), file_name=name)
    assert run.status == "succeeded", run.error
    return run


HEADER = "day,model,input_tokens,output_tokens,cost,project\n"
# Two months and the days around their boundary; one unpriced line (no cost, unknown model).
ACROSS_OCTOBER = HEADER + (
    "2026-09-30,gpt-5-mini,1000,100,1.25,support\n"
    "2026-10-01,gpt-5-mini,2000,200,2.50,support\n"
    "2026-10-01,gpt-5,3000,300,3.75,search\n"
    "2026-10-31,gpt-5,4000,400,4.00,other\n"
    "2026-11-01,my-private-model,5000,500,,support\n"
)


@pytest.fixture
def anthropic_account(db):
    return Account.objects.create(
        name="anthropic-prod", provider=Provider.objects.get(slug="anthropic"), connector="usage_csv"
    )


def test_an_import_across_month_boundaries_fills_each_month_with_its_days(openai_account):
    import_csv(openai_account, ACROSS_OCTOBER)
    assert_monthly_equals_daily()
    months = {m: c for m, c in MonthlySpend.objects.values_list("month", "reporting_cost").order_by("month")}
    assert set(months) == {dt.date(2026, 9, 1), dt.date(2026, 10, 1), dt.date(2026, 11, 1)}
    october = sum(MonthlySpend.objects.filter(month="2026-10-01").values_list("reporting_cost", flat=True), Decimal(0))
    assert october == Decimal("10.25")
    assert MonthlySpend.objects.filter(month="2026-11-01").get().reporting_cost is None  # unpriced stays None, not 0


def test_a_restated_export_replaces_the_month_and_another_accounts_rows_are_left_alone(
    openai_account, anthropic_account
):
    import_csv(openai_account, ACROSS_OCTOBER)
    import_csv(anthropic_account, HEADER + "2026-10-15,claude-sonnet-4-5,1000,100,7.00,support\n")
    untouched = list(MonthlySpend.objects.filter(account=anthropic_account).values_list("id", "reporting_cost"))
    # The provider restates October 1st: its lines are replaced, the month's sum follows.
    import_csv(openai_account, HEADER + "2026-10-01,gpt-5-mini,2000,200,9.50,support\n", name="restated.csv")
    assert_monthly_equals_daily()
    assert list(MonthlySpend.objects.filter(account=anthropic_account).values_list("id", "reporting_cost")) == untouched
    october = sum(
        MonthlySpend.objects.filter(month="2026-10-01", account=openai_account).values_list(
            "reporting_cost", flat=True
        ),
        Decimal(0),
    )
    assert october == Decimal("13.50")  # 9.50 restated + 4.00 on the 31st; the gpt-5 line of the 1st was restated away


def test_a_rule_change_moves_monthly_spend_between_workloads(openai_account, support_agent, search_ranker):
    import_csv(openai_account, ACROSS_OCTOBER)
    AttributionRule.objects.create(workload=support_agent, priority=1, project="support")
    history_reattribute()
    assert_monthly_equals_daily()
    support = MonthlySpend.objects.filter(workload=support_agent)
    assert {(r.month, r.reporting_cost) for r in support} == {
        (dt.date(2026, 9, 1), Decimal("1.25")),
        (dt.date(2026, 10, 1), Decimal("2.50")),
        (dt.date(2026, 11, 1), None),
    }
    AttributionRule.objects.filter(workload=support_agent).update(workload=search_ranker)
    history_reattribute()
    assert_monthly_equals_daily()
    assert not MonthlySpend.objects.filter(workload=support_agent).exists()
    assert MonthlySpend.objects.filter(workload=search_ranker, team=search_ranker.team).count() == 3


def test_a_workload_moving_team_takes_its_monthly_spend_along(openai_account, support_agent, search_team):
    import_csv(openai_account, ACROSS_OCTOBER)
    AttributionRule.objects.create(workload=support_agent, priority=1, project="support")
    history_reattribute()
    support_agent.team = search_team
    support_agent.save()
    workload_team_sync(workload=support_agent)
    assert_monthly_equals_daily()
    assert set(MonthlySpend.objects.filter(workload=support_agent).values_list("team_id", flat=True)) == {
        search_team.id
    }


def test_the_oracle_notices_a_monthly_row_that_drifted(openai_account):
    import_csv(openai_account, ACROSS_OCTOBER)
    MonthlySpend.objects.filter(month="2026-09-01").update(line_count=7)
    with pytest.raises(AssertionError):
        assert_monthly_equals_daily()


def test_months_are_rebuilt_in_runs_of_consecutive_months():
    days = {dt.date(2026, 1, 31), dt.date(2026, 2, 1), dt.date(2026, 3, 9), dt.date(2026, 5, 2), dt.date(2025, 12, 31)}
    assert month_runs(days) == [(dt.date(2025, 12, 1), dt.date(2026, 3, 1)), (dt.date(2026, 5, 1), dt.date(2026, 5, 1))]


def test_the_monthly_model_mirrors_the_daily_one():
    """Same dimensions and measures, same deletion rules: deleting a team, workload or account changes both
    rollups alike, so they stay equal."""

    def shape(model, period):
        return {
            f.name: (
                type(f).__name__,
                getattr(f, "null", None),
                getattr(getattr(f, "remote_field", None), "on_delete", None),
            )
            for f in model._meta.concrete_fields
            if f.name not in ("id", period)
        }

    assert shape(MonthlySpend, "month") == shape(DailySpend, "day")
