"""Spend reads for pages and the API. They read the daily rollup only (DESIGN.md performance approach).

Every function takes the viewing user and scopes by finops.access: a member's figures never include
another team's spend nor unattributed spend.
"""

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal

from django.db.models import Q, QuerySet, Sum

from finops import access
from finops.models import CostBasis, DailySpend, MonthlySpend

from .periods import add_up as periods_add_up

ZERO = Decimal(0)


def visible_spend(user, rollup: type[DailySpend] | type[MonthlySpend] = DailySpend) -> QuerySet:
    """The rows of `rollup` (the daily one unless told) the user may see."""
    rows = rollup.objects.all()
    if access.can_see_unattributed(user):
        return rows
    # The team ids as a list, not a subquery: the planner then uses the (team, day) index for every read.
    return rows.filter(team_id__in=list(access.visible_teams(user).values_list("id", flat=True)))


def period(rows: QuerySet[DailySpend], start: dt.date, end: dt.date) -> QuerySet[DailySpend]:
    """Half-open [start, end) in UTC days."""
    return rows.filter(day__gte=start, day__lt=end)


@dataclass(frozen=True)
class Totals:
    cost: Decimal
    unpriced_tokens: int
    unattributed_cost: Decimal
    tokens: int
    requests: int

    @property
    def usd_per_mtok(self) -> Decimal | None:
        """Σcost / Σtokens × 10⁶ (invariant 6), the same definition as the `spend` report; unpriced
        tokens are shown beside it rather than silently dropped from it."""
        return self.cost / self.tokens * 1_000_000 if self.tokens else None


TOKEN_SUM = Sum("input_tokens") + Sum("cached_input_tokens") + Sum("cache_write_tokens") + Sum("output_tokens")


def totals(rows: QuerySet[DailySpend]) -> Totals:
    return period_totals(rows, {"all": None})["all"]


def period_totals(rows: QuerySet[DailySpend], periods: dict[str, tuple[dt.date, dt.date] | None]) -> dict[str, Totals]:
    """Totals of several half-open periods (None: all of `rows`) in one pass over the rollup."""
    aggregates, spans = {}, [p for p in periods.values() if p is not None]
    for name, span in periods.items():
        within = Q() if span is None else Q(day__gte=span[0], day__lt=span[1])
        unpriced = within & Q(cost_basis=CostBasis.UNPRICED)
        aggregates.update({
            f"{name}__cost": Sum("reporting_cost", filter=within or None),
            f"{name}__tokens": Sum("input_tokens", filter=within or None) + Sum("cached_input_tokens", filter=within or None)
            + Sum("cache_write_tokens", filter=within or None) + Sum("output_tokens", filter=within or None),
            f"{name}__requests": Sum("requests", filter=within or None),
            f"{name}__unattributed": Sum("reporting_cost", filter=within & Q(workload__isnull=True)),
            f"{name}__unpriced_tokens": Sum("input_tokens", filter=unpriced) + Sum("cached_input_tokens", filter=unpriced)
            + Sum("cache_write_tokens", filter=unpriced) + Sum("output_tokens", filter=unpriced),
        })
    if spans and len(spans) == len(periods):  # read only the days some period needs
        rows = rows.filter(day__gte=min(s[0] for s in spans), day__lt=max(s[1] for s in spans))
    agg = rows.aggregate(**aggregates)
    return {
        name: Totals(
            cost=agg[f"{name}__cost"] or ZERO,
            unpriced_tokens=agg[f"{name}__unpriced_tokens"] or 0,
            unattributed_cost=agg[f"{name}__unattributed"] or ZERO,
            tokens=agg[f"{name}__tokens"] or 0,
            requests=agg[f"{name}__requests"] or 0,
        )
        for name in periods
    }


def daily_cost_by(rows: QuerySet[DailySpend], dimension: str) -> list[dict]:
    """[{day, <dimension>, cost}] in reporting currency, for a stacked daily chart."""
    return list(
        rows.values("day", dimension).annotate(cost=Sum("reporting_cost")).order_by("day", dimension)
    )


def cost_by(rows: QuerySet[DailySpend], dimension: str, *, limit: int | None = None) -> list[dict]:
    """[{<dimension>, cost, tokens}] biggest first."""
    grouped = rows.values(dimension).annotate(cost=Sum("reporting_cost"), tokens=TOKEN_SUM).order_by("-cost")
    return list(grouped[:limit] if limit else grouped)


@dataclass(frozen=True)
class MonthToDate:
    today: dt.date
    this_month: Decimal
    same_days_last_month: Decimal

    @property
    def change(self) -> Decimal | None:
        if not self.same_days_last_month:
            return None
        return (self.this_month - self.same_days_last_month) / self.same_days_last_month


