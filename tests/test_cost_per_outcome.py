"""Cost per outcome (issue 12): Σcost / Σoutcomes over any period, never an average of daily ratios; "—" where
no outcomes were reported; unknown where no usage had a price; members see only their teams' workloads; the
`outcome_cost` alert fires once per workload and complete month (tests/test_cost_per_outcome_alert.py)."""

import csv
import datetime as dt
import io
from decimal import Decimal
from types import SimpleNamespace

import pytest
import time_machine
from django.urls import reverse

from finops.models import AttributionRule, DailySpend, MonthlySpend, OutcomeCount, User, Workload
from finops.performance.selectors import outcomes
from finops.spend.services.attribution import history_reattribute
from ingest.services import usage_file_import
from tests.conftest import (
    make_openai_account,
    make_search_ranker,
    make_search_team,
    make_support_agent,
    make_support_team,
    make_user,
)
from tests.data_once import built_once, world_rows

NOV = dt.date(2026, 11, 1)
DAY = dt.timedelta(days=1)
NOW = dt.datetime(2026, 11, 22, 12, tzinfo=dt.UTC)


@pytest.fixture(autouse=True)
def _frozen(time_machine):
    time_machine.move_to(NOW)


def _router(support_team) -> Workload:
    return Workload.objects.create(
        team=support_team,
        name="Ticket router (fine-tune)",
        slug="ticket-router",
        latency_profile="realtime",
        outcome_unit="ticket routed",
    )


def _import(account, lines: list[str]):
    text = "\n".join(["day,model,input_tokens,output_tokens,cost,project", *lines])
    assert usage_file_import(account=account, stream=io.BytesIO(text.encode()), file_name="u.csv").status == "succeeded"


def _build_usage(openai_account, support_agent, search_ranker, router):
    """Support: $10 on Nov 1, $10 on Nov 2, nothing on Nov 3, $20 on Nov 4. Search: $2 a day. The router: only an
    in-house fine-tune with no price (unknown cost)."""
    lines = [
        "2026-11-01,gpt-5-mini,1000000,0,10,support",
        "2026-11-02,gpt-5-mini,1000000,0,10,support",
        "2026-11-04,gpt-5-mini,1000000,0,20,support",
    ]
    for offset in range(21):
        day = NOV + offset * DAY
        lines += [f"{day},gpt-5,100000,0,2,search", f"{day},acme-router-ft-8b,2000000,1000000,,router"]
    _import(openai_account, lines)
    for priority, (workload, project) in enumerate(
        ((support_agent, "support"), (search_ranker, "search"), (router, "router")), 1
    ):
        AttributionRule.objects.create(workload=workload, priority=priority, project=project)
    history_reattribute()


@pytest.fixture(scope="module")
def world(django_db_setup, django_db_blocker):
    """The organisation and its November, built once for the module (tests/data_once.py): every test reads it."""
    with built_once(django_db_blocker), time_machine.travel(NOW):
        support_team, search_team = make_support_team(), make_search_team()
        built = SimpleNamespace(
            support_agent=make_support_agent(support_team),
            search_ranker=make_search_ranker(search_team),
            router=_router(support_team),
            fiona=make_user("fiona", User.Role.FINANCE),
            sam=make_user("sam", User.Role.MEMBER, team=support_team),
            tess=make_user("tess", User.Role.MEMBER, team=search_team),
        )
        _build_usage(make_openai_account(), built.support_agent, built.search_ranker, built.router)
        yield built


@pytest.fixture
def usage(world, db):
    """The module's November is there (built once by `world`)."""


support_agent, search_ranker, router, fiona, sam, tess = world_rows(
    "support_agent", "search_ranker", "router", "fiona", "sam", "tess"
)


