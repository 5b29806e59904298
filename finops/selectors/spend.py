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
