"""Invariant 7 for tests: the rollup, keyed by all its dimensions, against the raw lines summed the same way;
and the monthly rollup against the daily one summed by month, in Python.

Written from the models' meaning, not from finops.spend.services.rollups, so a wrong rollup query cannot agree with
itself: a line's workload and team are its signature's.
"""

from collections import defaultdict

from django.db.models import Count, Sum
from django.db.models.functions import TruncDate

from finops.models import DailySpend, MonthlySpend, TeamDailySpend, UsageLine

TOKEN_FIELDS = ("input_tokens", "cached_input_tokens", "cache_write_tokens", "output_tokens", "requests")
MEASURES = ("cost", "reporting_cost", *TOKEN_FIELDS)
# Rollup dimension -> where a usage line holds it.
DIMENSIONS = {
    "account_id": "account_id",
    "provider_id": "provider_id",
    "model": "model",
    "workload_id": "signature__workload_id",
    "team_id": "signature__team_id",
    "currency": "currency",
    "cost_basis": "cost_basis",
    "charge_category": "charge_category",
}
KEY = ("day", *DIMENSIONS)


def raw_groups(**line_filters) -> dict:
    """Lines summed by day and every rollup dimension: {(day, *dimensions): (*measures, line count)}."""
    rows = (
        UsageLine.objects.filter(**line_filters)
        .annotate(day=TruncDate("period_start"))
        .values_list("day", *DIMENSIONS.values())
        .annotate(*(Sum(m) for m in MEASURES), Count("id"))
        .order_by()
    )
    return {tuple(row[: len(KEY)]): tuple(row[len(KEY) :]) for row in rows}


def rollup_groups(**row_filters) -> dict:
    """The rollup in the same shape as `raw_groups`."""
    rows = DailySpend.objects.filter(**row_filters).values_list(*KEY, *MEASURES, "line_count")
    return {tuple(row[: len(KEY)]): tuple(row[len(KEY) :]) for row in rows}


def assert_rollup_equals_raw(*, allow_empty: bool = False, **filters) -> None:
    """Every rollup row equals the raw lines of its day and dimensions, and nothing else is rolled up
    (`filters` apply to both tables, e.g. account=...). An empty comparison proves nothing, so it fails
    unless `allow_empty` (generated cases where no line is a valid outcome)."""
    raw = raw_groups(**filters)
    assert raw or allow_empty, "no usage lines to compare"
    assert rollup_groups(**filters) == raw
    if not filters:  # the overview's rollup has no account (nor any other filterable key but the day and the team)
        assert_team_daily_equals_daily()


ROLLUP_MEASURES = (*MEASURES, "line_count")


def daily_summed_by_month() -> dict:
    """The oracle, in Python: every DailySpend row added into its (month, dimensions) group; a money sum stays
    None while every part is None, as SQL's SUM does."""
    groups: dict = defaultdict(lambda: dict.fromkeys(ROLLUP_MEASURES))
    for row in DailySpend.objects.values("day", *DIMENSIONS, *ROLLUP_MEASURES):
        total = groups[(row["day"].replace(day=1), *(row[d] for d in DIMENSIONS))]
        for name in ROLLUP_MEASURES:
            if row[name] is not None:
                total[name] = row[name] if total[name] is None else total[name] + row[name]
    return dict(groups)


def monthly_rows() -> dict:
    """MonthlySpend as {(month, dimensions): measures}; a group appearing twice would be a bug, so it fails."""
    rows = {}
    for row in MonthlySpend.objects.values("month", *DIMENSIONS, *ROLLUP_MEASURES):
        key = (row["month"], *(row[d] for d in DIMENSIONS))
        assert key not in rows, f"two monthly rows for {key}"
        rows[key] = {name: row[name] for name in ROLLUP_MEASURES}
    return rows


def assert_monthly_equals_daily():
    """Both rollups derived from DailySpend equal it: the monthly one by month, the overview's by team."""
    assert monthly_rows() == daily_summed_by_month()
    assert_team_daily_equals_daily()


TEAM_KEY = ("day", "team_id", "provider_id", "cost_basis", "charge_category")
TEAM_MEASURES = (*TOKEN_FIELDS, "reporting_cost", "line_count")


def daily_summed_by_team() -> dict:
    """The oracle, in Python: every DailySpend row added into its (day, team, provider, basis, category) group."""
    groups: dict = defaultdict(lambda: dict.fromkeys(TEAM_MEASURES))
    for row in DailySpend.objects.values(*TEAM_KEY, *TEAM_MEASURES):
        total = groups[tuple(row[k] for k in TEAM_KEY)]
        for name in TEAM_MEASURES:
            if row[name] is not None:
                total[name] = row[name] if total[name] is None else total[name] + row[name]
    return dict(groups)


def assert_team_daily_equals_daily():
    """TeamDailySpend (the overview's rollup) is DailySpend summed by its keys, each group once."""
    rows = {}
    for row in TeamDailySpend.objects.values(*TEAM_KEY, *TEAM_MEASURES):
        key = tuple(row[k] for k in TEAM_KEY)
        assert key not in rows, f"two team rows for {key}"
        rows[key] = {name: row[name] for name in TEAM_MEASURES}
    expected = daily_summed_by_team()
    differing = sorted(
        (str(k), rows.get(k), expected.get(k)) for k in rows.keys() | expected.keys() if rows.get(k) != expected.get(k)
    )
    assert not differing, differing[:3]
