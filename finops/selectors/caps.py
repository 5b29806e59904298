"""Spend against caps, their forecast and status (issue 10). Read from the daily rollup, many caps at once.

**Spend** against a cap is the rollup's priced spend (billed + estimated, reporting currency) in the cap's scope
for its period, today's partial day included (a threshold is crossed as soon as the money is spent). Unpriced
usage in scope is counted apart (`unpriced_tokens`), never as $0.

**Forecast** = spend of the period's complete days (before today) + a daily rate × the days left (today
included), never below what is already spent. The daily rate, in order of preference:
1. the **median** of the scope's daily spend over the last RATE_DAYS complete days (days without spend count as
   $0), when the scope has spend on at least MIN_HISTORY_DAYS of them — one noisy day moves a median of seven by
   at most one rank, so day 1 of a month does not forecast a breach from a single spike;
2. else the **previous period's daily average** (its spend / its days), when it had any spend;
3. else no forecast ("not enough history").
`forecast_method` says which was used; the cap page and the email show it.

**Status**, most urgent first: `breached` (spend ≥ amount), `forecast` (forecast to exceed the amount before the
period ends), `warning` (a threshold below 100 % crossed), `ok`.
"""

import datetime as dt
import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Decimal

from django.db.models import Q, QuerySet, Sum

from finops.models import Cap, CapPeriod, CapScope, DailySpend
from finops.months import month_of, next_month

from .spend import UNPRICED_TOKEN_SUM, ZERO, period

RATE_DAYS = 7
MIN_HISTORY_DAYS = 5
SCOPE_KEYS = {CapScope.TEAM: "team_id", CapScope.WORKLOAD: "workload_id", CapScope.PROVIDER: "provider_id",
              CapScope.ACCOUNT: "account_id", CapScope.ORG: None}
STATUS_LABELS = {"breached": "Breached", "forecast": "Forecast to breach", "warning": "Warning", "ok": "OK"}
HUNDRED = Decimal(100)


