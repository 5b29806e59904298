"""Alert evaluation (issue 10): spend spikes, unpriced models and failing or silent sources raised from real
imports, each once; caps across month and quarter rollovers, restated spend and forecasts on day 1 and day 20.
Usage goes in through the real import path; time is frozen where the day matters."""

import datetime as dt
import io
from decimal import Decimal

import pytest

from finops.alerts import spikes
from finops.alerts.evaluate import alerts_evaluate
from finops.alerts.selectors.caps import cap_status
from finops.alerts.selectors.spikes import spikes_find
from finops.alerts.services.spend_changes import SpendChange
from finops.core import display
from finops.forecast.projection import forecast
from finops.models import Account, AlertEvent, AlertKind, AttributionRule, Cap, IngestRun, Provider, Workload
from ingest.services import usage_file_import
from tests.conftest import stored_cap

D = Decimal
HEADER = "day,model,input_tokens,output_tokens,cost,project"


def at(time_machine, *args):
    time_machine.move_to(dt.datetime(*args, tzinfo=dt.UTC), tick=False)


def days(start: dt.date, end: dt.date):
    """Every day of [start, end)."""
    while start < end:
        yield start
        start += dt.timedelta(days=1)


def import_rows(account: Account, rows: list[str], file_name: str = "usage.csv") -> IngestRun:
    run = usage_file_import(
        account=account, stream=io.BytesIO("\n".join([HEADER, *rows]).encode()), file_name=file_name
    )
    assert run.status == IngestRun.Status.SUCCEEDED, run.error
    return run


def events(kind: str) -> list[AlertEvent]:
    return list(AlertEvent.objects.filter(kind=kind).order_by("period_start", "threshold"))


@pytest.fixture
def rules(support_agent, search_ranker):
    AttributionRule.objects.create(workload=support_agent, priority=1, project="support")
    AttributionRule.objects.create(workload=search_ranker, priority=2, project="search")


# --- spend spikes ---

SPIKE_DAY = dt.date(2026, 11, 23)


@pytest.fixture
def spiky(time_machine, openai_account, rules):
    """Through 2026-11-22, 28 days of the support agent at $128 / $138 (median $133) and search at about $20;
    on 2026-11-23 support spends $812.40 and search $26; today is 2026-11-24."""
    at(time_machine, 2026, 11, 24, 9)
    rows = []
    for n, day in enumerate(days(SPIKE_DAY - dt.timedelta(days=28), SPIKE_DAY)):
        rows += [
            f"{day},gpt-5-mini,1000000,0,{128 if n % 2 else 138},support",
            f"{day},gpt-5,1000,0,{19 + n % 3},search",
        ]
    rows += [f"{SPIKE_DAY},gpt-5-mini,5000000,0,812.40,support", f"{SPIKE_DAY},gpt-5,1000,0,26,search"]
    import_rows(openai_account, rows)


def test_a_workload_spending_six_times_its_usual_day_raises_one_spike_with_its_baseline(
    spiky, support_agent, support_team
):
    raised = alerts_evaluate()
    (event,) = events(AlertKind.SPEND_SPIKE)
    assert raised == [event]
    assert event.subject == f"workload:{support_agent.id}" and event.period_start == SPIKE_DAY and event.threshold == 0
    assert event.workload == support_agent and event.team == support_team
    assert event.title == "Support agent spent $812.40 on 23 November 2026, 6.1× its usual $133.00 a day"
    details = event.details
    assert (details["day"], details["cost"], details["baseline_median"]) == ("2026-11-23", "812.40", "133.00")
    assert (details["spread"], details["k"], details["threshold"], details["min_change"]) == (
        "13.30",
        "4.00",
        "186.20",
        "50.00",
    )
    assert details["workload"] == "Support agent" and details["team"] == "Support Platform"
    assert "median" in details["method"] and "MAD" in details["method"]


def test_evaluating_twice_raises_the_spike_once(spiky):
    assert len(alerts_evaluate()) == 1
    assert alerts_evaluate() == []
    assert len(events(AlertKind.SPEND_SPIKE)) == 1


def test_the_beat_judges_yesterday_only_so_the_spike_is_not_raised_again_or_late(spiky, time_machine):
    at(time_machine, 2026, 11, 23, 22)  # the spike day is today, not complete yet
    alerts_evaluate()
    at(time_machine, 2026, 11, 26, 9)  # two days after: the beat looks at yesterday only
    alerts_evaluate()
    assert events(AlertKind.SPEND_SPIKE) == []


