"""`spend_spike`: a workload's (or the unattributed group's) day far above its usual (the method:
finops.alerts.selectors.spikes)."""

import datetime as dt

from finops.alerts.selectors.spikes import METHOD, K, Spike, spikes_find
from finops.alerts.services.spend_changes import SpendChange
from finops.core import display
from finops.models import AlertEvent, AlertKind, Workload

from .events import event_raise

KINDS = (AlertKind.SPEND_SPIKE,)

# A change reaching further back (a backfill of last year) is history, not news: spikes are judged on the
# changed days within the last SPIKE_RECENT_DAYS complete days only.
SPIKE_RECENT_DAYS = 14


def _spike_scope(change: SpendChange | None, today: dt.date) -> tuple[list[dt.date], list[int] | None]:
    """The complete days to judge and the workloads (None: all; the unattributed group is always judged)."""
    yesterday = today - dt.timedelta(days=1)
    if change is None:
        return [yesterday], None
    days = [d for d in change.days if today - dt.timedelta(days=SPIKE_RECENT_DAYS) <= d <= yesterday]
    if not change.workload_ids and not change.team_ids:  # an ingest may touch any workload of its account
        return days, None
    ids = set(change.workload_ids) | set(
        Workload.objects.filter(team_id__in=change.team_ids).values_list("id", flat=True)
    )
    return days, sorted(ids)


def evaluate(*, today: dt.date, change: SpendChange | None = None) -> list[AlertEvent]:
    """One event per workload and day whose spend is a spike; subject "workload:<id>" ("workload:none" for the
    unattributed group), period_start the day."""
    days, workload_ids = _spike_scope(change, today)
    spikes = spikes_find(days, workload_ids=workload_ids)
    workloads = Workload.objects.select_related("team").in_bulk({s.workload_id for s in spikes if s.workload_id})
    raised = []
    for spike in spikes:
        workload = workloads.get(spike.workload_id)
        if spike.workload_id is not None and workload is None:
            continue  # deleted since the rollup was read
        event = event_raise(
            kind=AlertKind.SPEND_SPIKE,
            subject=f"workload:{spike.workload_id or 'none'}",
            period_start=spike.day,
            title=spike_title(spike, workload),
            details=spike_details(spike, workload),
            workload=workload,
            team=workload.team if workload else None,
        )
        raised += [event] if event else []
    return raised


def spike_title(spike: Spike, workload: Workload | None) -> str:
    """ "Checkout agent spent $812.40 on 23 November 2026, 6.1× its usual $133.00 a day"."""
    verdict, name = spike.verdict, workload.name if workload else display.UNATTRIBUTED
    return (
        f"{name} spent {display.money_exact(verdict.cost)} on {display.day(spike.day)}, {verdict.ratio:.1f}× its usual "
        f"{display.money_exact(verdict.baseline_median)} a day"
    )


def spike_details(spike: Spike, workload: Workload | None) -> dict:
    verdict, text = spike.verdict, display.csv_decimal
    return {
        "day": spike.day.isoformat(),
        "cost": text(verdict.cost),
        "baseline_median": text(verdict.baseline_median),
        "spread": text(verdict.spread),
        "k": text(K),
        "threshold": text(verdict.threshold),
        "min_change": text(verdict.min_change),
        "ratio": text(verdict.ratio, 1),
        "days_with_spend": verdict.days_with_spend,
        "method": METHOD,
        "currency": display.reporting_currency(),
        "workload": workload.name if workload else display.UNATTRIBUTED,
        "team": workload.team.name if workload and workload.team else "",
    }
