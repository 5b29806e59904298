"""The `outcome_cost` alert (issue 12): a workload whose cost per outcome over a complete UTC calendar month is above
its `target_cost_per_outcome` raises one event per workload × month (subject `workload:<id>`, period_start = the
month, threshold 100).

Complete months only: a month to date swings on its first days (a Monday's outcomes before its spend is imported, a
restated export), and an alert a day later disproved would be noise; the workload page shows the month to date
against the target meanwhile. The last complete month is judged on every evaluation, plus any earlier month (up to
a year back) whose spend a change restated. An unknown cost (only unpriced usage) or a month with no outcomes is
neither over nor under: it raises nothing.
"""

import datetime as dt

from finops.alerts.services.spend_changes import SpendChange
from finops.core import display
from finops.core.months import month_of, next_month
from finops.models import AlertEvent, AlertKind, DailySpend, MonthlySpend, Workload
from finops.performance.selectors import outcomes

from .events import event_raise

KINDS = (AlertKind.OUTCOME_COST,)

LOOK_BACK_MONTHS = 12


def months_to_judge(*, today: dt.date, change: SpendChange | None) -> list[dt.date]:
    """The last complete month, and the complete months (within a year) whose days a change touched."""
    this_month = month_of(today)
    last = month_of(this_month - dt.timedelta(days=1))
    oldest = this_month.replace(year=this_month.year - 1)
    touched = {month_of(day) for day in (change.days if change else ()) if oldest <= month_of(day) < this_month}
    return sorted(touched | {last})


def outcome_title(workload: Workload, month: dt.date, per_outcome, target) -> str:
    """ "Support agent: $0.61 per ticket resolved in October 2026, over its $0.50 target"."""
    unit = workload.outcome_unit or "outcome"
    return (
        f"{workload.name}: {display.per_outcome(per_outcome)} per {unit} in {month:%B %Y}, "
        f"over its {display.per_outcome(target)} target"
    )


def evaluate(*, today: dt.date, change: SpendChange | None = None) -> list[AlertEvent]:
    workloads = list(Workload.objects.filter(target_cost_per_outcome__isnull=False).select_related("team"))
    if change is not None and change.workload_ids and not change.account_ids and not change.team_ids:
        workloads = [w for w in workloads if w.id in change.workload_ids]
    if not workloads:
        return []
    raised = []
    for month in months_to_judge(today=today, change=change):
        figures = outcomes.by_workload(
            DailySpend.objects.all(),
            MonthlySpend.objects.all(),
            [w.id for w in workloads],
            month,
            next_month(month),
            today=today,
        )
        for workload in workloads:
            figure, target = figures[workload.id], workload.target_cost_per_outcome
            if figure.per_outcome is None or figure.per_outcome <= target:
                continue
            event = event_raise(
                kind=AlertKind.OUTCOME_COST,
                subject=f"workload:{workload.id}",
                period_start=month,
                threshold=100,
                title=outcome_title(workload, month, figure.per_outcome, target),
                details={
                    "month": month.isoformat(),
                    "cost": display.csv_decimal(figure.cost),
                    "outcomes": figure.outcomes,
                    "cost_per_outcome": display.csv_decimal(figure.per_outcome),
                    "target": display.csv_decimal(target),
                    "unit": workload.outcome_unit,
                    "unpriced_tokens": figure.unpriced_tokens,
                    "workload": workload.slug,
                },
                team=workload.team,
                workload=workload,
            )
            raised += [event] if event else []
    return raised