def test_after_a_spend_change_only_the_changed_workloads_and_complete_days_are_judged(
    spiky, support_agent, search_ranker
):
    today = dt.date(2026, 11, 24)
    assert (
        alerts_evaluate(change=SpendChange(days=(SPIKE_DAY,), reason="reattribution", workload_ids=(search_ranker.id,)))
        == []
    )
    assert alerts_evaluate(change=SpendChange(days=(today,), reason="ingest", workload_ids=(support_agent.id,))) == []
    (event,) = alerts_evaluate(
        change=SpendChange(days=(SPIKE_DAY, today), reason="ingest", workload_ids=(support_agent.id,))
    )
    assert event.workload == support_agent


def test_an_ingest_naming_only_its_account_judges_every_workload_on_the_changed_days(
    spiky, openai_account, support_agent
):
    (event,) = alerts_evaluate(change=SpendChange(days=(SPIKE_DAY,), reason="ingest", account_ids=(openai_account.id,)))
    assert event.workload == support_agent


def test_a_workload_moved_to_another_team_has_its_new_teams_workloads_judged(spiky, support_team, search_team):
    assert (
        alerts_evaluate(change=SpendChange(days=(SPIKE_DAY,), reason="workload moved", team_ids=(search_team.id,)))
        == []
    )
    (event,) = alerts_evaluate(
        change=SpendChange(days=(SPIKE_DAY,), reason="workload moved", team_ids=(support_team.id,))
    )
    assert event.team == support_team


def test_a_backfill_of_days_older_than_two_weeks_raises_no_spike_for_them(spiky, time_machine, support_agent):
    at(time_machine, 2026, 12, 8, 9)  # the spike day is now 15 days ago: history, not news
    alerts_evaluate(change=SpendChange(days=(SPIKE_DAY,), reason="ingest", workload_ids=(support_agent.id,)))
    assert events(AlertKind.SPEND_SPIKE) == []
    at(time_machine, 2026, 12, 7, 9)
    alerts_evaluate(change=SpendChange(days=(SPIKE_DAY,), reason="ingest", workload_ids=(support_agent.id,)))
    assert len(events(AlertKind.SPEND_SPIKE)) == 1


def test_unattributed_spend_spiking_is_raised_for_the_unattributed_group(spiky, openai_account):
    rows = [f"{day},gpt-5-mini,1000,0,40,nobody" for day in days(SPIKE_DAY - dt.timedelta(days=28), SPIKE_DAY)]
    rows += [f"{SPIKE_DAY},gpt-5-mini,1000,0,400,nobody"]
    import_rows(openai_account, rows + [f"{SPIKE_DAY},gpt-5-mini,5000000,0,812.40,support"], "unattributed.csv")
    raised = {e.subject: e for e in alerts_evaluate()}
    event = raised["workload:none"]
    assert event.workload is None and event.team is None
    assert event.title == "Unattributed spent $400.00 on 23 November 2026, 10.0× its usual $40.00 a day"


def test_a_new_workload_with_under_14_days_of_spend_gets_no_spike_verdict(time_machine, openai_account, rules):
    at(time_machine, 2026, 11, 24, 9)
    rows = [f"{day},gpt-5-mini,1000,0,100,support" for day in days(dt.date(2026, 11, 10), SPIKE_DAY)]  # 13 days
    import_rows(openai_account, rows + [f"{SPIKE_DAY},gpt-5-mini,1000,0,5000,support"])
    assert alerts_evaluate() == []


# --- unpriced usage ---


def test_a_model_with_no_price_is_raised_once_whatever_later_imports_find(time_machine, openai_account):
    at(time_machine, 2026, 11, 24, 9)
    import_rows(
        openai_account, ["2026-11-23,acme-router-ft-8b,2000000,1000000,,router", "2026-11-23,gpt-5-mini,1000,0,1,x"]
    )
    (event,) = alerts_evaluate()
    assert event.kind == AlertKind.UNPRICED_USAGE and event.subject == "model:openai/acme-router-ft-8b"
    assert event.period_start == dt.date(2000, 1, 1)  # one constant period: once per model, ever
    assert event.details["first_day"] == "2026-11-23" and event.details["tokens"] == 3000000
    assert event.details["accounts"] == ["openai-prod"] and event.details["provider"] == "openai"
    assert "no known price" in event.title
    # The same model found again, even on an earlier day by a backfill, is the same event.
    import_rows(openai_account, ["2026-10-02,acme-router-ft-8b,10,10,,router"], "backfill.csv")
    assert (
        alerts_evaluate(
            change=SpendChange(days=(dt.date(2026, 10, 2),), reason="ingest", account_ids=(openai_account.id,))
        )
        == []
    )
    assert alerts_evaluate() == []
    assert len(events(AlertKind.UNPRICED_USAGE)) == 1


