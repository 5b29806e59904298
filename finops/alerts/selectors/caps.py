"""Spend against caps, their forecast and status (issue 10). Read from the daily rollup, many caps at once.

**Spend** against a cap is the rollup's priced spend (billed + estimated, reporting currency) in the cap's scope
for its period, today's partial day included (a threshold is crossed as soon as the money is spent). Unpriced
usage in scope is counted apart (`unpriced_tokens`), never as $0.

**Forecast**: finops.forecast.projection (by day of week with a trend and an 80 % range) of the scope's daily spend for
the
cap's period, seen today, never below what is already spent; `forecast_method` says how it was made ("not enough
history" without one), the cap page and the email show it with its range.

**Status**, most urgent first: `breached` (spend ≥ amount), `forecast` (forecast to exceed the amount before the
period ends), `warning` (a threshold below 100 % crossed), `ok`.
"""

import datetime as dt
from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Decimal

from django.db.models import Q, QuerySet, Sum

from finops.core.months import month_of, next_month
from finops.forecast.projection import Forecast, forecast, history_start
from finops.models import Cap, CapPeriod, CapScope, DailySpend
from finops.spend.selectors.spend import UNPRICED_TOKEN_SUM, ZERO, period

SCOPE_KEYS = {
    CapScope.TEAM: "team_id",
    CapScope.WORKLOAD: "workload_id",
    CapScope.PROVIDER: "provider_id",
    CapScope.ACCOUNT: "account_id",
    CapScope.ORG: None,
}
STATUS_LABELS = {"breached": "Breached", "forecast": "Forecast to breach", "warning": "Warning", "ok": "OK"}
HUNDRED = Decimal(100)