def _month_periods(today: dt.date) -> dict[str, tuple[dt.date, dt.date]]:
    first = today.replace(day=1)
    last_month_first = (first - dt.timedelta(days=1)).replace(day=1)
    same_days_end = min(last_month_first + (today - first), first)
    return {"this_month": (first, today), "same_days_last_month": (last_month_first, same_days_end),
            "run_rate": (today - dt.timedelta(days=RUN_RATE_DAYS), today)}


def month_to_date(rows: QuerySet[DailySpend], today: dt.date, *, known: dict[str, Totals] | None = None) -> MonthToDate:
    """Spend of this UTC month up to (not including) today, against the same days of last month.
    `known`: the period totals of `month_periods_totals`, when the caller has them already."""
    known = known or period_totals(rows, _month_periods(today))
    return MonthToDate(today=today, this_month=known["this_month"].cost, same_days_last_month=known["same_days_last_month"].cost)


def month_periods_totals(rows: QuerySet[DailySpend], today: dt.date, **extra: tuple[dt.date, dt.date]) -> dict[str, Totals]:
    """The totals month_to_date and month_forecast need, and any `extra` periods, in one query."""
    return period_totals(rows, {**_month_periods(today), **extra})


def latest_day(rows: QuerySet[DailySpend]) -> dt.date | None:
    return rows.order_by("-day").values_list("day", flat=True).first()


@dataclass(frozen=True)
class Forecast:
    month_start: dt.date
    month_to_date: Decimal
    daily_run_rate: Decimal
    days_left: int

    @property
    def month_total(self) -> Decimal:
        return self.month_to_date + self.daily_run_rate * self.days_left


RUN_RATE_DAYS = 7


def month_forecast(rows: QuerySet[DailySpend], today: dt.date, *, known: dict[str, Totals] | None = None) -> Forecast:
    """Month to date plus the average of the last RUN_RATE_DAYS complete days for every day left (today included)."""
    known = known or period_totals(rows, _month_periods(today))
    first = today.replace(day=1)
    next_month = (first + dt.timedelta(days=32)).replace(day=1)
    return Forecast(
        month_start=first,
        month_to_date=known["this_month"].cost,
        daily_run_rate=known["run_rate"].cost / RUN_RATE_DAYS,
        days_left=(next_month - today).days,
    )


def unit_costs(rows: QuerySet[DailySpend], dimension: str) -> list[dict]:
    """[{<dimension>, cost, tokens, usd_per_mtok}] biggest spend first; $/M is Σcost / Σtokens × 10⁶ per group."""
    grouped = cost_by(rows, dimension)
    for row in grouped:
        row["cost"] = row["cost"] or ZERO
        row["usd_per_mtok"] = row["cost"] / row["tokens"] * 1_000_000 if row["tokens"] else None
    return grouped


def with_shares(rows: list[dict]) -> tuple[list[dict], int]:
    """Adds each row's share of the total and the running share; returns how many rows make 80 % of it."""
    total = sum((r["cost"] or ZERO for r in rows), ZERO)
    running, to_80 = ZERO, 0
    for row in rows:
        row["share"] = (row["cost"] or ZERO) / total if total else None
        running += row["cost"] or ZERO
        row["running_share"] = running / total if total else None
        if total and (running - (row["cost"] or ZERO)) < total * Decimal("0.8"):
            to_80 += 1
    return rows, to_80


def daily_tokens(rows: QuerySet[DailySpend]) -> list[dict]:
    """[{day, input, output}] where input is all input (uncached + cached + cache write)."""
    return list(
        rows.values("day")
        .annotate(input=Sum("input_tokens") + Sum("cached_input_tokens") + Sum("cache_write_tokens"), output=Sum("output_tokens"))
        .order_by("day")
    )


# --- the overview in two passes over the rollup (DESIGN.md: pages read the rollup; at 10M lines the rollup of
# 30 days is ~45k rows and each pass over it costs 15–25 ms, so the overview's nine reads became two) ---


@dataclass
class Overview:
    periods: dict[str, Totals]  # this_month, same_days_last_month, run_rate, recent
    daily_by_provider: list[dict]  # [{day, provider_id, cost}] over the recent period
    by_provider: list[dict]  # unit_costs(recent, "provider_id")
    by_workload: list[dict]  # cost_by(recent, "workload_id")
    by_model: list[dict]  # unit_costs(recent, "model")


def _by_cost(rows: list[dict]) -> list[dict]:
    """Biggest spend first, as ORDER BY cost DESC sorts in Postgres (a group with no priced line first)."""
    return sorted(rows, key=lambda r: (r["cost"] is None, r["cost"] or ZERO), reverse=True)


