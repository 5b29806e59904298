"""Spend reads for pages and the API. They read the daily rollup only (DESIGN.md performance approach).

Every function takes the viewing user and scopes by finops.access: a member's figures never include
another team's spend nor unattributed spend.
"""

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal

from django.db.models import Q, QuerySet, Sum

from finops import access
from finops.models import CostBasis, DailySpend

ZERO = Decimal(0)


def visible_spend(user) -> QuerySet[DailySpend]:
    rows = DailySpend.objects.all()
    if access.can_see_unattributed(user):
        return rows
    return rows.filter(team__in=access.visible_teams(user))


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
    unpriced = Q(cost_basis=CostBasis.UNPRICED)
    agg = rows.aggregate(
        cost=Sum("reporting_cost"),
        tokens=TOKEN_SUM,
        requests=Sum("requests"),
        unattributed=Sum("reporting_cost", filter=Q(workload__isnull=True)),
        unpriced_tokens=Sum("input_tokens", filter=unpriced)
        + Sum("cached_input_tokens", filter=unpriced)
        + Sum("cache_write_tokens", filter=unpriced)
        + Sum("output_tokens", filter=unpriced),
    )
    return Totals(
        cost=agg["cost"] or ZERO,
        unpriced_tokens=agg["unpriced_tokens"] or 0,
        unattributed_cost=agg["unattributed"] or ZERO,
        tokens=agg["tokens"] or 0,
        requests=agg["requests"] or 0,
    )


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


def month_to_date(rows: QuerySet[DailySpend], today: dt.date) -> MonthToDate:
    """Spend of this UTC month up to (not including) today, against the same days of last month."""
    first = today.replace(day=1)
    last_month_first = (first - dt.timedelta(days=1)).replace(day=1)
    elapsed = today - first
    same_days_end = min(last_month_first + elapsed, first)
    return MonthToDate(
        today=today,
        this_month=totals(period(rows, first, today)).cost,
        same_days_last_month=totals(period(rows, last_month_first, same_days_end)).cost,
    )


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


def month_forecast(rows: QuerySet[DailySpend], today: dt.date) -> Forecast:
    """Month to date plus the average of the last RUN_RATE_DAYS complete days for every day left (today included)."""
    first = today.replace(day=1)
    next_month = (first + dt.timedelta(days=32)).replace(day=1)
    recent = totals(period(rows, today - dt.timedelta(days=RUN_RATE_DAYS), today)).cost
    return Forecast(
        month_start=first,
        month_to_date=totals(period(rows, first, today)).cost,
        daily_run_rate=recent / RUN_RATE_DAYS,
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