def test_the_beat_looks_at_recent_days_for_unpriced_models_and_a_change_at_its_own_days(time_machine, openai_account):
    at(time_machine, 2026, 11, 24, 9)
    import_rows(openai_account, ["2026-11-01,acme-old-ft,1000,0,,x"])
    alerts_evaluate()
    assert events(AlertKind.UNPRICED_USAGE) == []  # three weeks old: the import's own change would have raised it
    (event,) = alerts_evaluate(
        change=SpendChange(days=(dt.date(2026, 11, 1),), reason="ingest", account_ids=(openai_account.id,))
    )
    assert event.subject == "model:openai/acme-old-ft"


# --- sources failing or silent ---


def test_a_file_source_whose_data_is_late_is_raised_once_per_time_it_goes_quiet(time_machine, openai_account):
    at(time_machine, 2026, 11, 20, 9)
    import_rows(openai_account, ["2026-11-19,gpt-5-mini,1000,0,1,x"])
    assert events(AlertKind.SOURCE_FAILING) == [] and alerts_evaluate() == []
    at(time_machine, 2026, 11, 21, 9)
    assert alerts_evaluate() == []  # 2 days behind is on time (STALE_AFTER_DAYS = 2)
    at(time_machine, 2026, 11, 22, 9)
    (event,) = alerts_evaluate()
    assert event.subject == f"account:{openai_account.id}" and event.account == openai_account
    assert event.period_start == dt.date(2026, 11, 20)  # the day after its latest data
    assert event.title == "openai-prod has no data after 19 November 2026: 3 days behind"
    at(time_machine, 2026, 11, 25, 9)
    assert alerts_evaluate() == []
    import_rows(openai_account, ["2026-11-24,gpt-5-mini,1000,0,1,x"], "caught-up.csv")
    assert alerts_evaluate() == []
    at(time_machine, 2026, 11, 27, 9)
    (again,) = alerts_evaluate()  # a new silence: a new condition start
    assert again.period_start == dt.date(2026, 11, 25)


def test_a_failing_pull_is_raised_once_until_a_success_and_again_when_it_fails_anew(time_machine, openai_account):
    def pull(status: str, error: str = "") -> None:
        IngestRun.objects.create(account=openai_account, trigger="schedule", status=status, error=error)

    at(time_machine, 2026, 11, 20, 9)
    import_rows(openai_account, ["2026-11-19,gpt-5-mini,1000,0,1,x"])
    pull("failed", "costs page 2: HTTP 500 after 3 retries")
    (event,) = alerts_evaluate(
        change=SpendChange(days=(dt.date(2026, 11, 20),), reason="ingest", account_ids=(openai_account.id,))
    )
    assert event.period_start == dt.date(2026, 11, 20) and event.account == openai_account
    assert event.details["error"] == "costs page 2: HTTP 500 after 3 retries"
    at(time_machine, 2026, 11, 21, 9)
    pull("failed", "costs page 2: HTTP 500 after 3 retries")
    assert alerts_evaluate() == []  # the same failure, retried: the condition started on the 20th
    pull("succeeded")
    assert alerts_evaluate() == []
    at(time_machine, 2026, 11, 22, 9)
    pull("failed", "costs page 1: HTTP 500 after 3 retries")
    (again,) = alerts_evaluate()
    assert again.period_start == dt.date(2026, 11, 22)


def test_a_refused_file_is_the_uploaders_error_and_raises_no_source_alert(time_machine, openai_account):
    at(time_machine, 2026, 11, 20, 9)
    import_rows(openai_account, ["2026-11-19,gpt-5-mini,1000,0,1,x"])
    bad = io.BytesIO(f"{HEADER}\n2026-11-20,gpt-5-mini,-5,0,1,x".encode())
    assert usage_file_import(account=openai_account, stream=bad, file_name="bad.csv").status == IngestRun.Status.FAILED
    assert (
        alerts_evaluate(
            change=SpendChange(days=(dt.date(2026, 11, 20),), reason="ingest", account_ids=(openai_account.id,))
        )
        == []
    )
    assert alerts_evaluate() == [] and events(AlertKind.SOURCE_FAILING) == []


