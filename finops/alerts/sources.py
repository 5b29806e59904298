"""`source_failing`: an account failing, silent longer than its schedule allows, or with stale data."""

import datetime as dt

from django.utils import timezone

from finops.alerts.services.spend_changes import SpendChange
from finops.core import display
from finops.models import Account, AlertEvent, AlertKind, IngestRun
from finops.sources.selectors.account_status import AccountStatus, account_statuses, deciding_runs

from .events import event_raise

KINDS = (AlertKind.SOURCE_FAILING,)

SILENT_INTERVALS = 3  # an API account is silent after 3 × its sync interval without a successful sync …
SILENT_MIN = dt.timedelta(hours=2)  # … and at least 2 hours


def evaluate(*, today: dt.date, change: SpendChange | None = None) -> list[AlertEvent]:
    """One event per account and condition start (finops.sources.selectors.account_status): a failing run (error, or
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
        # The error itself is said once, in the email's reason (finops.notify.alert_emails), not in the subject too.
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
