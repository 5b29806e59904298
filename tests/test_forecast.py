"""The one forecast (finops.forecast.projection, docs/forecast.md): what it answers, and that every page shows its
figures
rather than computing its own."""

import datetime as dt
import io
import re
from decimal import Decimal
from pathlib import Path

import pytest
from django.urls import reverse

from finops.alerts.selectors.caps import cap_status
from finops.contracts.selectors import contract_status
from finops.core import display
from finops.forecast.projection import forecast, history_start, run_rate
from finops.models import Contract, Provider
from finops.reports.selectors.tco_report import tco_report
from finops.spend.selectors.spend import daily_costs, visible_spend
from ingest.services import usage_file_import
from tests.conftest import stored_cap

D = dt.date
NOVEMBER, DECEMBER = D(2026, 11, 1), D(2026, 12, 1)


def weekly(start: dt.date, days: int, weekday: str = "100", weekend: str = "50", *, growth: str = "0") -> dict:
    """Weekdays at `weekday`, Saturdays and Sundays at `weekend`, each day `growth` more than the day before."""
    return {
        start + dt.timedelta(days=n): Decimal(weekday if (start + dt.timedelta(days=n)).weekday() < 5 else weekend)
        + Decimal(growth) * n
        for n in range(days)
    }


def test_a_weekly_rhythm_is_forecast_by_day_of_week_where_the_run_rate_misjudges_the_weekends():
    # 8 weeks of history before 10 Jan 2026; January 2026 ends on a Saturday, so its last 21 days hold 6 weekend days
    # where a week holds 2: the 7-day run rate over-states them.
    daily = weekly(D(2025, 11, 15), 56)
    expected = sum(weekly(D(2026, 1, 1), 31).values())
    made = forecast(daily | weekly(D(2026, 1, 1), 9), start=D(2026, 1, 1), end=D(2026, 2, 1), as_of=D(2026, 1, 10))
    assert made.total == expected  # to the cent: the rhythm is read exactly
    assert made.low <= made.total <= made.high
    assert made.method.startswith("by day of week with trend")
    naive = run_rate(daily | weekly(D(2026, 1, 1), 9), start=D(2026, 1, 1), end=D(2026, 2, 1), as_of=D(2026, 1, 10))
    assert abs(naive - expected) > Decimal(30)  # 7 weekend days in the 22 left, where the week's mean assumes 6.3


def test_a_ramp_is_followed_and_damped():
    daily = weekly(D(2026, 9, 1), 70, "100", "100", growth="5")  # +$5 a day, every day
    flat_mean = sum(v for d, v in daily.items() if d >= D(2026, 10, 13)) / 28
    made = forecast(daily, start=NOVEMBER, end=DECEMBER, as_of=D(2026, 11, 10))
    actual = sum(v for d, v in daily.items() if d >= NOVEMBER)
    assert made.actual == actual
    assert made.total > actual + flat_mean * 21  # above the run rate: the ramp goes on
    assert made.total < actual + sum(Decimal(100 + 5 * n) for n in range(70, 91))  # but damped, not extrapolated whole


def test_a_one_off_day_does_not_move_the_level():
    daily = weekly(D(2026, 9, 15), 56)
    daily[D(2026, 11, 1)] += Decimal(5000)  # a monthly tax line
    without = forecast(weekly(D(2026, 9, 15), 56), start=NOVEMBER, end=DECEMBER, as_of=D(2026, 11, 10))
    made = forecast(daily, start=NOVEMBER, end=DECEMBER, as_of=D(2026, 11, 10))
    assert made.actual == without.actual + 5000
    # The days ahead move by under 3 % of the one-off (a 7-day run rate holding it would add $5,000 × 21 / 7).
    assert abs((made.total - made.actual) - (without.total - without.actual)) < Decimal(150)


def test_without_enough_history_there_is_no_forecast_never_a_zero():
    made = forecast(
        {D(2026, 11, 1): Decimal(10)} | {D(2026, 11, 2): Decimal(10)},
        start=NOVEMBER,
        end=DECEMBER,
        as_of=D(2026, 11, 5),
    )
    assert made.total is None and made.low is None and made.method == "not enough history"
    assert display.forecast(made) == "no forecast (not enough history)"


def test_a_closed_period_is_its_actual_spend_and_the_forecast_is_never_below_what_is_spent():
    daily = weekly(D(2026, 9, 1), 80)
    over = forecast(daily, start=D(2026, 10, 1), end=NOVEMBER, as_of=D(2026, 11, 20))
    assert over.total == over.low == over.high == sum(v for d, v in daily.items() if D(2026, 10, 1) <= d < NOVEMBER)
    assert not over.has_range and display.forecast(over) == f"forecast {display.money_exact(over.total)}"
    floored = forecast(daily, start=NOVEMBER, end=DECEMBER, as_of=D(2026, 11, 19), at_least=Decimal(10**6))
    assert floored.total == floored.low == floored.high == Decimal(10**6)