@pytest.fixture
def api_account(db):
    return Account.objects.create(
        name="openai-api",
        provider=Provider.objects.get(slug="openai"),
        connector="openai_api",
        sync_interval_minutes=60,
        last_success_at=dt.datetime(2026, 11, 21, 10, tzinfo=dt.UTC),
    )


def test_an_api_source_refusing_its_key_says_since_when_and_why(time_machine, api_account):
    at(time_machine, 2026, 11, 22, 8)
    IngestRun.objects.create(account=api_account, trigger="schedule", status="failed", error="401 Unauthorized")
    api_account.enabled = False  # a 401 switches the account off
    api_account.save()
    (event,) = alerts_evaluate()
    assert event.title == "openai-api has not synced since 21 November 2026, 10:00 UTC (disabled)"
    assert event.period_start == dt.date(2026, 11, 22) and event.details["error"] == "401 Unauthorized"
    at(time_machine, 2026, 11, 23, 8)
    assert alerts_evaluate() == []


def test_an_api_source_is_silent_after_three_sync_intervals_and_at_least_two_hours(time_machine, api_account):
    at(time_machine, 2026, 11, 21, 12, 59)  # 2 h 59 min without a sync of an hourly account: still on schedule
    assert alerts_evaluate() == []
    at(time_machine, 2026, 11, 21, 13, 1)
    (event,) = alerts_evaluate()
    assert event.period_start == dt.date(2026, 11, 21)
    assert event.title.startswith(
        "openai-api has not synced since 21 November 2026, 10:00 UTC: no successful sync for 3 h 1 min"
    )
    api_account.sync_interval_minutes = 10  # 3 × 10 min is under the 2-hour floor
    api_account.last_success_at = dt.datetime(2026, 11, 22, 10, tzinfo=dt.UTC)
    api_account.save()
    at(time_machine, 2026, 11, 22, 11, 30)
    assert alerts_evaluate() == []
    at(time_machine, 2026, 11, 22, 12, 1)
    assert len(alerts_evaluate()) == 1


def test_an_account_switched_off_by_an_admin_is_not_alerted(time_machine, api_account):
    at(time_machine, 2026, 11, 25, 8)
    api_account.enabled = False
    api_account.save()
    assert alerts_evaluate() == []


# --- caps: rollovers, restated spend, forecasts (finops.alerts.selectors.caps) ---


def spend(account: Account, amounts: dict[dt.date, int | str], file_name: str = "spend.csv") -> None:
    import_rows(account, [f"{day},gpt-5-mini,1000,0,{cost},support" for day, cost in amounts.items()], file_name)


def caps_raised() -> list[AlertEvent]:
    """What an evaluation raised about caps (the same spend may also be a spike)."""
    return [event for event in alerts_evaluate() if event.cap_id]


def cap_events(cap: Cap) -> list[tuple]:
    return list(
        AlertEvent.objects.filter(cap=cap)
        .order_by("period_start", "kind", "threshold")
        .values_list("kind", "period_start", "threshold", "state")
    )


@pytest.fixture
def org_cap(db):
    return stored_cap(name="Org monthly", scope="org", amount=D(1000), alert_on_forecast=False)


def test_the_last_second_of_a_month_belongs_to_it_and_the_first_of_the_next_re_arms_the_cap(
    time_machine, openai_account, org_cap
):
    at(time_machine, 2026, 11, 30, 23, 59, 59)
    spend(openai_account, {day: 30 for day in days(dt.date(2026, 11, 1), dt.date(2026, 11, 30))})  # $870
    caps_raised()
    nov = dt.date(2026, 11, 1)
    assert cap_events(org_cap) == [("cap_threshold", nov, 50, "superseded"), ("cap_threshold", nov, 80, "pending")]
    spend(openai_account, {dt.date(2026, 11, 30): 200}, "last-day.csv")  # $1,070, in the last second of November
    (event,) = caps_raised()
    assert (event.period_start, event.threshold) == (nov, 100)
    assert event.title == "The organisation at 107% of its $1,000 November cap"
    at(time_machine, 2026, 12, 1, 0, 0, 0)
    assert caps_raised() == []  # a new month with nothing spent yet
    spend(openai_account, {dt.date(2026, 12, 1): 600}, "december.csv")
    (event,) = caps_raised()
    assert (event.period_start, event.threshold) == (dt.date(2026, 12, 1), 50)
    assert len(cap_events(org_cap)) == 4