@pytest.fixture
def tickets(support_agent, usage):
    """Nov 1: 100 tickets ($0.10 each); Nov 2: none (a day of spend, no outcomes); Nov 3: 50 and no spend ($0 each);
    Nov 4: 10 ($2.00 each). Two sources on Nov 4 add up. Created for each test that names it, on the module's
    November."""
    OutcomeCount.objects.create(workload=support_agent, day=NOV, count=100)
    OutcomeCount.objects.create(workload=support_agent, day=NOV + 2 * DAY, count=50)
    OutcomeCount.objects.create(workload=support_agent, day=NOV + 3 * DAY, count=4, source="zendesk")
    OutcomeCount.objects.create(workload=support_agent, day=NOV + 3 * DAY, count=6, source="intercom")


def _figure(workload, start, end) -> outcomes.CostPerOutcome:
    return outcomes.for_workload(
        DailySpend.objects.all(), MonthlySpend.objects.all(), workload.id, start, end, today=dt.date(2026, 11, 22)
    )


def _csv(response) -> list[dict]:
    assert response["Content-Type"].startswith("text/csv")
    return list(csv.DictReader(io.StringIO(response.content.decode())))


# --- the selector ---


def test_cost_per_outcome_is_the_sum_of_spend_over_the_sum_of_outcomes_not_an_average_of_daily_ratios(
    support_agent, tickets
):
    figure = _figure(support_agent, NOV, NOV + 5 * DAY)
    assert (figure.cost, figure.outcomes) == (Decimal(40), 160)
    assert figure.per_outcome == Decimal("0.25")  # $40 over 160 tickets, the $10 of Nov 2 included
    points = outcomes.trend(
        DailySpend.objects.all(),
        MonthlySpend.objects.all(),
        support_agent.id,
        NOV,
        NOV + 5 * DAY,
        today=dt.date(2026, 11, 22),
    )
    daily_ratios = [p["per_outcome"] for p in points if p["per_outcome"] is not None]
    assert daily_ratios == [Decimal("0.1"), Decimal(0), Decimal(2)]
    assert sum(daily_ratios) / len(daily_ratios) != figure.per_outcome  # $0.70: what an average of ratios would say


def test_outcomes_with_no_spend_cost_zero_per_outcome_a_known_figure(support_agent, tickets):
    figure = _figure(support_agent, NOV + 2 * DAY, NOV + 3 * DAY)
    assert (figure.cost, figure.outcomes, figure.per_outcome) == (Decimal(0), 50, Decimal(0))


def test_a_period_with_no_outcomes_has_no_cost_per_outcome(support_agent, tickets):
    figure = _figure(support_agent, NOV + DAY, NOV + 2 * DAY)
    assert (figure.cost, figure.outcomes, figure.per_outcome) == (Decimal(10), 0, None)


def test_outcomes_of_a_workload_whose_usage_has_no_price_have_an_unknown_cost_with_the_tokens_flagged(router, usage):
    OutcomeCount.objects.create(workload=router, day=NOV, count=30)
    figure = _figure(router, NOV, NOV + 2 * DAY)
    assert (figure.cost, figure.outcomes, figure.per_outcome) == (None, 30, None)
    assert figure.unpriced_tokens == 2 * 3_000_000


def test_a_long_period_reads_the_same_cost_per_outcome_as_its_days(support_agent, tickets):
    long = _figure(support_agent, dt.date(2026, 6, 1), NOV + 5 * DAY)  # > 92 days: whole months from the monthly rollup
    assert (long.cost, long.outcomes, long.per_outcome) == (Decimal(40), 160, Decimal("0.25"))


def test_the_trend_by_month_is_each_months_own_sum_over_sum(support_agent, tickets):
    OutcomeCount.objects.create(workload=support_agent, day=dt.date(2026, 10, 5), count=3)
    points = outcomes.trend(
        DailySpend.objects.all(),
        MonthlySpend.objects.all(),
        support_agent.id,
        dt.date(2026, 9, 1),
        dt.date(2026, 12, 1),
        today=dt.date(2026, 11, 22),
        by="month",
    )
    assert [(p["point"], p["outcomes"], p["per_outcome"]) for p in points] == [
        (dt.date(2026, 9, 1), 0, None),
        (dt.date(2026, 10, 1), 3, Decimal(0)),
        (dt.date(2026, 11, 1), 160, Decimal("0.25")),
    ]


