"""Spend changed → which caps, workloads and sources to look at → AlertEvent rows (docs/architecture.md alert pipeline).

Evaluation never sends anything: it inserts events, each unique per kind × subject × period × threshold
(`event_raise`), and delivery (finops.notify) claims and sends them. So evaluating twice, or from several
workers at once, raises each event once; spend restated down and back up within a period finds its event
already there and says nothing again; a new period is a new period_start and re-arms every threshold.
"""

import datetime as dt
import logging

from django.db import IntegrityError, transaction
from django.db.models import Min
from django.utils import timezone

from finops import contract_alerts, display, outcome_alerts
from finops.models import Account, AlertEvent, AlertKind, Cap, Contract, DailySpend, IngestRun, Workload
from finops.models.usage import CostBasis
from finops.selectors.account_status import AccountStatus, account_statuses, deciding_runs
from finops.selectors.caps import CapStatus, cap_statuses, caps_drivers
from finops.selectors.contracts import contract_statuses
from finops.selectors.spend import TOKEN_SUM
from finops.selectors.spikes import METHOD, K, Spike, spikes_find
from finops.services.spend_changes import SpendChange

log = logging.getLogger(__name__)


def today_utc() -> dt.date:
    return timezone.now().astimezone(dt.UTC).date()


def event_raise(
    *, kind: str, subject: str, period_start: dt.date, threshold: int = 0, title: str, details: dict, **fields
) -> AlertEvent | None:
    """Insert the event unless it exists: the new row, or None when it was raised before (by this process or
    any other: the unique constraint decides, inside a savepoint so the caller's transaction goes on)."""
    try:
        with transaction.atomic():
            return AlertEvent.objects.create(
                kind=kind,
                subject=subject,
                period_start=period_start,
                threshold=threshold,
                title=title,
                details=details,
                **fields,
            )
    except IntegrityError:
        return None


def alerts_evaluate(*, change: SpendChange | None = None, today: dt.date | None = None) -> list[AlertEvent]:
    """Raise what the spend (after `change`, or in general when None: the beat's catch-up) calls for."""
    today = today or today_utc()
    raised: list[AlertEvent] = []
    raised += caps_evaluate(today=today, change=change)
    raised += spikes_evaluate(today=today, change=change)
    raised += unpriced_evaluate(today=today, change=change)
    raised += sources_evaluate(today=today, change=change)
    raised += contracts_evaluate(today=today, change=change)
    raised += outcomes_evaluate(today=today, change=change)
    return raised


def outcomes_evaluate(*, today: dt.date, change: SpendChange | None = None) -> list[AlertEvent]:
    """Cost per outcome over a complete month above the workload's target (finops.outcome_alerts)."""
    return outcome_alerts.outcomes_evaluate(today=today, change=change, event_raise=event_raise)


# --- caps ---


def _caps_touched(change: SpendChange | None):
    """Every cap, narrowed to the scopes a change touched when it names them (a cap on the organisation or a
    provider is always looked at: any line may be in it)."""
    caps = Cap.objects.select_related("team", "workload__team", "provider", "account")
    if change is None or not (change.account_ids or change.workload_ids or change.team_ids):
        return list(caps)
    from django.db.models import Q

    touched = (
        Q(scope__in=("org", "provider")) | Q(account_id__in=change.account_ids) | Q(workload_id__in=change.workload_ids)
    )
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
        # Thresholds crossed together (a big import, a first evaluation) say one thing: only the highest is sent;
        # the others are kept, marked superseded, so each threshold still fires once and never later.
        for event in new[:-1]:
            AlertEvent.objects.filter(id=event.id, state=AlertEvent.State.PENDING).update(
                state=AlertEvent.State.SUPERSEDED
            )
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


# --- spend spikes (the method: finops.selectors.spikes) ---

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


def spikes_evaluate(*, today: dt.date, change: SpendChange | None = None) -> list[AlertEvent]:
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


# --- unpriced usage ---

# Raised once per model ever: every event of this kind has this period_start, so the unique constraint holds
# "once" even when a later import finds the model unpriced on an earlier day. The first day seen is in details.
UNPRICED_PERIOD = dt.date(2000, 1, 1)
UNPRICED_RECENT_DAYS = 2  # the beat looks at today and the 2 days before