def test_a_quarter_cap_rolls_over_at_midnight_utc_on_the_first_of_the_quarter(time_machine, openai_account):
    cap = stored_cap(
        name="Org quarterly", scope="org", period="quarter", amount=D(3000), thresholds=[100], alert_on_forecast=False
    )
    at(time_machine, 2026, 12, 31, 23, 59, 59)
    spend(openai_account, {dt.date(2026, 10, 1): 1000, dt.date(2026, 11, 15): 1000, dt.date(2026, 12, 31): 1000})
    (event,) = caps_raised()
    assert (event.period_start, event.threshold) == (dt.date(2026, 10, 1), 100)
    assert event.title == "The organisation at 100% of its $3,000 Q4 2026 cap"
    at(time_machine, 2027, 1, 1, 0, 0, 0)
    assert caps_raised() == []
    spend(openai_account, {dt.date(2027, 1, 1): 3500}, "january.csv")
    (event,) = caps_raised()
    assert (event.period_start, event.threshold) == (dt.date(2027, 1, 1), 100)
    assert event.details["period"] == "Q1 2027"
    assert [row[1] for row in cap_events(cap)] == [dt.date(2026, 10, 1), dt.date(2027, 1, 1)]


def test_spend_restated_down_and_back_up_in_a_period_raises_nothing_new(time_machine, openai_account, org_cap):
    at(time_machine, 2026, 11, 12, 9)
    spend(openai_account, {dt.date(2026, 11, 10): 1100})
    assert len(caps_raised()) == 3  # 50 and 80 superseded by 100
    spend(openai_account, {dt.date(2026, 11, 10): 400}, "corrected.csv")
    assert cap_status(org_cap, today=dt.date(2026, 11, 12)).spent == D(400)
    assert caps_raised() == []
    spend(openai_account, {dt.date(2026, 11, 10): 1100}, "restated-again.csv")
    assert caps_raised() == []
    assert [row[2] for row in cap_events(org_cap)] == [50, 80, 100]


@pytest.fixture
def forecast_cap(db):
    return stored_cap(name="Org forecast", scope="org", amount=D(1000), thresholds=[100])


def test_day_1_with_a_single_noisy_first_day_does_not_forecast_a_breach_from_it(
    time_machine, openai_account, forecast_cap
):
    at(time_machine, 2026, 12, 1, 18)
    spend(
        openai_account,
        {**{day: 20 for day in days(dt.date(2026, 11, 24), dt.date(2026, 12, 1))}, dt.date(2026, 12, 1): 900},
    )
    status = cap_status(forecast_cap, today=dt.date(2026, 12, 1))
    # $900 today would be $27,900 at that rate; the complete days ($20 a day) decide: 31 × $20 = $620, and the
    # forecast is never below the $900 already spent.
    assert status.forecast_method == "daily mean of the last 7 days"
    assert status.forecast == D(900) and not status.forecast_breach
    caps_raised()
    assert cap_events(forecast_cap) == []


def test_day_20_forecasts_by_finops_forecast_and_one_noisy_day_does_not_move_it(
    time_machine, openai_account, forecast_cap
):
    at(time_machine, 2026, 12, 20, 9)
    amounts = {day: 35 for day in days(dt.date(2026, 12, 1), dt.date(2026, 12, 20))}
    amounts[dt.date(2026, 12, 18)] = 200  # a one-off day: clipped, it does not move the level
    spend(openai_account, amounts)
    (event,) = caps_raised()
    assert (event.kind, event.period_start, event.threshold) == ("cap_forecast", dt.date(2026, 12, 1), 100)
    expected = forecast(
        {d: D(v) for d, v in amounts.items()},
        start=dt.date(2026, 12, 1),
        end=dt.date(2027, 1, 1),
        as_of=dt.date(2026, 12, 20),
        at_least=D(830),
    )
    assert event.details["forecast"] == display.csv_decimal(expected.total)
    assert event.details["forecast_low"] == display.csv_decimal(expected.low)
    assert abs(expected.total - D(1250)) < D(15)  # $830 on 19 complete days + about $35/day × 12 days left
    assert event.details["forecast_method"].startswith("by day of week with trend")
    assert event.title == (
        f"The organisation forecast to reach {display.money_exact(expected.total)} "
        f"({expected.total / 10:.0f}%) of its $1,000 December cap"
    )
    assert caps_raised() == []


