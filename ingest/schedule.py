"""The schedule: the beat's dispatch of due pulls, and its repairs after faults (lost task messages, runs a dead
worker left `running`). Every function here is idempotent, and the dispatch runs one at a time."""

import datetime as dt
import logging

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from finops.models import Account, IngestRun
from finops.sources.models import API_CONNECTORS

from . import tasks  # services import tasks; tasks import services inside their bodies
from .lease import LEASE_DURATION
from .services import run_create
from .windows import chunks, scheduled_window

log = logging.getLogger(__name__)


DISPATCH_LOCK = (7303, 0)  # pg advisory lock: one schedule dispatch at a time, whichever beat sent it


def schedule_dispatch(*, now: dt.datetime | None = None) -> tuple[list[IngestRun], list[IngestRun]]:
    """The beat's dispatch (ingest.tasks.dispatch_due_syncs): queue the due pulls, queue again the runs whose task
    was lost, fail the runs a dead worker abandoned. Returns (new runs, runs queued again).

    One dispatch at a time: two beat processes started by mistake send every tick twice, and two workers ran both
    dispatches at once — each saw no pending run for an account and created its own runs for the same window, so
    the provider was pulled twice and the window written twice (tests/integration/test_faults_two_beats.py). The
    dispatch now holds a transaction-level advisory lock and creates its runs in that transaction: a dispatch that
    finds the lock taken does nothing (the other is doing the same work), and one that comes after sees the runs
    the first committed as pending. Tasks are sent once the transaction has committed (delay_on_commit).
    """
    now = now or timezone.now()
    with transaction.atomic():
        if not _dispatch_lock():
            log.info("another schedule dispatch is running; this one leaves it the work")
            return [], []
        runs = due_sync_runs(now=now)
        lost = runs_lost(now=now)
        for run in [*runs, *lost]:
            tasks.enqueue(run)
    runs_abandoned_fail(now=now)
    return runs, lost


def _dispatch_lock() -> bool:
    if connection.vendor != "postgresql":
        return True  # SQLite (the demo) runs tasks inline, one at a time
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_xact_lock(%s, %s)", list(DISPATCH_LOCK))
        return cursor.fetchone()[0]


def due_sync_runs(*, now: dt.datetime | None = None) -> list[IngestRun]:
    """Queue runs for every enabled API account whose interval has passed and that has no run pending."""
    now = now or timezone.now()
    pending = IngestRun.objects.filter(status__in=[IngestRun.Status.QUEUED, IngestRun.Status.RUNNING]).values(
        "account_id"
    )
    accounts = (
        Account.objects.filter(enabled=True, connector__in=[c.value for c in API_CONNECTORS])
        .exclude(credentials_ciphertext="")
        .exclude(id__in=pending)
    )
    runs = []
    for account in accounts:
        interval = dt.timedelta(minutes=account.sync_interval_minutes)
        if account.last_sync_at is not None and account.last_sync_at + interval > now:
            continue
        start, end = scheduled_window(now=now, last_success_at=account.last_success_at)
        trigger = IngestRun.Trigger.BACKFILL if account.last_success_at is None else IngestRun.Trigger.SCHEDULE
        runs += [run_create(account=account, trigger=trigger, window=piece) for piece in chunks(start, end)]
    return runs


def runs_lost(*, now: dt.datetime | None = None) -> list[IngestRun]:
    """Runs still `queued` FINOPS_INGEST_REQUEUE_SECONDS (default 20 minutes) after they were created or last
    attempted: their task message is presumed lost, and they are queued again.

    Found by tests/integration/test_faults_redis.py: a Redis restarted without persistence (or a failover to a
    replica that had not yet received them) drops the queued messages, and their runs stayed `queued` for ever —
    worse, due_sync_runs skips an account with a pending run, so the account was never pulled again. Queuing a run
    twice is harmless: a run that has succeeded is not run again, and two deliveries never run it at once
    (run_lock). The default is above the longest retry countdown (15 minutes, ingest/tasks.py), so a run waiting
    for its retry is not sent again before its time.
    """
    now = now or timezone.now()
    before = now - dt.timedelta(seconds=settings.FINOPS_INGEST_REQUEUE_SECONDS)
    queued = IngestRun.objects.filter(status=IngestRun.Status.QUEUED)
    lost = queued.filter(started_at__isnull=True, created_at__lt=before) | queued.filter(started_at__lt=before)
    runs = list(lost.exclude(trigger=IngestRun.Trigger.UPLOAD, upload="").select_related("account").order_by("id"))
    for run in runs:
        log.warning(
            "ingest run %s for account %s has been queued since %s: its task was lost; queued again",
            run.id,
            run.account_id,
            (run.started_at or run.created_at).isoformat(timespec="seconds"),
        )
    return runs


def runs_abandoned_fail(*, now: dt.datetime | None = None) -> int:
    """Runs left `running` by a worker that died and whose lease has since lapsed: say so on the run.

    Lapsed means released or taken by another run, or expired while still naming the run: a run that lost its
    database and could not even release its lease (ingest/services.py, _database_lost) keeps its name on the
    lease until it expires, and was left `running` for ever before this condition was added.
    """
    now = now or timezone.now()
    stale = IngestRun.objects.filter(status=IngestRun.Status.RUNNING, started_at__lt=now - LEASE_DURATION)
    abandoned = [
        run.id
        for run in stale.select_related("account")
        if run.account.lease_token != str(run.id)
        or run.account.lease_expires_at is None
        or run.account.lease_expires_at <= now
    ]
    return IngestRun.objects.filter(id__in=abandoned).update(
        status=IngestRun.Status.FAILED,
        finished_at=now,
        error="The worker stopped during this run (killed, restarted or cut off from the database); nothing it "
        "read was kept. The next pull reads the window again.",
    )
