"""Explore: spend over any period, filtered and grouped any way, from the rollup. The query is the URL."""

import datetime as dt

from django.db import connections
from django.db.models import Exists, F, OuterRef
from django.utils import timezone

from finops.core import access, display
from finops.core.months import month_of
from finops.models import Account, CostBasis, MonthlySpend, Provider, Team, Workload

from . import line_groups, spend

GROUPS = {
    "provider": ("provider__name", "Provider"),
    "account": ("account__name", "Account"),
    "model": ("model", "Model"),
    "team": ("team__name", "Team"),
    "workload": ("workload__name", "Workload"),
    "basis": ("cost_basis", "Cost basis"),
    "day": ("day", "Day"),
}
# Groupings by what only the usage lines carry (finops.spend.selectors.line_groups): a period of at most
# line_groups.MAX_DAYS days, read from the raw lines.
LINE_GROUPS = {"api_key": "API key", "project": "Project", "user": "User", "tag": "Tag"}
GROUP_LABELS = {**{key: label for key, (_, label) in GROUPS.items()}, **LINE_GROUPS}
# Groups on a foreign key are grouped by the id and named afterwards: no join per rollup row.
GROUP_KEYS = {
    "provider": (Provider, "provider_id"),
    "account": (Account, "account_id"),
    "team": (Team, "team_id"),
    "workload": (Workload, "workload_id"),
}
FILTERS = {
    "team": "team__slug",
    "workload": "workload__slug",
    "provider": "provider__slug",
    "account": "account__name",
    "model": "model",
    "basis": "cost_basis",
}
UNATTRIBUTED = line_groups.UNATTRIBUTED_FILTER  # the filter value meaning "no team / no workload"
NO_REF = {"api_key": "(no API key)", "project": "(no project)", "user": "(no user)"}
DAY_SERIES = "Spend"  # grouped by day, the chart is one series (tax and credits apart, as on every chart)


# Beyond this many days the chart shows monthly points and the period is read from the monthly rollup for its
# whole months: a year by team at 10M lines is ~19k monthly rows + the edge days, not ~534k daily rows.
DAILY_POINTS_MAX_DAYS = 90


def daily_points(start: dt.date, end: dt.date, group_by: str) -> bool:
    """Whether the chart has a point per day (else per month). Grouped by day, the table needs every day anyway."""
    return group_by == "day" or (end - start).days <= DAILY_POINTS_MAX_DAYS


def explore_rows(
    *, user, start: dt.date, end: dt.date, filters: dict, group_by: str, today: dt.date | None = None, tag_key: str = ""
):
    """The table (one row per group) and the chart's points [{day, group, cost, …}], where `day` is the day, or
    the first day of the month when daily_points() is false (the months at the edges then hold only the
    period's days). Each row has the measures of spend.sums: `cost` None where no line of the group has a
    price (never 0), `unpriced_tokens` beside it, $/M over priced tokens only; `group` is the raw value (a
    name for ids), `label` what a page shows.

    Rollup groupings read spend.sums (a long period: whole months from MonthlySpend, the edges from
    DailySpend), so the table is exactly DailySpend summed over [start, end). Line groupings (LINE_GROUPS)
    read the period's usage lines (finops.spend.selectors.line_groups). `today` (UTC) only steers which edge
    reading is cheaper."""
    daily = daily_points(start, end, group_by)
    if group_by in LINE_GROUPS:
        lines = line_groups.filtered(line_groups.visible_lines(user, start, end), filters)
        points = line_groups.by_day(lines, group_by, tag_key)
        if not daily:
            for row in points:
                row["point"] = month_of(row["point"])
            points = line_groups.merged_rows(points, ("point", "group"))
    else:
        points = _rollup_points(user, start, end, filters, group_by, today=today, point="day" if daily else "month")
    points.sort(key=lambda row: row["point"])
    table = line_groups.merged_rows(points, ("group",))
    if group_by == "day":
        table.sort(key=lambda row: row["group"])
    else:
        table = spend.by_cost(table)
    for row in table:
        row.update(_labelled(group_by, row["group"], tag_key))
    series = {row["group"]: DAY_SERIES if group_by == "day" else row["label"] for row in table}
    chart = [
        {
            "day": row["point"],
            "group": series[row["group"]],
            "cost": row["cost"],
            "charge_category": row.get("charge_category"),
        }
        for row in points
    ]
    return table, chart