def test_a_quiet_spell_is_forecast_from_the_weeks_before_it_as_the_function_says(
    time_machine, openai_account, forecast_cap
):
    at(time_machine, 2026, 12, 3, 9)
    amounts = {day: 60 for day in days(dt.date(2026, 11, 1), dt.date(2026, 11, 21))}
    spend(openai_account, {**amounts, dt.date(2026, 12, 1): 50, dt.date(2026, 12, 2): 50})
    status = cap_status(forecast_cap, today=dt.date(2026, 12, 3))
    history = {**{d: D(v) for d, v in amounts.items()}, dt.date(2026, 12, 1): D(50), dt.date(2026, 12, 2): D(50)}
    assert status.projection == forecast(
        history, start=dt.date(2026, 12, 1), end=dt.date(2027, 1, 1), as_of=dt.date(2026, 12, 3), at_least=D(100)
    )
    assert status.forecast_method.startswith("by day of week with trend")  # November's weeks are its history


def test_with_no_history_at_all_there_is_no_forecast(time_machine, openai_account, forecast_cap):
    at(time_machine, 2026, 12, 3, 9)
    spend(openai_account, {dt.date(2026, 12, 3): 300})
    status = cap_status(forecast_cap, today=dt.date(2026, 12, 3))
    assert status.forecast is None and status.forecast_method == "not enough history"
    assert caps_raised() == [] and cap_events(forecast_cap) == []


def test_spikes_of_every_workload_are_judged_from_one_read_of_the_rollup(
    time_machine, openai_account, support_team, django_assert_num_queries
):
    at(time_machine, 2026, 11, 24, 9)
    rows = []
    for n in range(40):
        workload = Workload.objects.create(team=support_team, name=f"Workload {n}", slug=f"w{n}")
        AttributionRule.objects.create(workload=workload, priority=n + 1, project=f"w{n}")
        rows += [
            f"{day},gpt-5-mini,1000,0,{100 + n},w{n}" for day in days(dt.date(2026, 10, 26), dt.date(2026, 11, 24))
        ]
    rows[-1] = "2026-11-23,gpt-5-mini,1000,0,900,w39"
    import_rows(openai_account, rows)
    with django_assert_num_queries(1):  # all 40 workloads' 29 days in one grouped read
        assert spikes_find([dt.date(2026, 11, 23)]) != []
    with django_assert_num_queries(5):  # … then the workloads' names, and a savepoint + insert for the one spike
        (event,) = spikes.evaluate(today=dt.date(2026, 11, 24))
    assert event.workload.slug == "w39"


def test_a_spike_that_goes_on_is_one_episode_and_a_new_one_starts_after_an_ordinary_day(
    spiky, time_machine, openai_account, support_agent
):
    at(time_machine, 2026, 11, 28, 9)
    spend = {"2026-11-24": 820, "2026-11-25": 800, "2026-11-26": 130, "2026-11-27": 790}
    import_rows(openai_account, [f"{day},gpt-5-mini,1000,0,{cost},support" for day, cost in spend.items()], "later.csv")
    changed = tuple(days(SPIKE_DAY, dt.date(2026, 11, 28)))
    alerts_evaluate(change=SpendChange(days=changed, reason="ingest", workload_ids=(support_agent.id,)))
    assert [e.period_start for e in events(AlertKind.SPEND_SPIKE)] == [SPIKE_DAY, dt.date(2026, 11, 27)]


def test_importing_an_old_month_does_not_say_the_source_is_silent_only_the_beat_judges_that(
    openai_account, time_machine
):
    """A backfill (or the demo's monthly files imported in order) brings old data: right after it the account is
    "behind", but data just arrived; silence is judged on the schedule, against the data as it then stands."""
    from finops.alerts import evaluate as evaluations
    from finops.alerts.services.spend_changes import SpendChange
    from finops.models import AlertEvent

    time_machine.move_to(dt.datetime(2026, 11, 24, 12, tzinfo=dt.UTC))
    csv = "day,model,input_tokens,output_tokens,cost\n2026-07-30,gpt-5-mini,10,10,1.00\n"
    assert (
        usage_file_import(account=openai_account, stream=io.BytesIO(csv.encode()), file_name="july.csv").status
        == "succeeded"
    )
    change = SpendChange(days=(dt.date(2026, 7, 30),), reason="ingest", account_ids=(openai_account.id,))
    evaluations.alerts_evaluate(change=change, today=dt.date(2026, 11, 24))
    assert not AlertEvent.objects.filter(kind="source_failing").exists()
    evaluations.alerts_evaluate(today=dt.date(2026, 11, 24))  # the beat
    assert (
        AlertEvent.objects.get(kind="source_failing").title
        == "openai-prod has no data after 30 July 2026: 117 days behind"
    )