def test_the_range_is_stated_the_same_way_everywhere():
    made = forecast(weekly(D(2026, 9, 15), 56, growth="0.5"), start=NOVEMBER, end=DECEMBER, as_of=D(2026, 11, 10))
    assert made.low < made.total < made.high
    assert display.forecast(made) == (
        f"forecast {display.money_exact(made.total)} "
        f"(range {display.money_exact(made.low)}–{display.money_exact(made.high)})"
    )


# --- one forecast: no page computes its own ---

OLD_FORMULAS = [
    r"RUN_RATE_DAYS",
    r"FORECAST_DAYS",
    r"\bRATE_DAYS\b",
    r"daily_run_rate",
    r"run_rate\s*\*",
    r"\brate\s*\*\s*\w*days",
    r"/\s*days\s*\*",
    r"\*\s*days_left",
    r"month_total",
]
ROOT = Path(__file__).resolve().parent.parent


def test_no_module_or_template_computes_a_forecast_of_its_own():
    found = []
    for path in [*ROOT.joinpath("finops").rglob("*.py"), *ROOT.joinpath("templates").rglob("*.html")]:
        if ROOT.joinpath("finops", "forecast") in path.parents or "migrations" in path.parts:
            continue
        text = path.read_text()
        found += [f"{path.relative_to(ROOT)}: {pattern}" for pattern in OLD_FORMULAS if re.search(pattern, text)]
    assert not found, f"a forecast computed outside finops.forecast.projection: {found}"


def test_every_caller_forecasts_through_finops_forecast():
    for module in (
        "finops/spend/selectors/spend.py",
        "finops/alerts/selectors/caps.py",
        "finops/contracts/selectors.py",
        "finops/reports/selectors/tco_report.py",
    ):
        assert "from finops.forecast.projection import" in ROOT.joinpath(module).read_text(), module


@pytest.fixture
def november(openai_account, support_agent):
    """Support's spend from 1 September to 21 November: weekdays $100, weekends $40, growing 37 cents a day (the
    usage CSV, billed)."""
    amounts = weekly(D(2026, 9, 1), 82, "100", "40", growth="0.37")
    rows = "".join(f"{day},gpt-5-mini,1000,100,{cost},support\n" for day, cost in amounts.items())
    run = usage_file_import(
        account=openai_account,
        file_name="usage.csv",
        stream=io.BytesIO(f"day,model,input_tokens,output_tokens,cost,project\n{rows}".encode()),
    )
    assert run.status == "succeeded", run.error
    from finops.models import AttributionRule
    from finops.spend.services.attribution import history_reattribute

    AttributionRule.objects.create(workload=support_agent, priority=1, project="support")
    history_reattribute()
    return amounts


@pytest.fixture
def frozen(time_machine):
    time_machine.move_to(dt.datetime(2026, 11, 22, 12, tzinfo=dt.UTC))


def test_the_overview_caps_contracts_and_report_show_the_functions_figures(
    client_as, frozen, fiona, ada, november, support_team, openai_account
):
    today = D(2026, 11, 22)
    daily = {d: v for d, v in november.items()}
    expected = forecast(daily, start=NOVEMBER, end=DECEMBER, as_of=today)
    assert expected.total is not None and expected.has_range

    response = client_as(fiona).get(reverse("overview"))
    assert response.context["forecast"] == expected
    assert display.forecast(expected, compact=True) in response.content.decode()

    cap = stored_cap(
        name="Support monthly",
        scope="team",
        team=support_team,
        period="month",
        amount=Decimal(2000),
        recipients=["lead@example.com"],
    )
    status = cap_status(cap, today=today)
    assert status.projection == forecast(daily, start=NOVEMBER, end=DECEMBER, as_of=today, at_least=status.spent)
    assert status.forecast == expected.total  # same scope, same day: the overview's figure
    page = client_as(ada).get(reverse("cap-detail", args=[cap.pk])).content.decode()
    assert display.forecast(status.projection) in page
    listing = client_as(ada).get(reverse("cap-list")).content.decode()
    assert display.forecast(status.projection) in listing

    contract = Contract.objects.create(
        name="OpenAI term",
        provider=Provider.objects.get(slug="openai"),
        start=D(2026, 9, 1),
        end=D(2027, 9, 1),
        commitment=Decimal(30000),
    )
    covered = contract_status(contract, today=today)
    term = forecast(
        daily, start=D(2026, 9, 1), end=D(2027, 9, 1), as_of=today, at_least=covered.consumed
    )  # from its start
    assert covered.projected == term.total and covered.run_rate == term.daily_rate

    report = tco_report(fiona, D(2026, 10, 1), today=today)
    next_month = forecast(
        daily_costs(visible_spend(fiona), history_start(NOVEMBER), NOVEMBER),
        start=NOVEMBER,
        end=DECEMBER,
        as_of=NOVEMBER,
    )
    assert report.summary["forecast_next"] == next_month.total and report.summary["forecast_next_low"] == next_month.low
