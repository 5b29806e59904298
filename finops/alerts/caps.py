"""Caps: `cap_threshold` (one event per threshold a cap's spend has crossed this period) and `cap_forecast` (once
when the forecast exceeds the cap). Both kinds live in one module because they are judged from one read of every
cap's spend and forecast (`cap_statuses`, grouped per scope kind): splitting them would read it twice."""

import datetime as dt

from django.db.models import Q

from finops.alerts.selectors.caps import CapStatus, cap_statuses, caps_drivers
from finops.alerts.services.spend_changes import SpendChange
from finops.core import display
from finops.models import AlertEvent, AlertKind, Cap, DailySpend, Workload

from .events import event_raise, keep_last_only

KINDS = (AlertKind.CAP_THRESHOLD, AlertKind.CAP_FORECAST)


def _caps_touched(change: SpendChange | None):
    """Every cap, narrowed to the scopes a change touched when it names them (a cap on the organisation or a
    provider is always looked at: any line may be in it)."""
    caps = Cap.objects.select_related("team", "workload__team", "provider", "account")
    if change is None or not (change.account_ids or change.workload_ids or change.team_ids):
        return list(caps)
    touched = (
        Q(scope__in=("org", "provider")) | Q(account_id__in=change.account_ids) | Q(workload_id__in=change.workload_ids)
    )
    touched |= Q(team_id__in=change.team_ids)
    if change.account_ids:
        # An account's lines may belong to any team or workload: those its rollup holds on the changed days, once
        # the change is written. One that lost all its lines there only spent less, which raises no cap alert.
        rows = DailySpend.objects.filter(account_id__in=change.account_ids, day__in=change.days)
        touched |= Q(scope="team", team_id__in=rows.exclude(team_id=None).values("team_id").distinct())
        touched |= Q(scope="workload", workload_id__in=rows.exclude(workload_id=None).values("workload_id").distinct())
    return list(caps.filter(touched))


def evaluate(*, today: dt.date, change: SpendChange | None = None) -> list[AlertEvent]:
    """One event per threshold a cap's spend has crossed this period, and one when it is forecast to exceed."""
    caps = _caps_touched(change)
    # Events raised before are skipped without building their figures (a few queries each): most evaluations find
    # every crossed threshold raised already (450 caps: 2.8 s → well under 1 s). event_raise still decides.
    raised_before = set(
        AlertEvent.objects.filter(
            subject__in=[f"cap:{cap.id}" for cap in caps], kind__in=(AlertKind.CAP_THRESHOLD, AlertKind.CAP_FORECAST)
        ).values_list("kind", "subject", "period_start", "threshold")
    )
    raised = []
    statuses = cap_statuses(caps, today=today)
    # The figures of the caps with something new to say, their drivers read for all of them at once.
    news = [s for s in statuses if _has_news(s, raised_before)]
    if not news:
        return raised
    drivers = caps_drivers([(s.cap, s.period_start, s.period_end) for s in news])
    names = dict(
        Workload.objects.filter(
            id__in={r["workload_id"] for d in drivers.values() for r in d["workloads"] if r["workload_id"]}
        ).values_list("id", "name")
    )
    for status in news:
        cap = status.cap
        subject, details = f"cap:{cap.id}", {}

        def figures(status=status, details=details) -> dict:  # once per cap, and only for a new event
            if not details:
                details.update(cap_details(status, drivers[status.cap.id], names))
            return details

        new = []
        for threshold in status.crossed:
            if (AlertKind.CAP_THRESHOLD, subject, status.period_start, threshold) in raised_before:
                continue
            event = event_raise(
                kind=AlertKind.CAP_THRESHOLD,
                subject=subject,
                period_start=status.period_start,
                threshold=threshold,
                title=cap_title(status, threshold),
                details=figures(),
                **_cap_fields(cap),
            )
            new += [event] if event else []
        keep_last_only(new)  # only the highest threshold crossed together is sent
        raised += new
        if (
            cap.alert_on_forecast
            and status.forecast_breach
            and status.spent < cap.amount
            and (AlertKind.CAP_FORECAST, subject, status.period_start, 100) not in raised_before
        ):
            event = event_raise(
                kind=AlertKind.CAP_FORECAST,
                subject=subject,
                period_start=status.period_start,
                threshold=100,
                title=cap_forecast_title(status),
                details=figures(),
                **_cap_fields(cap),
            )
            raised += [event] if event else []
    return raised


