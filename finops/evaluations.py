"""Spend changed → which caps, workloads and sources to look at → AlertEvent rows (DESIGN.md alert pipeline).

Evaluation never sends anything: it inserts events, each unique per kind × subject × period × threshold
(`event_raise`), and delivery (finops.notify) claims and sends them. So evaluating twice, or from several
workers at once, raises each event once; spend restated down and back up within a period finds its event
already there and says nothing again; a new period is a new period_start and re-arms every threshold.
"""

import datetime as dt
import logging

from django.db import IntegrityError, transaction
from django.utils import timezone

from finops import display
from finops.models import AlertEvent, AlertKind, Cap, Workload
from finops.selectors.caps import CapStatus, cap_drivers, cap_statuses
from finops.services.spend_changes import SpendChange

log = logging.getLogger(__name__)


def today_utc() -> dt.date:
    return timezone.now().astimezone(dt.UTC).date()


def event_raise(*, kind: str, subject: str, period_start: dt.date, threshold: int = 0, title: str,
                details: dict, **fields) -> AlertEvent | None:
    """Insert the event unless it exists: the new row, or None when it was raised before (by this process or
    any other: the unique constraint decides, inside a savepoint so the caller's transaction goes on)."""
    try:
        with transaction.atomic():
            return AlertEvent.objects.create(kind=kind, subject=subject, period_start=period_start, threshold=threshold,
                                             title=title, details=details, **fields)
    except IntegrityError:
        return None


def alerts_evaluate(*, change: SpendChange | None = None, today: dt.date | None = None) -> list[AlertEvent]:
    """Raise what the spend (after `change`, or in general when None: the beat's catch-up) calls for."""
    today = today or today_utc()
    raised: list[AlertEvent] = []
    raised += caps_evaluate(today=today, change=change)
    return raised


# --- caps ---


def _caps_touched(change: SpendChange | None):
    """Every cap, narrowed to the scopes a change touched when it names them (a cap on the organisation or a
    provider is always looked at: any line may be in it)."""
    caps = Cap.objects.select_related("team", "workload__team", "provider", "account")
    if change is None or not (change.account_ids or change.workload_ids or change.team_ids):
        return list(caps)
    from django.db.models import Q

    touched = Q(scope__in=("org", "provider")) | Q(account_id__in=change.account_ids) | Q(workload_id__in=change.workload_ids)
    touched |= Q(team_id__in=change.team_ids)
    if change.account_ids:
        # An account's lines may belong to any team or workload: those its rollup holds on the changed days, once
        # the change is written. One that lost all its lines there only spent less, which raises no cap alert.
        from finops.models import DailySpend

        rows = DailySpend.objects.filter(account_id__in=change.account_ids, day__in=change.days)
        touched |= Q(scope="team", team_id__in=rows.exclude(team_id=None).values("team_id").distinct())
        touched |= Q(scope="workload", workload_id__in=rows.exclude(workload_id=None).values("workload_id").distinct())
    return list(caps.filter(touched))