def unpriced_evaluate(*, today: dt.date, change: SpendChange | None = None) -> list[AlertEvent]:
    """One event per provider/model the first time it is seen with unpriced usage (cost basis `unpriced`)."""
    rows = DailySpend.objects.filter(cost_basis=CostBasis.UNPRICED)
    if change is None:
        rows = rows.filter(day__gte=today - dt.timedelta(days=UNPRICED_RECENT_DAYS))
    else:
        rows = rows.filter(day__in=change.days)
        rows = rows.filter(account_id__in=change.account_ids) if change.account_ids else rows
    found: dict[tuple[str, str], dict] = {}
    grouped = (
        rows.values("provider__slug", "provider__name", "model", "account__name")
        .annotate(tokens=TOKEN_SUM, first_day=Min("day"))
        .order_by("provider__slug", "model", "account__name")
    )
    for row in grouped:
        seen = found.setdefault(
            (row["provider__slug"], row["model"]),
            {
                "provider": row["provider__slug"],
                "provider_name": row["provider__name"],
                "model": row["model"],
                "tokens": 0,
                "accounts": [],
                "first_day": row["first_day"],
            },
        )
        seen["tokens"] += row["tokens"] or 0
        seen["accounts"].append(row["account__name"])
        seen["first_day"] = min(seen["first_day"], row["first_day"])
    raised = []
    for (slug, model), seen in found.items():
        first_day = seen["first_day"].isoformat()
        title = (
            f"{display.model_name(model)} ({seen['provider_name']}) has usage with no known price "
            f"since {display.day(seen['first_day'])}: {display.tokens_compact(seen['tokens'])} tokens of unknown cost"
        )
        event = event_raise(
            kind=AlertKind.UNPRICED_USAGE,
            subject=f"model:{slug}/{model}"[:255],
            period_start=UNPRICED_PERIOD,
            title=title[:300],
            details={**seen, "first_day": first_day},
        )
        raised += [event] if event else []
    return raised


# --- sources failing or silent ---

SILENT_INTERVALS = 3  # an API account is silent after 3 × its sync interval without a successful sync …
SILENT_MIN = dt.timedelta(hours=2)  # … and at least 2 hours


def sources_evaluate(*, today: dt.date, change: SpendChange | None = None) -> list[AlertEvent]:
    """One event per account and condition start (finops.selectors.account_status): a failing run (error, or
    disabled after one), an API account silent longer than its schedule allows, data older than STALE_AFTER_DAYS.
    An account switched off by an admin (no failed run) is not alerted: someone chose it.

    Silence and staleness are a matter of time passing, so only the beat (no `change`) judges them: a spend
    change means data just arrived, and an import of an old month (a backfill, the demo's monthly files in order)
    would otherwise alert "no data after July" for an account that is about to be current."""
    accounts = Account.objects.all()
    if change is not None and change.account_ids:
        accounts = accounts.filter(id__in=change.account_ids)
    now = timezone.now()
    raised = []
    for status in account_statuses(today, accounts=accounts):
        found = source_condition(status, now=now, silence=change is None)
        if found is None:
            continue
        start, title, details = found
        event = event_raise(
            kind=AlertKind.SOURCE_FAILING,
            subject=f"account:{status.account.id}",
            period_start=start,
            title=title[:300],
            details=details,
            account=status.account,
        )
        raised += [event] if event else []
    return raised


def _since(account: Account) -> str:
    when = account.last_success_at
    return f"since {display.utc_time(when)}" if when else "ever"


