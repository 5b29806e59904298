"""One pass for a page's short periods (the overview, a team's, a provider's): the daily rollup summed by day and
the chart's keys once, from which each span's totals and the chart's points are added up in Python, where a page
would read the same days once per figure (issue 23). Every total equals finops.spend.selectors.spend.period_totals
over the same rows (tests/test_overview_periods.py)."""

import datetime as dt

from django.db.models import Q, QuerySet, Sum

from finops.models import DailySpend, TeamDailySpend

from .spend import MEASURES, UNPRICED, Totals, as_totals, finish, month_periods, period

GRID_MAX_DAYS = 100  # a grid spanning more days costs more than reading each period on its own
UNATTRIBUTED_COST = Sum("reporting_cost", filter=Q(workload__isnull=True))


def month_spans(today: dt.date) -> dict[str, tuple[dt.date, dt.date]]:
    """The spans month_to_date reads (this month, the same days of last month)."""
    return month_periods(today)


def day_grid(
    daily: QuerySet[DailySpend],
    spans: dict[str, tuple[dt.date, dt.date]],
    keys: tuple[str, ...],
    *,
    by_team: QuerySet[TeamDailySpend] | None = None,
) -> list[dict] | None:
    """The daily rollup over the days `spans` cover, summed by day and `keys` (few rows: days × providers, say),
    from which grid_totals gives each span's Totals and a chart its points: one pass where a page would read
    the same days once per figure. None when the spans lie too far apart for one pass to pay.

    `by_team`: the same rows' TeamDailySpend (visible_spend(user, TeamDailySpend), narrowed alike), when `keys`
    are among its dimensions: the sums come from it (~6× fewer rows at 10M lines; issue 23), and only the
    unattributed cost, which it does not tell apart, from `daily`'s few rows without a workload."""
    start, end = min(s for s, _ in spans.values()), max(e for _, e in spans.values())
    if (end - start).days > GRID_MAX_DAYS:
        return None
    sums = {**MEASURES, "priced_lines": Sum("line_count", filter=~UNPRICED)}
    if by_team is None:
        return list(
            period(daily, start, end).values("day", *keys).annotate(**sums, unattributed=UNATTRIBUTED_COST).order_by()
        )
    grid = {
        tuple(row[k] for k in ("day", *keys)): {**row, "unattributed": None}
        for row in period(by_team, start, end).values("day", *keys).annotate(**sums).order_by()
    }
    unattributed = (
        period(daily, start, end)
        .filter(workload__isnull=True)
        .values("day", *keys)
        .annotate(cost=Sum("reporting_cost"))
    )
    for row in unattributed.order_by():
        # Every group of DailySpend is in its TeamDailySpend sums (the same rebuild writes both).
        grid[tuple(row[k] for k in ("day", *keys))]["unattributed"] = row["cost"]
    return list(grid.values())


def grid_totals(grid: list[dict], start: dt.date, end: dt.date) -> Totals:
    """The Totals of [start, end) from a day_grid: exactly what period_totals reads from the rollup."""
    return grid_span_totals(grid, {"span": (start, end)})["span"]


GRID_SUMS = ("cost", "unpriced_tokens", "unattributed", "tokens", "requests", "priced_lines")


def grid_span_totals(grid: list[dict], spans: dict[str, tuple[dt.date, dt.date]]) -> dict[str, Totals]:
    """grid_totals of each span: the grid's rows summed by day once, then each span's days added. The overview's
    four spans went over its ~1,000–6,000 grid rows four times, every measure of every row (issue 23). A sum is None
    where no row has a value, as SQL's SUM; Decimals and integers add exactly, in any order."""
    by_day: dict[dt.date, list] = {}
    for row in grid:
        day = by_day.get(row["day"])
        if day is None:
            day = by_day[row["day"]] = [None] * len(GRID_SUMS)
        for i, name in enumerate(GRID_SUMS):
            value = row[name]
            if value is not None:
                day[i] = value if day[i] is None else day[i] + value
    found = {}
    for span_name, (start, end) in spans.items():
        total = dict.fromkeys(GRID_SUMS)
        for day, sums in by_day.items():
            if start <= day < end:
                for name, value in zip(GRID_SUMS, sums, strict=True):
                    if value is not None:
                        total[name] = value if total[name] is None else total[name] + value
        if not total["priced_lines"]:
            total["cost"] = None
        found[span_name] = as_totals(total)
    return found


def grid_points(grid: list[dict], start: dt.date, end: dt.date) -> list[dict]:
    """A day_grid's rows of [start, end), finished like sums()' rows, each with its day as `point`."""
    return [finish({**row, "point": row["day"]}) for row in grid if start <= row["day"] < end and row["lines"]]
