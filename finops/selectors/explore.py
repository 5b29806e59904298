"""Explore: spend over any period, filtered and grouped any way, from the rollup. The query is the URL."""

import datetime as dt

from django.db.models import F, Sum

from finops.models import DailySpend

from . import spend

GROUPS = {
    "provider": ("provider__name", "Provider"),
    "account": ("account__name", "Account"),
    "model": ("model", "Model"),
    "team": ("team__name", "Team"),
    "workload": ("workload__name", "Workload"),
    "basis": ("cost_basis", "Cost basis"),
    "day": ("day", "Day"),
}
FILTERS = {
    "team": "team__slug",
    "workload": "workload__slug",
    "provider": "provider__slug",
    "account": "account__name",
    "model": "model",
    "basis": "cost_basis",
}
UNATTRIBUTED = "-"  # the filter value meaning "no team / no workload"


def explore_rows(*, user, start: dt.date, end: dt.date, filters: dict, group_by: str):
    rows = spend.period(spend.visible_spend(user), start, end)
    for name, value in filters.items():
        if not value:
            continue
        if name in ("team", "workload") and value == UNATTRIBUTED:
            rows = rows.filter(**{f"{name}__isnull": True})
        else:
            rows = rows.filter(**{FILTERS[name]: value})
    field, _ = GROUPS[group_by]
    grouped = rows.values(group=F(field)).annotate(
        cost=Sum("reporting_cost"),
        tokens=spend.TOKEN_SUM,
        requests=Sum("requests"),
    ).order_by("-cost" if group_by != "day" else "group")
    table = []
    for row in grouped:
        row["cost"] = row["cost"] or spend.ZERO
        row["usd_per_mtok"] = row["cost"] / row["tokens"] * 1_000_000 if row["tokens"] else None
        row["label"] = _label(group_by, row["group"])
        table.append(row)
    daily = list(rows.values("day", group=F(field)).annotate(cost=Sum("reporting_cost")).order_by("day"))
    for row in daily:
        row["group"] = _label(group_by, row["group"])
    return table, daily


def _label(group_by: str, value) -> str:
    if value is None:
        return "Unattributed" if group_by in ("team", "workload") else "—"
    if value == "" and group_by == "model":
        return "(no model: taxes, credits, fees)"
    if isinstance(value, dt.date):
        return value.isoformat()
    return str(value)


def choices(user) -> dict:
    """The values the filters offer, from what the user can see."""
    rows = spend.visible_spend(user)
    return {
        name: sorted(v for v in rows.values_list(field, flat=True).distinct() if v is not None)
        for name, field in FILTERS.items()
    }
