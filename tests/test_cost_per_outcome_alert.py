"""The `outcome_cost` alert (issue 12): it fires once per workload and complete month over its target, and a
workload's target round-trips through config. Each test builds its own data (the module's tests read different
organisations); the cost per outcome's figures and pages: tests/test_cost_per_outcome.py."""

import datetime as dt
import io
from decimal import Decimal

import pytest

from finops.models import AlertEvent, AttributionRule, OutcomeCount, Workload
from finops.spend.services.attribution import history_reattribute
from ingest.services import usage_file_import

DAY = dt.timedelta(days=1)


@pytest.fixture(autouse=True)
def _frozen(time_machine):
    time_machine.move_to(dt.datetime(2026, 11, 22, 12, tzinfo=dt.UTC))


def _import(account, lines: list[str]):
    text = "\n".join(["day,model,input_tokens,output_tokens,cost,project", *lines])
    assert usage_file_import(account=account, stream=io.BytesIO(text.encode()), file_name="u.csv").status == "succeeded"


# --- the outcome_cost alert ---


@pytest.fixture
def october(openai_account, support_agent):
    """Support: $2 a day through October and November ($62 in October), claimed by its rule."""
    lines, day = [], dt.date(2026, 10, 1)
    while day < dt.date(2026, 12, 1):
        lines.append(f"{day},gpt-5-mini,1000000,0,2,support")
        day += DAY
    _import(openai_account, lines)
    AttributionRule.objects.create(workload=support_agent, priority=1, project="support")
    history_reattribute()
    support_agent.target_cost_per_outcome = Decimal("0.50")
    support_agent.save()
    return support_agent


def _outcome_events():
    return list(AlertEvent.objects.filter(kind="outcome_cost").order_by("period_start"))


def test_a_month_over_its_target_raises_the_outcome_alert_once_however_often_it_is_evaluated(october, sam):
    from finops.alerts.evaluate import alerts_evaluate
    from finops.notify.recipients import event_addresses

    OutcomeCount.objects.create(workload=october, day=dt.date(2026, 10, 1), count=60)
    OutcomeCount.objects.create(workload=october, day=dt.date(2026, 10, 20), count=40)
    OutcomeCount.objects.create(
        workload=october, day=dt.date(2026, 11, 2), count=1
    )  # November is not complete: not judged
    alerts_evaluate(today=dt.date(2026, 11, 22))
    alerts_evaluate(today=dt.date(2026, 11, 22))
    (event,) = _outcome_events()
    assert (event.subject, event.period_start, event.threshold) == (f"workload:{october.id}", dt.date(2026, 10, 1), 100)
    assert event.title == "Support agent: $0.62 per ticket resolved in October 2026, over its $0.50 target"
    assert event.details == {
        "month": "2026-10-01",
        "cost": "62.00",
        "outcomes": 100,
        "cost_per_outcome": "0.62",
        "target": "0.50",
        "unit": "ticket resolved",
        "unpriced_tokens": 0,
        "workload": "support-agent",
    }
    assert (event.workload, event.team) == (october, october.team)
    assert event_addresses(event) == [sam.email]  # the team's leads


def test_a_new_month_over_target_re_arms_the_alert(october, time_machine):
    from finops.alerts.evaluate import alerts_evaluate

    OutcomeCount.objects.create(workload=october, day=dt.date(2026, 10, 1), count=100)
    OutcomeCount.objects.create(workload=october, day=dt.date(2026, 11, 1), count=50)  # $60 / 50 = $1.20
    alerts_evaluate(today=dt.date(2026, 11, 22))
    time_machine.move_to(dt.datetime(2026, 12, 3, 12, tzinfo=dt.UTC))
    alerts_evaluate(today=dt.date(2026, 12, 3))
    assert [(e.period_start, e.title) for e in _outcome_events()] == [
        (dt.date(2026, 10, 1), "Support agent: $0.62 per ticket resolved in October 2026, over its $0.50 target"),
        (dt.date(2026, 11, 1), "Support agent: $1.20 per ticket resolved in November 2026, over its $0.50 target"),
    ]


def test_a_month_within_target_or_without_outcomes_raises_nothing(october, search_ranker):
    from finops.alerts.evaluate import alerts_evaluate

    OutcomeCount.objects.create(workload=october, day=dt.date(2026, 10, 1), count=124)  # $62 / 124 = exactly $0.50
    search_ranker.target_cost_per_outcome = Decimal("0.01")
    search_ranker.save()  # a target, and no outcomes at all: nothing to judge
    alerts_evaluate(today=dt.date(2026, 11, 22))
    assert _outcome_events() == []


# --- config ---


def test_a_workloads_target_cost_per_outcome_round_trips_through_config(db, tmp_path):
    from tests.config_helpers import apply, export, write

    document = """
teams:
  - {name: Support Platform, slug: support}
workloads:
  - {name: Support agent, slug: support-agent, team: support, latency_profile: realtime, outcome_unit: ticket resolved,
     target_cost_per_outcome: "0.50"}
"""
    apply(write(tmp_path, document))
    assert Workload.objects.get(slug="support-agent").target_cost_per_outcome == Decimal("0.50")
    exported = export()
    assert "target_cost_per_outcome: '0.5'" in exported
    Workload.objects.filter(slug="support-agent").update(target_cost_per_outcome=None)
    apply(write(tmp_path, exported, "exported.yaml"))
    assert Workload.objects.get(slug="support-agent").target_cost_per_outcome == Decimal("0.5")