def _rollup_points(user, start, end, filters, group_by, *, today, point: str) -> list[dict]:
    """spend.sums per (point, group) of the rollups the user may see, filtered; ids named afterwards."""
    daily = filtered(spend.visible_spend(user), filters)
    monthly = filtered(spend.visible_spend(user, MonthlySpend), filters)
    today = today or timezone.now().astimezone(dt.UTC).date()
    model, key = GROUP_KEYS.get(group_by, (None, GROUPS[group_by][0]))
    # The charge category keeps tax and credits their own series on the chart, as the overview draws them (never
    # folded into their provider's); the table adds the categories up per group. By day the point is the group.
    keys = ("charge_category",) if group_by == "day" else (key, "charge_category")
    rows = spend.sums(daily, monthly, start, end, keys, today=today, point=point)
    names = dict(model.objects.values_list("id", "name")) if model else None
    for row in rows:
        value = row["point"] if group_by == "day" else row.pop(key)
        row["group"] = names.get(value) if names is not None and value is not None else value
    return rows


def filtered(rows, filters: dict):
    """`rows` (of either rollup: they share the dimension names) narrowed by Explore's filters. Public: the
    spend API and `manage.py spend` (finops.spend.selectors.spend_report) filter the same way."""
    for name, value in filters.items():
        if not value:
            continue
        if name in ("team", "workload") and value == UNATTRIBUTED:
            rows = rows.filter(**{f"{name}__isnull": True})
        else:
            rows = rows.filter(**{FILTERS[name]: value})
    return rows


def _labelled(group_by: str, value, tag_key: str = "") -> dict:
    """What a page shows for a group (`label`), whether it is a group of "none" (`muted`: unattributed, no
    model, no API key …), and for models the id beside the name (`model`, for the CSV)."""
    if group_by == "model":
        return {"label": display.model_name(value), "model": value, "muted": value == ""}
    if group_by in ("team", "workload") and value is None:
        return {"label": display.UNATTRIBUTED, "muted": True}
    if group_by in NO_REF and not value:
        return {"label": NO_REF[group_by], "muted": True}
    if group_by == "tag" and value is None:
        return {"label": f"(no {tag_key} tag)", "muted": True}
    if group_by == "tag" and value == "":
        return {"label": f"{tag_key}= (empty)", "muted": False}
    if group_by == "basis":
        return {"label": CostBasis(value).label if value in CostBasis.values else str(value), "muted": False}
    if isinstance(value, dt.date):
        return {"label": value.isoformat(), "muted": False}
    return {"label": display.DASH if value is None else str(value), "muted": value is None}


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
        return sorted(
            objects.filter(Exists(rows.filter(**{field: OuterRef("pk")}))).values_list(
                FILTERS[field].split("__")[1], flat=True
            )
        )

    return {
        "team": present(Team.objects.all(), "team"),
        "workload": present(Workload.objects.all(), "workload"),
        "provider": present(Provider.objects.all(), "provider"),
        "account": present(Account.objects.all(), "account"),
        "model": _distinct(rows, "model"),
        "basis": [basis for basis in CostBasis.values if rows.filter(cost_basis=basis).exists()],
    }


def labelled_choices(options: dict) -> dict:
    """choices() as (value, label) pairs: teams, workloads and providers by name, models by display name, bases
    by their label; accounts are named by their name already."""
    names = {
        "team": dict(Team.objects.values_list("slug", "name")),
        "workload": dict(Workload.objects.values_list("slug", "name")),
        "provider": dict(Provider.objects.values_list("slug", "name")),
        "basis": dict(CostBasis.choices),
    }
    labelled = {}
    for name, values in options.items():
        if name == "model":
            labelled[name] = [(v, display.model_name(v)) for v in values]
        else:
            labelled[name] = sorted(
                ((v, names.get(name, {}).get(v, v)) for v in values), key=lambda pair: pair[1].lower()
            )
    return labelled


def _distinct(rows, field: str) -> list:
    """DISTINCT by skipping from one value to the next: one short index scan per value (there are tens), in one
    recursive statement. Asked one query a value, the 34 models of the page bench were 35 round trips and ORM
    compilations, ~40 % of Explore's Python on a cold request (issue 23)."""
    base = rows.order_by().values(value=F(field)).query
    sql, params = base.get_compiler(rows.db).as_sql()
    statement = (
        # No parentheses around the anchor: SQLite's grammar (`make demo`) refuses them, Postgres takes either.
        f"WITH RECURSIVE skip(value) AS (SELECT min(value) FROM ({sql}) AS first_value UNION ALL "
        f"SELECT (SELECT min(value) FROM ({sql}) AS next_value WHERE value > skip.value) FROM skip "
        "WHERE skip.value IS NOT NULL) SELECT value FROM skip WHERE value IS NOT NULL"
    )
    with connections[rows.db].cursor() as cursor:
        cursor.execute(statement, (*params, *params))
        return [value for (value,) in cursor.fetchall()]
