"""One run per account at a time, whoever triggers it: a lease row claimed with a conditional UPDATE.

The lease belongs to a run. The same run may take it back (a task redelivered after its worker was
killed); another run waits until it is released or has expired. Claims and releases commit at once
(they run outside the ingest transaction) so every worker sees them.
"""

import datetime as dt

from django.db import connection
from django.db.models import Q
from django.utils import timezone

from finops.models import Account

LEASE_DURATION = dt.timedelta(minutes=30)


class AccountBusy(Exception):
    def __init__(self, account_id: int, expires_at):
        super().__init__(f"another run holds account {account_id} until {expires_at:%Y-%m-%d %H:%M:%S} UTC")
        self.expires_at = expires_at


def lease_claim(*, account_id: int, run_id: int, duration: dt.timedelta = LEASE_DURATION) -> None:
    now = timezone.now()
    owner = str(run_id)
    claimed = (
        Account.objects.filter(id=account_id)
        .filter(Q(lease_expires_at__isnull=True) | Q(lease_expires_at__lte=now) | Q(lease_token=owner))
        .update(lease_token=owner, lease_expires_at=now + duration)
    )
    if claimed != 1:
        expires_at = Account.objects.filter(id=account_id).values_list("lease_expires_at", flat=True).first()
        raise AccountBusy(account_id, expires_at or now)


def lease_release(*, account_id: int, run_id: int) -> None:
    Account.objects.filter(id=account_id, lease_token=str(run_id)).update(lease_token="", lease_expires_at=None)


LOCK_NAMESPACE = 7301  # pg advisory lock key space of ingestion: (namespace, account id)


def account_write_lock(*, account_id: int) -> None:
    """Inside the run's transaction: a Postgres advisory lock that lives exactly as long as the transaction.

    The lease already keeps other runs away; this also stops two deliveries of the *same* run (a task
    redelivered while its first delivery still writes) from writing at once. A killed worker's lock
    goes with its connection. SQLite (the demo) runs one task at a time and needs none.
    """
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_xact_lock(%s, %s)", [LOCK_NAMESPACE, account_id])
        if not cursor.fetchone()[0]:
            raise AccountBusy(account_id, dt.datetime.now(dt.UTC))


RUN_LOCK_NAMESPACE = 7302  # pg advisory lock key space of executing runs: (namespace, run id)


class RunInProgress(AccountBusy):
    """Another delivery of this very run is executing it now (a task Redis handed out again after its visibility
    timeout, or queued again after a lost message): this one must not run it in parallel."""

    def __init__(self, account_id: int, run_id: int):
        Exception.__init__(self, f"run {run_id} is being executed by another worker")
        self.expires_at = None


def run_lock(*, account_id: int, run_id: int) -> None:
    """A session-level Postgres advisory lock held for as long as one delivery executes the run.

    Why on top of the lease: the lease lets the same run take it back (that is how a task redelivered after its
    worker was killed resumes), so it cannot tell a dead first delivery from a live one. The lock can: it lives on
    the executing worker's connection and goes with it — a worker killed or cut off from Postgres loses it at once,
    a live one keeps it. Found by tests/integration/test_faults_visibility.py: with a visibility timeout shorter
    than a pull, a second worker fetched the whole window again in parallel and wrote it a second time.
    Raises RunInProgress when another live delivery holds it. Released by run_unlock (or with the connection).
    """
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [RUN_LOCK_NAMESPACE, run_id])
        if not cursor.fetchone()[0]:
            raise RunInProgress(account_id, run_id)


def run_unlock(*, run_id: int) -> None:
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [RUN_LOCK_NAMESPACE, run_id])