def period_bounds(period: str, day: dt.date) -> tuple[dt.date, dt.date]:
    """The UTC calendar month or quarter holding `day`, half-open."""
    if period == CapPeriod.QUARTER:
        start = dt.date(day.year, 3 * ((day.month - 1) // 3) + 1, 1)
        return start, next_month(next_month(next_month(start)))
    return month_of(day), next_month(day)


def period_label(period: str, start: dt.date) -> str:
    """ "November 2026", "Q4 2026"."""
    if period == CapPeriod.QUARTER:
        return f"Q{(start.month - 1) // 3 + 1} {start.year}"
    return start.strftime("%B %Y")


@dataclass
class CapStatus:
    cap: Cap
    period_start: dt.date
    period_end: dt.date
    spent: Decimal
    unpriced_tokens: int
    complete_days_spent: Decimal
    projection: Forecast  # finops.forecast.projection of the period, seen today
    crossed: list[int] = field(default_factory=list)  # thresholds (%) at or below the spend

    @property
    def forecast(self) -> Decimal | None:
        return self.projection.total

    @property
    def forecast_method(self) -> str:
        return self.projection.method

    @property
    def daily_rate(self) -> Decimal | None:
        return self.projection.daily_rate

    @property
    def days_left(self) -> int:
        return self.projection.days_left

    @property
    def percent(self) -> Decimal:
        return self.spent / self.cap.amount * HUNDRED

    @property
    def forecast_percent(self) -> Decimal | None:
        return None if self.forecast is None else self.forecast / self.cap.amount * HUNDRED

    @property
    def forecast_breach(self) -> bool:
        return self.forecast is not None and self.forecast > self.cap.amount

    @property
    def status(self) -> str:
        if self.spent >= self.cap.amount:
            return "breached"
        if self.forecast_breach:
            return "forecast"
        if any(t < 100 for t in self.crossed):
            return "warning"
        return "ok"

    @property
    def status_label(self) -> str:
        return STATUS_LABELS[self.status]

    @property
    def period_label(self) -> str:
        return period_label(self.cap.period, self.period_start)


def scoped(rows: QuerySet[DailySpend], cap: Cap) -> QuerySet[DailySpend]:
    """The rollup rows in a cap's scope."""
    key = SCOPE_KEYS[cap.scope]
    return rows if key is None else rows.filter(**{key: getattr(cap, key)})


def cap_statuses(caps: list[Cap], *, today: dt.date, rows: QuerySet[DailySpend] | None = None) -> list[CapStatus]:
    """The status of each cap for the period holding `today`, in a handful of grouped reads whatever the number
    of caps (per scope kind and period kind: the period's sums, the days of the forecast's history)."""
    rows = DailySpend.objects.all() if rows is None else rows
    by_kind: dict[tuple[str, str], list[Cap]] = defaultdict(list)
    for cap in caps:
        by_kind[(cap.scope, cap.period)].append(cap)
    found: dict[int, CapStatus] = {}
    for (scope, period_kind), group in by_kind.items():
        key = SCOPE_KEYS[scope]
        start, end = period_bounds(period_kind, today)
        wanted = {getattr(cap, key) for cap in group} if key else None
        narrowed = rows if key is None else rows.filter(**{f"{key}__in": wanted})
        group_by = (key,) if key else ()
        now = _sums(period(narrowed, start, end), group_by, today)
        daily = _daily(period(narrowed, min(start, history_start(today)), today), key)
        for cap in group:
            target = getattr(cap, key) if key else None
            found[cap.id] = _status(cap, start, end, today, now.get(target, {}), daily.get(target, {}))
    return [found[cap.id] for cap in caps]


def team_caps(team) -> QuerySet[Cap]:
    """A team's caps, as its page shows them: on the team itself and on any of its workloads."""
    return (
        Cap.objects.select_related("team", "workload__team")
        .filter(Q(scope=CapScope.TEAM, team=team) | Q(scope=CapScope.WORKLOAD, workload__team=team))
        .order_by("name")
    )


def cap_status(cap: Cap, *, today: dt.date) -> CapStatus:
    return cap_statuses([cap], today=today)[0]


def _sums(rows: QuerySet[DailySpend], group_by: tuple, today: dt.date) -> dict:
    """{scope id (None for org): {cost, complete, unpriced}}: the period's priced spend, that of its complete days
    (before today), and its unpriced tokens."""
    sums = {
        "cost": Sum("reporting_cost"),
        "complete": Sum("reporting_cost", filter=Q(day__lt=today)),
        "unpriced": UNPRICED_TOKEN_SUM,
    }
    if not group_by:  # the whole organisation: one row
        return {None: rows.aggregate(**sums)}
    return {row[group_by[0]]: row for row in rows.values(*group_by).annotate(**sums).order_by()}


def _daily(rows: QuerySet[DailySpend], key: str | None) -> dict:
    """{scope id: {day: cost}} over the forecast's history and the period's complete days."""
    found: dict = defaultdict(dict)
    for row in rows.values("day", *((key,) if key else ())).annotate(cost=Sum("reporting_cost")).order_by():
        found[row[key] if key else None][row["day"]] = row["cost"] or ZERO
    return found


def _status(cap: Cap, start: dt.date, end: dt.date, today: dt.date, now: dict, daily: dict) -> CapStatus:
    spent = now.get("cost") or ZERO
    crossed = sorted(t for t in cap.thresholds if spent * HUNDRED >= cap.amount * t)
    return CapStatus(
        cap=cap,
        period_start=start,
        period_end=end,
        spent=spent,
        unpriced_tokens=now.get("unpriced") or 0,
        complete_days_spent=now.get("complete") or ZERO,
        projection=forecast(daily, start=start, end=end, as_of=today, at_least=spent),
        crossed=crossed,
    )


def cap_drivers(
    cap: Cap, *, start: dt.date, end: dt.date, rows: QuerySet[DailySpend] | None = None, limit: int = 5
) -> dict:
    """The workloads and models driving a cap's spend in [start, end): {"workloads": [...], "models": [...]}, biggest
    first, each {workload_id or model, cost, unpriced_tokens}."""
    return caps_drivers([(cap, start, end)], rows=rows, limit=limit)[cap.id]


def caps_drivers(
    caps: list[tuple[Cap, dt.date, dt.date]], *, rows: QuerySet[DailySpend] | None = None, limit: int = 5
) -> dict[int, dict]:
    """cap_drivers of many caps (each with its period) in two grouped reads per scope kind and period, not two
    per cap: a first evaluation of 450 caps built its emails' figures in 1.8 s that way."""
    rows = DailySpend.objects.all() if rows is None else rows
    groups: dict[tuple, list[Cap]] = defaultdict(list)
    for cap, start, end in caps:
        groups[(cap.scope, start, end)].append(cap)
    found: dict[int, dict] = {}
    for (scope, start, end), group in groups.items():
        key = SCOPE_KEYS[scope]
        narrowed = period(
            rows if key is None else rows.filter(**{f"{key}__in": {getattr(c, key) for c in group}}), start, end
        )
        by_target: dict = defaultdict(dict)
        for name, dimension in (("workloads", "workload_id"), ("models", "model")):
            sums = (
                narrowed.values(*((key,) if key else ()), dimension)
                .annotate(cost=Sum("reporting_cost"), unpriced_tokens=UNPRICED_TOKEN_SUM)
                .order_by()
            )
            for row in sums:
                by_target[row[key] if key else None].setdefault(name, []).append(row)
        for cap in group:
            mine = by_target.get(getattr(cap, key) if key else None, {})
            found[cap.id] = {
                name: sorted(mine.get(name, []), key=lambda r: (r["cost"] is None, -(r["cost"] or ZERO)))[:limit]
                for name in ("workloads", "models")
            }
    return found


def cap_daily(cap: Cap, *, start: dt.date, end: dt.date) -> list[dict]:
    """[{day, cost}] of the cap's scope over [start, end), for the burn-up chart."""
    grouped = (
        period(scoped(DailySpend.objects.all(), cap), start, end)
        .values("day")
        .annotate(cost=Sum("reporting_cost"))
        .order_by("day")
    )
    return [{"day": row["day"], "cost": row["cost"] or ZERO} for row in grouped]