def source_condition(
    status: AccountStatus, *, now: dt.datetime, silence: bool = True
) -> tuple[dt.date, str, dict] | None:
    """(the day the condition started, title, details) of the most urgent condition, or None when healthy;
    `silence`: judge silence and staleness too (the beat), not only failures."""
    account, run = status.account, status.last_run
    details = {
        "account": account.name,
        "provider": account.provider.slug,
        "state": status.state,
        "status": status.label,
        "detail": status.detail,
        "freshness": status.freshness,
        "latest_day": status.latest_day.isoformat() if status.latest_day else None,
        "last_success_at": account.last_success_at.isoformat() if account.last_success_at else None,
    }
    failed = run is not None and run.status == IngestRun.Status.FAILED
    if failed and status.state in ("error", "disabled"):
        # The condition started with the first failed run after the latest success (each retry is the same one).
        runs = deciding_runs(
            IngestRun.objects.filter(account=account)
        )  # a refused file is the uploader's, not the source's
        success = runs.filter(status=IngestRun.Status.SUCCEEDED).order_by("-created_at", "-id").first()
        failures = runs.filter(status=IngestRun.Status.FAILED)
        if success is not None:  # runs are numbered in the order they were created
            failures = failures.filter(id__gt=success.id)
        first = failures.order_by("created_at", "id").first() or run
        start = first.created_at.astimezone(dt.UTC).date()
        if account.is_api:
            verb = "has not synced" if account.last_success_at else "has never synced"
            title = f"{account.name} {verb} {_since(account) if account.last_success_at else ''}".rstrip()
        else:
            title = f"{account.name}: last import failed (file {run.file_name})"
        # The error itself is said once, in the email's reason (finops.alert_emails), not in the subject too.
        if status.state == "disabled":
            title += " (disabled)"
        return start, title, {**details, "error": run.error, "failing_since": start.isoformat()}
    if status.state == "disabled" or not silence:
        return None
    if account.is_api:
        allowed = max(SILENT_MIN, SILENT_INTERVALS * dt.timedelta(minutes=account.sync_interval_minutes))
        since = account.last_success_at or account.created_at
        if now - since > allowed:
            start = since.astimezone(dt.UTC).date()
            title = (
                f"{account.name} has not synced {_since(account)}: no successful sync for "
                f"{display.duration(now - since)} (it syncs every {account.sync_interval_minutes} min)"
            )
            return start, title, {**details, "silent_since": since.isoformat()}
    if status.state == "stale":
        start = status.latest_day + dt.timedelta(days=1)
        title = f"{account.name} has no data after {display.day(status.latest_day)}: {status.freshness}"
        return start, title, {**details, "stale_since": start.isoformat()}
    return None


# --- contracts: notice deadlines, shortfall and overage risk (finops.contract_alerts) ---


def contracts_evaluate(*, today: dt.date, change: SpendChange | None = None) -> list[AlertEvent]:
    """Per contract whose term has not ended: one event per notice threshold crossed (only the smallest newly
    crossed one is sent, larger ones crossed at the same time are kept superseded, as caps do), and once per term
    a shortfall risk and an overage risk. A deadline is a matter of days passing and contracts are few, so every
    contract is looked at whatever `change` names (a change only moves the projections)."""
    contracts = list(Contract.objects.filter(end__gt=today).select_related("provider").prefetch_related("accounts"))
    raised = []
    for status in contract_statuses(contracts, today=today):
        subject, start, contract = contract_alerts.subject(status), status.contract.start, status.contract
        details = contract_alerts.contract_details(status)
        new = []
        for days in contract_alerts.notice_thresholds(status):  # largest first: the last one new is the one sent
            event = event_raise(
                kind=AlertKind.CONTRACT_NOTICE,
                subject=subject,
                period_start=start,
                threshold=days,
                title=contract_alerts.notice_title(status),
                details=details,
                contract=contract,
            )
            new += [event] if event else []
        for event in new[:-1]:
            AlertEvent.objects.filter(id=event.id, state=AlertEvent.State.PENDING).update(
                state=AlertEvent.State.SUPERSEDED
            )
        raised += new
        risks = (
            (
                AlertKind.CONTRACT_SHORTFALL,
                contract_alerts.SHORTFALL_THRESHOLD,
                contract_alerts.shortfall_risk,
                contract_alerts.shortfall_title,
            ),
            (
                AlertKind.CONTRACT_OVERAGE,
                contract_alerts.OVERAGE_THRESHOLD,
                contract_alerts.overage_risk,
                contract_alerts.overage_title,
            ),
        )
        for kind, threshold, at_risk, title in risks:
            if at_risk(status):
                event = event_raise(
                    kind=kind,
                    subject=subject,
                    period_start=start,
                    threshold=threshold,
                    title=title(status)[:300],
                    details=details,
                    contract=contract,
                )
                raised += [event] if event else []
    return raised
