"""Explore: spend over any period, filtered and grouped any way, from the rollup. The query is the URL."""

import datetime as dt
import decimal

from django.db.models import DateField, Exists, F, OuterRef, Sum
from django.db.models.functions import Cast, TruncMonth
from django.utils import timezone

from finops import access
from finops.models import Account, CostBasis, MonthlySpend, Provider, Team, Workload

from . import periods, spend

GROUPS = {
    "provider": ("provider__name", "Provider"),
    "account": ("account__name", "Account"),
    "model": ("model", "Model"),
    "team": ("team__name", "Team"),
    "workload": ("workload__name", "Workload"),
    "basis": ("cost_basis", "Cost basis"),
    "day": ("day", "Day"),
}
# Groups on a foreign key are grouped by the id and named afterwards: no join per rollup row.
GROUP_KEYS = {"provider": (Provider, "provider_id"), "account": (Account, "account_id"), "team": (Team, "team_id"),
              "workload": (Workload, "workload_id")}
FILTERS = {
    "team": "team__slug",
    "workload": "workload__slug",
    "provider": "provider__slug",
    "account": "account__name",
    "model": "model",
    "basis": "cost_basis",
}
UNATTRIBUTED = "-"  # the filter value meaning "no team / no workload"


# Beyond this many days the chart shows monthly points and the period is read from the monthly rollup for its
# whole months: a year by team at 10M lines is ~19k monthly rows + the edge days, not ~534k daily rows.
DAILY_POINTS_MAX_DAYS = 90


def daily_points(start: dt.date, end: dt.date, group_by: str) -> bool:
    """Whether the chart has a point per day (else per month). Grouped by day, the table needs every day anyway."""
    return group_by == "day" or (end - start).days <= DAILY_POINTS_MAX_DAYS


def explore_rows(*, user, start: dt.date, end: dt.date, filters: dict, group_by: str, today: dt.date | None = None):
    """The table (one row per group) and the chart's points [{day, group, cost, …}], where `day` is the day, or
    the first day of the month when daily_points() is false (the months at the edges then hold only the
    period's days). The points are summed in SQL per (day or month, group); the table adds them up per group.

    Monthly points read the period through finops.selectors.periods (whole months from MonthlySpend, the edges
    from DailySpend): every measure is a sum, so the table is exactly what summing DailySpend over [start, end)
    gives. `today` (UTC) only steers which edge reading is cheaper."""
    daily = _filtered(spend.visible_spend(user), filters)
    if daily_points(start, end, group_by):
        parts = [(spend.period(daily, start, end), F("day"), 1)]
    else:
        monthly = _filtered(spend.visible_spend(user, MonthlySpend), filters)
        today = today or timezone.now().astimezone(dt.UTC).date()
        parts = [(rows, F("month") if rows.model is MonthlySpend else Cast(TruncMonth("day"), DateField()), sign)
                 for rows, sign in periods.parts(daily, monthly, start, end, today=today)]
    model, key = GROUP_KEYS.get(group_by, (None, GROUPS[group_by][0]))
    names = dict(model.objects.values_list("id", "name")) if model else None
    signed = []
    for rows, point, sign in parts:
        grouped = rows.values(point=point, group=F(key)).annotate(
            cost=Sum("reporting_cost"), tokens=spend.TOKEN_SUM, requests=Sum("requests"), lines=Sum("line_count"))
        signed += [(row, sign) for row in grouped.order_by()]
    # A (month, group) whose lines all lie in days taken away nets to no lines: it is not in the period.
    points = [row for row in periods.add_up(signed, ("point", "group"), ("cost", "tokens", "requests", "lines")) if row["lines"]]
    points.sort(key=lambda row: row["point"])
    totals: dict = {}
    with decimal.localcontext(prec=80):  # exact: a year of NUMERIC(38, 18) money may need more than 28 digits
        for row in points:
            row["day"] = row.pop("point")
            del row["lines"]
            if names is not None:
                row["group"] = names.get(row["group"]) if row["group"] is not None else None
            total = totals.setdefault(row["group"], {"group": row["group"], "cost": spend.ZERO, "tokens": 0, "requests": 0})
            total["cost"] += row["cost"] or spend.ZERO
            total["tokens"] += row["tokens"] or 0
            total["requests"] += row["requests"] or 0
            row["group"] = _label(group_by, row["group"])
    table = list(totals.values())
    if group_by == "day":
        table.sort(key=lambda r: r["group"])
    else:
        table.sort(key=lambda r: r["cost"], reverse=True)
    for row in table:
        row["usd_per_mtok"] = row["cost"] / row["tokens"] * 1_000_000 if row["tokens"] else None
        row["label"] = _label(group_by, row["group"])
    return table, points


def filtered(rows, filters: dict):
    """`rows` (of either rollup: they share the dimension names) narrowed by Explore's filters. Public: the
    spend API and `manage.py spend` (finops.selectors.spend_report) filter the same way."""
    for name, value in filters.items():
        if not value:
            continue
        if name in ("team", "workload") and value == UNATTRIBUTED:
            rows = rows.filter(**{f"{name}__isnull": True})
        else:
            rows = rows.filter(**{FILTERS[name]: value})
    return rows


_filtered = filtered  # the name explore_rows calls it by


def _label(group_by: str, value) -> str:
    if value is None:
        return "Unattributed" if group_by in ("team", "workload") else "—"
    if value == "" and group_by == "model":
        return "(no model: taxes, credits, fees)"
    if isinstance(value, dt.date):
        return value.isoformat()
    return str(value)


def choices(user) -> dict:
    """The values the filters offer, from what the user can see. Someone who sees everything gets one index
    probe per candidate (team, workload, account, provider) and a skip scan for models, rather than DISTINCT
    over every rollup row; a member's rows are their teams' only, few enough to read at once.

    Read from the monthly rollup: it holds exactly the values the daily one does (each daily row is summed
    into a monthly one), in ~25× fewer rows."""
    rows = spend.visible_spend(user, MonthlySpend)
    if not access.sees_everything(user):
        seen = rows.values_list(*FILTERS.values()).distinct().order_by()
        return {name: sorted({row[i] for row in seen if row[i] is not None}) for i, name in enumerate(FILTERS)}

    def present(objects, field):
        return sorted(objects.filter(Exists(rows.filter(**{field: OuterRef("pk")}))).values_list(FILTERS[field].split("__")[1], flat=True))

    return {
        "team": present(Team.objects.all(), "team"),
        "workload": present(Workload.objects.all(), "workload"),
        "provider": present(Provider.objects.all(), "provider"),
        "account": present(Account.objects.all(), "account"),
        "model": _distinct(rows, "model"),
        "basis": [basis for basis in CostBasis.values if rows.filter(cost_basis=basis).exists()],
    }


def _distinct(rows, field: str) -> list:
    """DISTINCT by skipping from one value to the next: one short index scan per value (there are tens)."""
    values, query = [], rows.order_by(field).values_list(field, flat=True)
    value = query.first()
    while value is not None:
        values.append(value)
        value = query.filter(**{f"{field}__gt": value}).first()
    return values