def caps_evaluate(*, today: dt.date, change: SpendChange | None = None) -> list[AlertEvent]:
    """One event per threshold a cap's spend has crossed this period, and one when it is forecast to exceed."""
    caps = _caps_touched(change)
    # Events raised before are skipped without building their figures (a few queries each): most evaluations find
    # every crossed threshold raised already (450 caps: 2.8 s → well under 1 s). event_raise still decides.
    raised_before = set(AlertEvent.objects.filter(subject__in=[f"cap:{cap.id}" for cap in caps],
                                                  kind__in=(AlertKind.CAP_THRESHOLD, AlertKind.CAP_FORECAST))
                        .values_list("kind", "subject", "period_start", "threshold"))
    raised = []
    for status in cap_statuses(caps, today=today):
        cap = status.cap
        subject, details = f"cap:{cap.id}", {}

        def figures(status=status, details=details) -> dict:  # once per cap, and only for a new event
            if not details:
                details.update(cap_details(status))
            return details

        new = []
        for threshold in status.crossed:
            if (AlertKind.CAP_THRESHOLD, subject, status.period_start, threshold) in raised_before:
                continue
            event = event_raise(kind=AlertKind.CAP_THRESHOLD, subject=subject, period_start=status.period_start,
                                threshold=threshold, title=cap_title(status, threshold), details=figures(),
                                **_cap_fields(cap))
            new += [event] if event else []
        # Thresholds crossed together (a big import, a first evaluation) say one thing: only the highest is sent;
        # the others are kept, marked superseded, so each threshold still fires once and never later.
        for event in new[:-1]:
            AlertEvent.objects.filter(id=event.id, state=AlertEvent.State.PENDING).update(state=AlertEvent.State.SUPERSEDED)
        raised += new
        if (cap.alert_on_forecast and status.forecast_breach and status.spent < cap.amount
                and (AlertKind.CAP_FORECAST, subject, status.period_start, 100) not in raised_before):
            event = event_raise(kind=AlertKind.CAP_FORECAST, subject=subject, period_start=status.period_start,
                                threshold=100, title=cap_forecast_title(status), details=figures(),
                                **_cap_fields(cap))
            raised += [event] if event else []
    return raised


def _cap_fields(cap: Cap) -> dict:
    return {"cap": cap, "team": cap.owning_team, "workload": cap.workload, "account": cap.account}


def _amount_label(status: CapStatus) -> str:
    """"$5,000" or "$5,000.50": a cap's amount without cents when it has none."""
    text = display.money_exact(status.cap.amount)
    return text[:-3] if text.endswith(".00") else text


def _scope_name(cap: Cap) -> str:
    target = cap.scope_object
    return "The organisation" if target is None else str(target)


def cap_title(status: CapStatus, threshold: int) -> str:
    """"Support Platform at 82% of its $5,000 November cap" (the percentage is the spend's, not the threshold's)."""
    month = status.period_label.split(" ")[0] if status.cap.period == "month" else status.period_label
    return f"{_scope_name(status.cap)} at {status.percent:.0f}% of its {_amount_label(status)} {month} cap"


def cap_forecast_title(status: CapStatus) -> str:
    month = status.period_label.split(" ")[0] if status.cap.period == "month" else status.period_label
    return (f"{_scope_name(status.cap)} forecast to reach {display.money_exact(status.forecast)} "
            f"({status.forecast_percent:.0f}%) of its {_amount_label(status)} {month} cap")


def cap_details(status: CapStatus) -> dict:
    """The figures an email and the alerts page show, as decimal strings (the event keeps them as raised)."""
    drivers = cap_drivers(status.cap, start=status.period_start, end=status.period_end)
    names = dict(Workload.objects.filter(id__in=[r["workload_id"] for r in drivers["workloads"] if r["workload_id"]])
                 .values_list("id", "name"))
    text = display.csv_decimal
    return {
        "cap": status.cap.name, "scope": status.cap.scope_label(), "period": status.period_label,
        "period_start": status.period_start.isoformat(), "period_end": status.period_end.isoformat(),
        "amount": text(status.cap.amount), "spent": text(status.spent), "percent": text(status.percent, 1),
        "unpriced_tokens": status.unpriced_tokens, "forecast": text(status.forecast),
        "forecast_percent": text(status.forecast_percent, 1), "forecast_method": status.forecast_method,
        "daily_rate": text(status.daily_rate), "days_left": status.days_left, "status": status.status,
        "currency": display.reporting_currency(),
        "drivers": {
            "workloads": [{"name": names.get(row["workload_id"], display.UNATTRIBUTED), "cost": text(row["cost"]),
                           "unpriced_tokens": row["unpriced_tokens"] or 0} for row in drivers["workloads"]],
            "models": [{"name": display.model_name(row["model"]), "model": row["model"], "cost": text(row["cost"]),
                        "unpriced_tokens": row["unpriced_tokens"] or 0} for row in drivers["models"]],
        },
    }
