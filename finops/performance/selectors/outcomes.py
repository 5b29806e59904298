"""Cost per outcome (issue 12): what one business outcome ("ticket resolved") cost, over any period.

Sum over sum (docs/architecture.md invariant 6): Σ priced cost of the workload / Σ outcomes over the same days, never an
average of daily ratios (a quiet day's $5 per ticket would weigh as much as a busy day's $0.20). Spend comes from
the rollups (spend.sums: daily, or whole months from the monthly rollup for long periods), outcomes from
OutcomeCount; each is one grouped read, however many workloads.

Nothing is silently $0 (invariant 4):
- a period with no outcomes has no cost per outcome: None ("—");
- usage with no price at all: the cost is unknown, so is the cost per outcome (None), the unpriced tokens flagged;
- outcomes and no spend at all: $0.00 per outcome, a known figure (nothing was spent on them).
A partly priced period divides the priced part and flags the unpriced tokens beside it (as $/M tokens does).
"""

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal

from django.db.models import DateField, F, QuerySet, Sum
from django.db.models.functions import Cast, TruncMonth

from finops.core.any_of import AnyOf
from finops.models import DailySpend, MonthlySpend, OutcomeCount
from finops.spend.selectors import spend


@dataclass(frozen=True)
class CostPerOutcome:
    cost: Decimal | None  # the priced spend; ZERO where there was no usage at all; None where no usage had a price
    unpriced_tokens: int
    outcomes: int

    @property
    def per_outcome(self) -> Decimal | None:
        """Σcost / Σoutcomes; None when there are no outcomes or the cost is unknown."""
        return self.cost / self.outcomes if self.cost is not None and self.outcomes else None


def per_outcome(cost: Decimal | None, outcomes: int | None) -> Decimal | None:
    return cost / outcomes if cost is not None and outcomes else None


def _spent(row: dict | None) -> tuple[Decimal | None, int]:
    """(cost, unpriced tokens) of a finished spend row; no row: no usage, $0.00 spent (known)."""
    return (spend.ZERO, 0) if row is None else (row["cost"], row["unpriced_tokens"])


def outcome_counts(workload_ids, start: dt.date, end: dt.date) -> dict[int, int]:
    """Σ outcomes per workload over [start, end), every source together; workloads with none are left out."""
    rows = (
        OutcomeCount.objects.filter(AnyOf("workload_id", workload_ids), day__gte=start, day__lt=end)
        .values("workload_id")
        .annotate(total=Sum("count"))
        .order_by()
    )
    return {r["workload_id"]: r["total"] for r in rows if r["total"]}


def workloads_with_outcomes(workloads: QuerySet, start: dt.date, end: dt.date) -> QuerySet:
    """The workloads of `workloads` (already narrowed to what the viewer may see) that report outcomes in the period."""
    return workloads.filter(outcomes__day__gte=start, outcomes__day__lt=end, outcomes__count__gt=0).distinct()


def by_workload(
    daily: QuerySet[DailySpend],
    monthly: QuerySet[MonthlySpend] | None,
    workload_ids,
    start: dt.date,
    end: dt.date,
    *,
    today: dt.date,
    spent: dict[int, dict] | None = None,
) -> dict[int, CostPerOutcome]:
    """CostPerOutcome of each workload over [start, end): one grouped read of the spend, one of the outcomes.
    `daily`/`monthly`: the spend rows the viewer may see. `spent`: those rows' spend sums by workload over the same
    period, when the caller has read them already (the overview's workload table: spend.sums_each by workload,
    the same figures), {workload_id: row}; the spend is then not read again."""
    ids = list(workload_ids)
    if not ids:
        return {}
    if spent is not None:
        costs = spent
    else:
        costs = {
            r["workload_id"]: r
            for r in spend.sums(
                daily.filter(workload_id__in=ids),
                None if monthly is None else monthly.filter(workload_id__in=ids),
                start,
                end,
                ("workload_id",),
                today=today,
            )
        }
    counts = outcome_counts(ids, start, end)
    found = {}
    for workload_id in ids:
        cost, unpriced = _spent(costs.get(workload_id))
        found[workload_id] = CostPerOutcome(cost=cost, unpriced_tokens=unpriced, outcomes=counts.get(workload_id, 0))
    return found


def for_workload(daily, monthly, workload_id: int, start: dt.date, end: dt.date, *, today: dt.date) -> CostPerOutcome:
    return by_workload(daily, monthly, [workload_id], start, end, today=today)[workload_id]


def trend(
    daily: QuerySet[DailySpend],
    monthly: QuerySet[MonthlySpend] | None,
    workload_id: int,
    start: dt.date,
    end: dt.date,
    *,
    today: dt.date,
    by: str = "day",
) -> list[dict]:
    """[{point, cost, unpriced_tokens, outcomes, per_outcome}] for every day (by="day") or month (by="month", `point`
    its first day) of [start, end) up to today; a point with no outcomes has per_outcome None (a gap in a chart,
    never a zero). Each month's figure is its own sum over sum."""
    if by not in ("day", "month"):
        raise ValueError(f"by must be day or month, not {by!r}")
    daily, monthly = (
        daily.filter(workload_id=workload_id),
        None if monthly is None else monthly.filter(workload_id=workload_id),
    )
    costs = {r["point"]: r for r in spend.sums(daily, monthly, start, end, (), today=today, point=by)}
    point = F("day") if by == "day" else Cast(TruncMonth("day"), DateField())
    counts = {
        r["point"]: r["total"]
        for r in OutcomeCount.objects.filter(workload_id=workload_id, day__gte=start, day__lt=end)
        .values(point=point)
        .annotate(total=Sum("count"))
        .order_by()
    }
    points = []
    last = min(end, today + dt.timedelta(days=1))
    day = start if by == "day" else start.replace(day=1)
    while day < last:
        cost, unpriced = _spent(costs.get(day))
        outcomes = counts.get(day) or 0
        points.append(
            {
                "point": day,
                "cost": cost,
                "unpriced_tokens": unpriced,
                "outcomes": outcomes,
                "per_outcome": per_outcome(cost, outcomes),
            }
        )
        day = day + dt.timedelta(days=1) if by == "day" else (day + dt.timedelta(days=32)).replace(day=1)
    return points