def _has_news(status: CapStatus, raised_before: set) -> bool:
    """Whether a cap has a threshold or a forecast breach not raised yet this period."""
    subject = f"cap:{status.cap.id}"
    if any((AlertKind.CAP_THRESHOLD, subject, status.period_start, t) not in raised_before for t in status.crossed):
        return True
    return (
        status.cap.alert_on_forecast
        and status.forecast_breach
        and status.spent < status.cap.amount
        and (AlertKind.CAP_FORECAST, subject, status.period_start, 100) not in raised_before
    )


def _cap_fields(cap: Cap) -> dict:
    return {"cap": cap, "team": cap.owning_team, "workload": cap.workload, "account": cap.account}


def _amount_label(status: CapStatus) -> str:
    """ "$5,000" or "$5,000.50": a cap's amount without cents when it has none."""
    text = display.money_exact(status.cap.amount)
    return text[:-3] if text.endswith(".00") else text


def _scope_name(cap: Cap) -> str:
    target = cap.scope_object
    return "The organisation" if target is None else str(target)


def cap_title(status: CapStatus, threshold: int) -> str:
    """ "Support Platform at 82% of its $5,000 November cap" (the percentage is the spend's, not the threshold's)."""
    month = status.period_label.split(" ")[0] if status.cap.period == "month" else status.period_label
    return f"{_scope_name(status.cap)} at {status.percent:.0f}% of its {_amount_label(status)} {month} cap"


def cap_forecast_title(status: CapStatus) -> str:
    month = status.period_label.split(" ")[0] if status.cap.period == "month" else status.period_label
    return (
        f"{_scope_name(status.cap)} forecast to reach {display.money_exact(status.forecast)} "
        f"({status.forecast_percent:.0f}%) of its {_amount_label(status)} {month} cap"
    )


def cap_details(status: CapStatus, drivers: dict, names: dict) -> dict:
    """The figures an email and the alerts page show, as decimal strings (the event keeps them as raised).
    `drivers`: the cap's (caps_drivers); `names`: workload names by id."""
    text = display.csv_decimal
    return {
        "cap": status.cap.name,
        "scope": status.cap.scope_label(),
        "period": status.period_label,
        "period_start": status.period_start.isoformat(),
        "period_end": status.period_end.isoformat(),
        "amount": text(status.cap.amount),
        "spent": text(status.spent),
        "percent": text(status.percent, 1),
        "unpriced_tokens": status.unpriced_tokens,
        "forecast": text(status.forecast),
        "forecast_low": text(status.projection.low),
        "forecast_high": text(status.projection.high),
        "forecast_percent": text(status.forecast_percent, 1),
        "forecast_method": status.forecast_method,
        "daily_rate": text(status.daily_rate),
        "days_left": status.days_left,
        "status": status.status,
        "currency": display.reporting_currency(),
        "drivers": {
            "workloads": [
                {
                    "name": names.get(row["workload_id"], display.UNATTRIBUTED),
                    "cost": text(row["cost"]),
                    "unpriced_tokens": row["unpriced_tokens"] or 0,
                }
                for row in drivers["workloads"]
            ],
            "models": [
                {
                    "name": display.model_name(row["model"]),
                    "model": row["model"],
                    "cost": text(row["cost"]),
                    "unpriced_tokens": row["unpriced_tokens"] or 0,
                }
                for row in drivers["models"]
            ],
        },
    }
