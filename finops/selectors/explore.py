"""Explore: spend over any period, filtered and grouped any way, from the rollup. The query is the URL."""

import datetime as dt

from django.db.models import Exists, F, OuterRef, Sum

from finops import access
from finops.models import Account, CostBasis, Provider, Team, Workload

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


def explore_rows(*, user, start: dt.date, end: dt.date, filters: dict, group_by: str):
    """The table (one row per group) and the chart's daily points, from one pass over the rollup: the
    daily sums per group are aggregated once in SQL, and the table adds them up per group in Python."""
    rows = spend.period(spend.visible_spend(user), start, end)
    for name, value in filters.items():
        if not value:
            continue
        if name in ("team", "workload") and value == UNATTRIBUTED:
            rows = rows.filter(**{f"{name}__isnull": True})
        else:
            rows = rows.filter(**{FILTERS[name]: value})
    model, key = GROUP_KEYS.get(group_by, (None, GROUPS[group_by][0]))
    names = dict(model.objects.values_list("id", "name")) if model else None
    daily = list(
        rows.values("day", group=F(key))
        .annotate(cost=Sum("reporting_cost"), tokens=spend.TOKEN_SUM, requests=Sum("requests"))
        .order_by("day")
    )
    totals: dict = {}
    for row in daily:
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
    """The values the filters offer, from what the user can see. Someone who sees everything gets one index
    probe per candidate (team, workload, account, provider) and a skip scan for models, rather than DISTINCT
    over every rollup row; a member's rows are their teams' only, few enough to read at once."""
    rows = spend.visible_spend(user)
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