def test_a_cheap_outcome_shows_four_decimals_and_never_reads_zero():
    from finops.core.display import per_outcome

    assert [
        per_outcome(v)
        for v in (Decimal("0.42"), Decimal("12.5"), Decimal("0.0042"), Decimal("0.00001"), Decimal(0), None)
    ] == ["$0.42", "$12.50", "$0.0042", "<$0.0001", "$0.00", "—"]


# --- the workload page ---


def test_the_workload_page_shows_the_cost_per_outcome_with_its_unit_target_and_count(
    client_as, fiona, support_agent, tickets
):
    support_agent.target_cost_per_outcome = Decimal("0.20")
    support_agent.save()
    response = client_as(fiona).get(
        reverse("workload-detail", args=["support-agent"]), {"start": "2026-11-01", "end": "2026-11-06"}
    )
    assert response.context["outcome"].per_outcome == Decimal("0.25")
    html = response.content.decode()
    assert 'data-testid="cost-per-outcome">$0.25 per ticket resolved</span>' in html
    assert 'data-testid="outcome-count">160</span>' in html
    assert (
        'data-testid="outcome-target">$0.20 per ticket resolved</span>' in html and 'data-testid="over-target"' in html
    )


def test_the_workload_page_reads_a_dash_where_the_period_has_no_outcomes(client_as, fiona, support_agent, tickets):
    response = client_as(fiona).get(
        reverse("workload-detail", args=["support-agent"]), {"start": "2026-11-02", "end": "2026-11-03"}
    )
    html = response.content.decode()
    assert 'data-testid="cost-per-outcome">—</span>' in html and "no outcomes reported in this period" in html
    assert response.context["outcome_chart"] is None and 'data-testid="no-outcome-trend"' in html
    assert "$0.00 per" not in html


def test_the_workload_page_reads_an_unknown_cost_per_outcome_as_a_dash_with_the_unpriced_tokens(
    client_as, fiona, router, usage
):
    OutcomeCount.objects.create(workload=router, day=NOV, count=30)
    response = client_as(fiona).get(
        reverse("workload-detail", args=["ticket-router"]), {"start": "2026-11-01", "end": "2026-11-03"}
    )
    html = response.content.decode()
    assert 'data-testid="cost-per-outcome">—</span>' in html and "cost unknown: 6.0M tokens unpriced" in html
    assert "$0.00 per" not in html and response.context["outcome_chart"] is None


def test_a_long_period_draws_the_trend_by_month(client_as, fiona, support_agent, tickets):
    response = client_as(fiona).get(
        reverse("workload-detail", args=["support-agent"]), {"start": "2026-06-01", "end": "2026-11-22"}
    )
    (line, *_) = response.context["outcome_chart"]["data"]
    assert line["x"] == ["2026-06-01", "2026-07-01", "2026-08-01", "2026-09-01", "2026-10-01", "2026-11-01"]
    assert line["y"] == [None, None, None, None, None, 0.25]


def test_the_trend_leaves_days_without_outcomes_as_gaps_not_zeros(client_as, fiona, support_agent, tickets):
    response = client_as(fiona).get(
        reverse("workload-detail", args=["support-agent"]), {"start": "2026-11-01", "end": "2026-11-06"}
    )
    (line, *_) = response.context["outcome_chart"]["data"]
    assert line["x"] == ["2026-11-01", "2026-11-02", "2026-11-03", "2026-11-04", "2026-11-05"]
    assert line["y"] == [0.1, None, 0.0, 2.0, None] and line["connectgaps"] is False


# --- the overview table and its CSV ---


