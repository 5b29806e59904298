"""The forecast's back-test (docs/forecast.md, `manage.py backtest_forecast`): for every complete calendar month of
the daily rollup that has history before it, the month-end total forecast on given days of the month (the 10th,
the 20th: the forecast made that morning, from the complete days before it), against the month's actual total —
for the organisation and for each team. Beside it, the 7-day run rate's forecast of the same month on the same day
(what the overview did before issue 24), and whether the actual total fell inside the forecast's range.

Error = |forecast − actual| / actual; the mean of it over the cases is the MAPE. A month with no spend is skipped
(a percentage of $0 has no meaning), as is a case where the forecast has not enough history.
"""

import datetime as dt
from collections import defaultdict
from decimal import Decimal

from django.db.models import Sum

from finops.core.months import next_month
from finops.forecast.projection import forecast, run_rate
from finops.models import DailySpend, Team

ORGANISATION = "organisation"
TEAMS = "teams"


def backtest(*, days: tuple[int, ...] | list[int] = (10, 20)) -> dict:
    series = _daily_by_scope()
    if not series[ORGANISATION]:
        return {"months": [], "cases": [], "summary": []}
    everything = series[ORGANISATION]
    first, last = min(everything), max(everything)
    months = []
    month = next_month(first)  # the first month with history before it
    while next_month(month) <= last + dt.timedelta(days=1):
        months.append(month)
        month = next_month(month)
    cases = []
    for scope, daily in series.items():
        for month in months:
            end = next_month(month)
            actual = sum((v for d, v in daily.items() if month <= d < end), Decimal(0))
            if not actual:
                continue
            for day in days:
                as_of = month.replace(day=day)
                made = forecast(daily, start=month, end=end, as_of=as_of)
                naive = run_rate(daily, start=month, end=end, as_of=as_of)
                if made.total is None or naive is None:
                    continue
                cases.append(
                    {
                        "scope": scope,
                        "month": f"{month:%Y-%m}",
                        "day": day,
                        "actual": actual,
                        "forecast": made.total,
                        "low": made.low,
                        "high": made.high,
                        "run_rate": naive,
                        "forecast_error": abs(made.total - actual) / actual,
                        "run_rate_error": abs(naive - actual) / actual,
                        "in_range": made.low <= actual <= made.high,
                    }
                )
    return {"months": [f"{m:%Y-%m}" for m in months], "cases": cases, "summary": _summary(cases, days)}


def _summary(cases: list[dict], days) -> list[dict]:
    rows = []
    for scope_kind in (ORGANISATION, TEAMS):
        for day in days:
            mine = [
                c for c in cases if c["day"] == day and (c["scope"] == ORGANISATION) == (scope_kind == ORGANISATION)
            ]
            rows.append(
                {
                    "scope": scope_kind,
                    "day": day,
                    "cases": len(mine),
                    "forecast_mape": _mean([c["forecast_error"] for c in mine]),
                    "run_rate_mape": _mean([c["run_rate_error"] for c in mine]),
                    "in_range": _mean([1.0 if c["in_range"] else 0.0 for c in mine]),
                }
            )
    return rows


def _mean(values: list) -> float | None:
    return float(sum(values) / len(values)) if values else None


def _daily_by_scope() -> dict[str, dict[dt.date, Decimal]]:
    """{"organisation" or a team's slug: {day: priced spend in the reporting currency}} of the whole rollup."""
    series: dict[str, dict[dt.date, Decimal]] = defaultdict(dict)
    series[ORGANISATION] = {
        row["day"]: row["cost"]
        for row in DailySpend.objects.values("day").annotate(cost=Sum("reporting_cost")).order_by()
        if row["cost"] is not None
    }
    slugs = dict(Team.objects.values_list("id", "slug"))
    for row in (
        DailySpend.objects.filter(team__isnull=False)
        .values("team_id", "day")
        .annotate(cost=Sum("reporting_cost"))
        .order_by()
    ):
        if row["cost"] is not None:
            series[slugs[row["team_id"]]][row["day"]] = row["cost"]
    return series