def _add(total: dict, row: dict, *names: str) -> None:
    for name in names:
        if row[name] is not None:
            total[name] = (total.get(name) or 0) + row[name]
        else:
            total.setdefault(name, None)


def _totals_aggregates() -> dict:
    """The sums a Totals is made of, per group of rollup rows (daily or monthly alike)."""
    unpriced = Q(cost_basis=CostBasis.UNPRICED)
    return {
        "cost": Sum("reporting_cost"), "tokens": TOKEN_SUM, "requests": Sum("requests"),
        "unattributed": Sum("reporting_cost", filter=Q(workload__isnull=True)),
        "unpriced_tokens": Sum("input_tokens", filter=unpriced) + Sum("cached_input_tokens", filter=unpriced)
        + Sum("cache_write_tokens", filter=unpriced) + Sum("output_tokens", filter=unpriced),
    }


TOTALS_SUMS = ("cost", "tokens", "requests", "unattributed", "unpriced_tokens")


def _as_totals(total: dict) -> Totals:
    return Totals(cost=total.get("cost") or ZERO, unpriced_tokens=total.get("unpriced_tokens") or 0,
                  unattributed_cost=total.get("unattributed") or ZERO, tokens=total.get("tokens") or 0,
                  requests=total.get("requests") or 0)


def overview(rows: QuerySet[DailySpend], today: dt.date, *, recent_days: int,
             monthly: QuerySet[MonthlySpend] | None = None) -> Overview:
    """What the overview shows: the same figures as totals / month_to_date / month_forecast / cost_by /
    unit_costs / daily_cost_by, from one pass by (day, provider) and one by (workload, model).

    The first pass covers the recent days and this month. "The same days of last month" lie mostly before
    them: given `monthly` (the same rows' MonthlySpend), they are last month's monthly totals minus its days
    from where they end, which that pass has read anyway, instead of up to a month more of daily rows.
    """
    recent_start = today - dt.timedelta(days=recent_days)
    periods = {**_month_periods(today), "recent": (recent_start, today)}
    same_start, same_end = periods["same_days_last_month"]
    start = min(s for name, (s, _) in periods.items() if name != "same_days_last_month")
    this_month = today.replace(day=1)
    # Fewer days to take away from last month than to add: its monthly row, minus days read in this pass.
    from_month = monthly is not None and (this_month - same_end) < (same_end - same_start)
    daily = list(
        period(rows, min(start, same_end) if from_month else min(start, same_start), today)
        .values("day", "provider_id")
        .annotate(**_totals_aggregates())
        .order_by("day", "provider_id")
    )
    totals_of = {}
    for name, (first, end) in periods.items():
        total: dict = {}
        for row in daily:
            if first <= row["day"] < end:
                _add(total, row, *TOTALS_SUMS)
        totals_of[name] = _as_totals(total)
    if from_month:
        month_total = monthly.filter(month=same_start).aggregate(**_totals_aggregates())
        after = [(row, -1) for row in daily if same_end <= row["day"] < this_month]
        net = periods_add_up([(month_total, 1), *after], (), TOTALS_SUMS)
        totals_of["same_days_last_month"] = _as_totals(net[0] if net else {})
    recent = [row for row in daily if row["day"] >= recent_start]
    providers: dict = {}
    for row in recent:
        _add(providers.setdefault(row["provider_id"], {"provider_id": row["provider_id"]}), row, "cost", "tokens")
    pairs = list(period(rows, recent_start, today).values("workload_id", "model").annotate(cost=Sum("reporting_cost"), tokens=TOKEN_SUM).order_by())
    workloads: dict = {}
    models: dict = {}
    for row in pairs:
        _add(workloads.setdefault(row["workload_id"], {"workload_id": row["workload_id"]}), row, "cost", "tokens")
        _add(models.setdefault(row["model"], {"model": row["model"]}), row, "cost", "tokens")
    return Overview(
        periods=totals_of,
        daily_by_provider=[{"day": r["day"], "provider_id": r["provider_id"], "cost": r["cost"]} for r in recent],
        by_provider=_with_unit_cost(_by_cost(list(providers.values()))),
        by_workload=_by_cost(list(workloads.values())),
        by_model=_with_unit_cost(_by_cost(list(models.values()))),
    )


def _with_unit_cost(grouped: list[dict]) -> list[dict]:
    for row in grouped:
        row["cost"] = row["cost"] or ZERO
        row["usd_per_mtok"] = row["cost"] / row["tokens"] * 1_000_000 if row["tokens"] else None
    return grouped