def test_the_overview_lists_the_workloads_that_report_outcomes_with_their_cost_per_outcome(
    client_as, fiona, support_agent, router, tickets
):
    support_agent.target_cost_per_outcome = Decimal("0.30")
    support_agent.save()
    OutcomeCount.objects.create(workload=router, day=NOV, count=30)
    query = {"start": "2026-11-01", "end": "2026-11-06"}
    rows = client_as(fiona).get(reverse("overview"), query).context["tables"]["cost_per_outcome"]
    assert [(r["label"], r["outcomes"], r["per_outcome"], r["over_target"]) for r in rows] == [
        ("Support agent", 160, Decimal("0.25"), "no"),
        ("Ticket router (fine-tune)", 30, None, ""),
    ]
    assert _csv(client_as(fiona).get(reverse("overview"), {**query, "csv": "cost_per_outcome"})) == [
        {
            "Workload": "Support agent",
            "Team": "Support Platform",
            "Outcome unit": "ticket resolved",
            "Outcomes": "160",
            "Spend": "40.00",
            "Unpriced tokens": "0",
            "Cost per outcome": "0.25",
            "Target": "0.30",
            "Over target": "no",
            "Currency": "USD",
        },
        {
            "Workload": "Ticket router (fine-tune)",
            "Team": "Support Platform",
            "Outcome unit": "ticket routed",
            "Outcomes": "30",
            "Spend": "",
            "Unpriced tokens": "15000000",
            "Cost per outcome": "",
            "Target": "",
            "Over target": "",
            "Currency": "USD",
        },
    ]


def test_a_member_sees_only_their_teams_workloads_in_the_cost_per_outcome_table(
    client_as, tess, search_ranker, support_agent, tickets
):
    OutcomeCount.objects.create(workload=search_ranker, day=NOV, count=4)
    query = {"start": "2026-11-01", "end": "2026-11-06"}
    rows = client_as(tess).get(reverse("overview"), query).context["tables"]["cost_per_outcome"]
    assert [(r["label"], r["per_outcome"]) for r in rows] == [("Search ranker", Decimal("2.5"))]  # $10 over 4
    assert [
        r["Workload"] for r in _csv(client_as(tess).get(reverse("overview"), {**query, "csv": "cost_per_outcome"}))
    ] == ["Search ranker"]


def test_a_member_cannot_open_another_teams_workload_page(client_as, tess, tickets):
    assert client_as(tess).get(reverse("workload-detail", args=["support-agent"])).status_code == 404


# --- the API ---


def test_the_api_gives_the_cost_per_outcome_as_decimal_strings_and_null_where_unknown(client_as, sam, tickets):
    url = "/api/v1/workloads/support-agent/cost-per-outcome"
    body = client_as(sam).get(url, {"start": "2026-11-01", "end": "2026-11-06"}).json()
    assert body["outcome_unit"] == "ticket resolved" and body["by"] == "period"
    assert body["points"] == [
        {
            "start": "2026-11-01",
            "end": "2026-11-06",
            "cost": "40.000000",
            "unpriced_tokens": 0,
            "outcomes": 160,
            "cost_per_outcome": "0.250000",
        }
    ]
    days = client_as(sam).get(url, {"start": "2026-11-01", "end": "2026-11-04", "by": "day"}).json()["points"]
    assert [(p["start"], p["cost"], p["outcomes"], p["cost_per_outcome"]) for p in days] == [
        ("2026-11-01", "10.000000", 100, "0.100000"),
        ("2026-11-02", "10.000000", 0, None),
        ("2026-11-03", "0.000000", 50, "0.000000"),
    ]
    months = client_as(sam).get(url, {"start": "2026-10-15", "end": "2026-11-06", "by": "month"}).json()["points"]
    assert [(p["start"], p["end"], p["cost_per_outcome"]) for p in months] == [
        ("2026-10-15", "2026-11-01", None),
        ("2026-11-01", "2026-11-06", "0.250000"),
    ]


def test_another_teams_workload_answers_404_in_the_api(client_as, tess, tickets):
    response = client_as(tess).get(
        "/api/v1/workloads/support-agent/cost-per-outcome", {"start": "2026-11-01", "end": "2026-11-06"}
    )
    assert response.status_code == 404


def test_the_api_refuses_an_unknown_parameter_and_a_bad_grouping(client_as, sam, tickets):
    url = "/api/v1/workloads/support-agent/cost-per-outcome"
    assert client_as(sam).get(url, {"start": "2026-11-01", "end": "2026-11-06", "team": "x"}).status_code == 400
    assert client_as(sam).get(url, {"start": "2026-11-01", "end": "2026-11-06", "by": "week"}).status_code == 400