def period_bounds(period: str, day: dt.date) -> tuple[dt.date, dt.date]:
    """The UTC calendar month or quarter holding `day`, half-open."""
    if period == CapPeriod.QUARTER:
        start = dt.date(day.year, 3 * ((day.month - 1) // 3) + 1, 1)
        return start, next_month(next_month(next_month(start)))
    return month_of(day), next_month(day)


def previous_bounds(period: str, start: dt.date) -> tuple[dt.date, dt.date]:
    return period_bounds(period, start - dt.timedelta(days=1))


def period_label(period: str, start: dt.date) -> str:
    """"November 2026", "Q4 2026"."""
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
    daily_rate: Decimal | None
    forecast: Decimal | None
    forecast_method: str  # "median of the last 7 days", "previous period's daily average", "not enough history"
    days_left: int
    crossed: list[int] = field(default_factory=list)  # thresholds (%) at or below the spend

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
    of caps (per scope kind and period kind: the period's sums, the last days by day, the previous period)."""
    rows = DailySpend.objects.all() if rows is None else rows
    by_kind: dict[tuple[str, str], list[Cap]] = defaultdict(list)
    for cap in caps:
        by_kind[(cap.scope, cap.period)].append(cap)
    found: dict[int, CapStatus] = {}
    rate_start = today - dt.timedelta(days=RATE_DAYS)
    for (scope, period_kind), group in by_kind.items():
        key = SCOPE_KEYS[scope]
        start, end = period_bounds(period_kind, today)
        prev_start, prev_end = previous_bounds(period_kind, start)
        wanted = {getattr(cap, key) for cap in group} if key else None
        narrowed = rows if key is None else rows.filter(**{f"{key}__in": wanted})
        group_by = (key,) if key else ()
        now = _sums(period(narrowed, start, end), group_by, today)
        previous = _sums(period(narrowed, prev_start, prev_end), group_by, today)
        daily = _daily(period(narrowed, rate_start, today), key)
        for cap in group:
            target = getattr(cap, key) if key else None
            found[cap.id] = _status(cap, start, end, today, now.get(target, {}), previous.get(target, {}),
                                    daily.get(target, {}), (prev_end - prev_start).days, rate_start)
    return [found[cap.id] for cap in caps]


def cap_status(cap: Cap, *, today: dt.date) -> CapStatus:
    return cap_statuses([cap], today=today)[0]


def _sums(rows: QuerySet[DailySpend], group_by: tuple, today: dt.date) -> dict:
    """{scope id (None for org): {cost, complete, unpriced}}: the period's priced spend, that of its complete days
    (before today), and its unpriced tokens."""
    sums = {"cost": Sum("reporting_cost"), "complete": Sum("reporting_cost", filter=Q(day__lt=today)), "unpriced": UNPRICED_TOKEN_SUM}
    if not group_by:  # the whole organisation: one row
        return {None: rows.aggregate(**sums)}
    return {row[group_by[0]]: row for row in rows.values(*group_by).annotate(**sums).order_by()}


def _daily(rows: QuerySet[DailySpend], key: str | None) -> dict:
    """{scope id: {day: cost}} over the rate window."""
    found: dict = defaultdict(dict)
    for row in rows.values("day", *((key,) if key else ())).annotate(cost=Sum("reporting_cost")).order_by():
        found[row[key] if key else None][row["day"]] = row["cost"] or ZERO
    return found


def _status(cap: Cap, start: dt.date, end: dt.date, today: dt.date, now: dict, previous: dict, daily: dict,
            previous_days: int, rate_start: dt.date) -> CapStatus:
    spent = now.get("cost") or ZERO
    complete = now.get("complete") or ZERO
    days_left = max(0, (end - max(today, start)).days)
    rate, method = daily_rate(daily, rate_start, previous.get("cost"), previous_days)
    forecast = None if rate is None else max(spent, complete + rate * days_left)
    crossed = sorted(t for t in cap.thresholds if spent * HUNDRED >= cap.amount * t)
    return CapStatus(cap=cap, period_start=start, period_end=end, spent=spent, unpriced_tokens=now.get("unpriced") or 0,
                     complete_days_spent=complete, daily_rate=rate, forecast=forecast, forecast_method=method,
                     days_left=days_left, crossed=crossed)


def daily_rate(daily: dict[dt.date, Decimal], rate_start: dt.date, previous_cost: Decimal | None,
               previous_days: int) -> tuple[Decimal | None, str]:
    """The forecast's daily rate and how it was chosen (module docstring)."""
    days = [rate_start + dt.timedelta(days=n) for n in range(RATE_DAYS)]
    if sum(1 for day in days if daily.get(day)) >= MIN_HISTORY_DAYS:
        return statistics.median(daily.get(day, ZERO) for day in days), f"median of the last {RATE_DAYS} days"
    if previous_cost:
        return previous_cost / previous_days, "previous period's daily average"
    return None, "not enough history"


def cap_drivers(cap: Cap, *, start: dt.date, end: dt.date, rows: QuerySet[DailySpend] | None = None, limit: int = 5) -> dict:
    """The workloads and models driving a cap's spend in [start, end): {"workloads": [...], "models": [...]}, biggest
    first, each {workload_id or model, cost, unpriced_tokens}."""
    return caps_drivers([(cap, start, end)], rows=rows, limit=limit)[cap.id]


def caps_drivers(caps: list[tuple[Cap, dt.date, dt.date]], *, rows: QuerySet[DailySpend] | None = None,
                 limit: int = 5) -> dict[int, dict]:
    """cap_drivers of many caps (each with its period) in two grouped reads per scope kind and period, not two
    per cap: a first evaluation of 450 caps built its emails' figures in 1.8 s that way."""
    rows = DailySpend.objects.all() if rows is None else rows
    groups: dict[tuple, list[Cap]] = defaultdict(list)
    for cap, start, end in caps:
        groups[(cap.scope, start, end)].append(cap)
    found: dict[int, dict] = {}
    for (scope, start, end), group in groups.items():
        key = SCOPE_KEYS[scope]
        narrowed = period(rows if key is None else rows.filter(**{f"{key}__in": {getattr(c, key) for c in group}}), start, end)
        by_target: dict = defaultdict(dict)
        for name, dimension in (("workloads", "workload_id"), ("models", "model")):
            sums = narrowed.values(*((key,) if key else ()), dimension).annotate(
                cost=Sum("reporting_cost"), unpriced_tokens=UNPRICED_TOKEN_SUM).order_by()
            for row in sums:
                by_target[row[key] if key else None].setdefault(name, []).append(row)
        for cap in group:
            mine = by_target.get(getattr(cap, key) if key else None, {})
            found[cap.id] = {name: sorted(mine.get(name, []), key=lambda r: (r["cost"] is None, -(r["cost"] or ZERO)))[:limit]
                             for name in ("workloads", "models")}
    return found


def cap_daily(cap: Cap, *, start: dt.date, end: dt.date) -> list[dict]:
    """[{day, cost}] of the cap's scope over [start, end), for the burn-up chart."""
    grouped = period(scoped(DailySpend.objects.all(), cap), start, end).values("day").annotate(cost=Sum("reporting_cost")).order_by("day")
    return [{"day": row["day"], "cost": row["cost"] or ZERO} for row in grouped]
