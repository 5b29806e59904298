"""Ingestion runs: claim the account, read a file or an API window, write it all or nothing, say what happened.

Every run is an IngestRun row the Sources page shows. A run holds its account's lease (ingest/lease.py)
and writes in one transaction (ingest/writing.py), so a failed or killed run leaves earlier data as it
was, and the run and the account both say why it failed.
"""

import datetime as dt
import logging
from collections.abc import Callable
from decimal import Decimal
from typing import TypeVar

import psycopg
from django.core.files.base import File
from django.db import DataError, InterfaceError, OperationalError, connection, transaction
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerDown

from finops.alerts.services.spend_changes import spend_changed
from finops.core.crypto import CredentialError
from finops.core.logs import log_context
from finops.core.modelids import normalise_model
from finops.models import Account, IngestRun
from finops.prices.fx import MissingFxRate
from finops.prices.selectors import PriceBook, Tokens, cost_from_price
from finops.sources.models import API_CONNECTORS
from finops.sources.services.accounts import account_credentials
from finops.spend.services.attribution import attribution_lock
from ingest.connectors.base import BatchDeclined, ProviderError, UsageRow, token_weight
from ingest.connectors.focus.scope import LeftOut, Scope
from ingest.connectors.registry import api_source_for, file_source_for

from . import tasks  # services import tasks; tasks import services inside their bodies (HackSoft)
from .columnar import write_batches
from .columnar_gateway import write_gateway_lines
from .http import HttpClient
from .lease import (
    AccountBusy,
    RunInProgress,
    account_write_lock,
    lease_claim,
    lease_release,
    run_lock,
    run_unlock,
)
from .lines import IngestError
from .memory import freed_memory_release
from .uploads import upload_check
from .windows import WindowRefused, chunks, scheduled_window, window_check
from .writing import WriteResult, write_rows

log = logging.getLogger(__name__)
T = TypeVar("T")

# Failures that end a run with their message shown as it is: what a bad input or a provider raises (a bug, such as
# a KeyError, is not one of them: it surfaces as an error, not as a failed run blaming the file). DataError: a
# value the columns cannot hold.
RUN_FAILURES = (ProviderError, IngestError, MissingFxRate, DataError, psycopg.DataError, CredentialError)
# The database went away under the run (a cut connection, a restart, a failover): nothing the run wrote was kept
# (its write is one transaction), so it is retried, or ends failed saying so (DatabaseLost).
# psycopg's own errors too: the writer's COPY runs on psycopg's cursor, outside Django's error wrapping, so a
# connection cut mid-COPY raises psycopg.OperationalError (found by test_faults_postgres.py's inline cut).
DATABASE_LOST = (OperationalError, InterfaceError, psycopg.OperationalError, psycopg.InterfaceError)


class DatabaseLost(Exception):
    """The run lost its database connection; with attempts left the task retries it (ingest/tasks.py)."""


# Failures of the reading itself, whose message alone would not say what happened.
READ_FAILURES = {
    OverflowError: "a number or date in it is out of range",
    MemoryError: "it needs more memory than the server has for one import; split it",
    RecursionError: "it nests data too deeply to read",
}


def run_create(*, account: Account, trigger: str, window=None, file_name: str = "", upload=None) -> IngestRun:
    start, end = window or (None, None)
    run = IngestRun(account=account, trigger=trigger, window_start=start, window_end=end, file_name=file_name)
    if upload is not None:
        run.upload.save(file_name, File(upload), save=False)
    run.save()
    return run


# --- files ---


def usage_file_import(
    *, account: Account, stream, file_name: str, trigger: str = IngestRun.Trigger.UPLOAD
) -> IngestRun:
    """Import one export file now, in this process. Returns the run; its status says whether it succeeded."""
    run = run_create(account=account, trigger=trigger, file_name=file_name)
    return _execute(run, read=lambda: stream, write=lambda stream: _parse_and_write(run, stream), wait_if_busy=False)


def usage_upload_accept(*, account: Account, upload, file_name: str) -> IngestRun:
    """Keep an uploaded file and queue its import for a worker (the Sources page and the API). Raises
    UploadRefused for a file the upload policy refuses (ingest/uploads.py), before anything is stored."""
    upload_check(upload)
    run = run_create(account=account, trigger=IngestRun.Trigger.UPLOAD, file_name=file_name, upload=upload)
    tasks.enqueue(run)
    return run


def run_import(*, run_id: int, wait_if_busy: bool = True, final_attempt: bool = True) -> IngestRun:
    run = IngestRun.objects.select_related("account__provider").get(id=run_id)
    if run.status == IngestRun.Status.SUCCEEDED:
        return run  # a redelivered task after the work committed: nothing to do again

    def write(upload):
        with upload.open("rb") as stream:
            return _parse_and_write(run, stream)

    return _execute(run, read=lambda: run.upload, write=write, final_attempt=final_attempt, wait_if_busy=wait_if_busy)


def _parse_and_write(run: IngestRun, stream) -> WriteResult:
    try:
        source = file_source_for(run.account.connector)
        # A FOCUS file: only the rows the account's scope keeps; what it left out is said on the run.
        left_out = LeftOut()
        scoped = (
            {"scope": Scope.for_account(run.account), "left_out": left_out} if getattr(source, "scoped", False) else {}
        )
        if _batch_path_open(source, stream):
            try:
                with transaction.atomic():  # a savepoint: a declined file leaves nothing of the attempt
                    if hasattr(source, "parse_lines"):  # a gateway log: its hourly lines as columns
                        lines = source.parse_lines(stream, file_name=run.file_name)
                        freed_memory_release()  # the reader's working set, before the writer allocates its own
                        return _with_left_out(write_gateway_lines(account=run.account, run=run, lines=lines), left_out)
                    batches = source.parse_batches(stream, file_name=run.file_name, **scoped)
                    return _with_left_out(write_batches(account=run.account, run=run, batches=batches), left_out)
            except BatchDeclined as declined:
                log.info("run %s: %s read row by row (%s)", run.id, run.file_name, declined)
                stream.seek(0)
                if hasattr(source, "parse_lines"):
                    scoped["columns"] = False  # what the column path declined is read record by record
        rows = source.parse(stream, file_name=run.file_name, **scoped)
        granularity = getattr(source, "replace_granularity", "day")
        return _with_left_out(write_rows(account=run.account, run=run, rows=rows, granularity=granularity), left_out)
    except UnicodeDecodeError:
        raise IngestError(f"{run.file_name}: not UTF-8 text") from None


def _with_left_out(result: WriteResult, left_out: LeftOut) -> WriteResult:
    result.left_out = left_out.as_json()
    return result


def _batch_path_open(source, stream) -> bool:
    """Columns for speed where the source reads them, on Postgres, from a file that can be read again."""
    if not (hasattr(source, "parse_batches") or hasattr(source, "parse_lines")) or connection.vendor != "postgresql":
        return False
    try:
        return stream.seekable() and stream.tell() == 0
    except (AttributeError, OSError, ValueError):
        return False


# --- API pulls ---


def sync_request(
    *, account: Account, start: dt.datetime | None = None, end: dt.datetime | None = None
) -> list[IngestRun]:
    """ "Sync now" (page and API): queue runs for the window given, or the account's scheduled window."""
    if account.connector not in API_CONNECTORS:
        raise IngestError(f"{account.name} is filled from files (connector {account.connector}); upload a file instead")
    if not account.enabled:
        raise IngestError(f"{account.name} is disabled; replace its key and enable it first")
    if start is None or end is None:
        start, end = scheduled_window(now=timezone.now(), last_success_at=account.last_success_at)
    else:
        _window_allowed(start, end)
    _queue_reachable()
    runs = [run_create(account=account, trigger=IngestRun.Trigger.MANUAL, window=piece) for piece in chunks(start, end)]
    for run in runs:
        tasks.enqueue(run)
    return runs


class QueueUnavailable(IngestError):
    """The task queue (Redis) cannot be reached: no run was created."""


def _queue_reachable() -> None:
    """Before creating runs only a worker will pull: with the broker down they would stay queued, and the request
    that asked for them fail (issue 26). A broker lost between this check and the publish leaves its runs to the
    dispatch that re-queues lost runs (FINOPS_INGEST_REQUEUE_SECONDS)."""
    app = tasks.run_sync.app
    if app.conf.task_always_eager:
        return
    try:
        with app.connection_for_write() as broker:
            broker.ensure_connection(max_retries=1, interval_start=0, timeout=2)
    except (BrokerDown, OSError):
        raise QueueUnavailable(
            "the task queue (Redis) cannot be reached, so nothing was queued; try again once it "
            "is back, or pull in the foreground with `manage.py sync`"
        ) from None


def _window_allowed(start: dt.datetime, end: dt.datetime) -> None:
    try:
        window_check(start, end, now=timezone.now())
    except WindowRefused as refused:
        raise IngestError(f"Sync refused: {refused}") from None


def sync_now(*, account: Account, start: dt.datetime | None = None, end: dt.datetime | None = None) -> list[IngestRun]:
    """sync_request in a transaction of its own, then its runs as they stand once it has committed.

    With a worker they are still queued; with tasks inline (the demo) they have run, so the caller can say
    how they ended. Raises IngestError when the account cannot be pulled (a file account, disabled).
    """
    with transaction.atomic():
        runs = sync_request(account=account, start=start, end=end)
    return list(IngestRun.objects.filter(id__in=[run.id for run in runs]).order_by("window_start", "id"))


def account_sync(
    *, account: Account, start: dt.datetime, end: dt.datetime, trigger: str = IngestRun.Trigger.MANUAL, client=None
) -> list[IngestRun]:
    """Pull [start, end) now, in this process, one run per chunk the API accepts (the `sync` command)."""
    _window_allowed(start, end)
    runs = [run_create(account=account, trigger=trigger, window=piece) for piece in chunks(start, end)]
    return [run_sync(run_id=run.id, client=client, wait_if_busy=False) for run in runs]


def run_sync(
    *, run_id: int, client: HttpClient | None = None, final_attempt: bool = True, wait_if_busy: bool = True
) -> IngestRun:
    run = IngestRun.objects.select_related("account__provider").get(id=run_id)
    if run.status == IngestRun.Status.SUCCEEDED:
        return run
    account = run.account

    def fetch() -> list[UsageRow]:
        # Every page is read here, before the write transaction and its locks: a provider's retries and
        # Retry-After waits hold nothing, so a rule change never waits on them. One chunk of one account's
        # daily lines (windows.chunks) is small enough to hold.
        if not account.enabled:
            raise IngestError(f"account {account.name} is disabled; enable it (after fixing its key) to pull again")
        source = api_source_for(account.connector)
        return list(
            source.fetch(
                client=client or HttpClient(),
                base_url=(account.base_url or source.default_base_url).rstrip("/"),
                secret=account_credentials(account=account),
                start=run.window_start,
                end=run.window_end,
                weigh=PriceWeigher(account),
            )
        )

    def write(rows: list[UsageRow]) -> WriteResult:
        return write_rows(account=account, run=run, rows=rows, window=(run.window_start, run.window_end))

    return _execute(run, read=fetch, write=write, final_attempt=final_attempt, wait_if_busy=wait_if_busy)


class PriceWeigher:
    """An API row's value at list price, the weight a billed amount is split by (allocation.py).

    Rows with no list price weigh their tokens at a nominal $1/M, so a group of unpriced rows of one
    model still splits by tokens.
    """

    NOMINAL = Decimal(1)

    def __init__(self, account: Account):
        # Loaded before the pull starts: rows are weighed while the writer's COPY holds the connection.
        self.book = PriceBook.for_provider(account.provider)

    def __call__(self, row: UsageRow) -> Decimal:
        price = self.book.price_on(normalise_model(row.model_raw), row.period_start.astimezone(dt.UTC).date())
        if price is None:
            return token_weight(row) * self.NOMINAL / 1_000_000
        tokens = Tokens(row.input_tokens, row.cached_input_tokens, row.cache_write_tokens, row.output_tokens)
        return cost_from_price(price, tokens, batch=row.service_tier.lower() == "batch")


# --- the run lifecycle ---


def _execute(
    run: IngestRun,
    *,
    read: Callable[[], T],
    write: Callable[[T], WriteResult],
    final_attempt: bool = True,
    wait_if_busy: bool,
) -> IngestRun:
    """One run, step by step (docs/architecture.md data flow):

    0. take the run lock (ingest/lease.py, run_lock): another live delivery of this same run is executing it →
       this delivery waits for a retry and never runs it in parallel;
    1. claim the account's lease (another run of it holds it: wait for a retry, or say so and stop);
    2. read: an API pull fetches all its pages, outside any transaction or lock; a file is opened here and parsed
       as it is written (streamed into the COPY: an export is never held whole in memory);
    3. write, in one transaction under the account's write lock and the attribution lock (shared): COPY the lines,
       delete what they replace;
    4. roll up exactly the days written or replaced (write_rows / write_batches, in that transaction);
    5. signal: spend changed for those days and this account, sent only when the transaction commits.
    A failure at any step rolls back steps 3–5: the run and its account say why, and nothing is signalled.
    The database lost at any step: see _database_lost.

    Every log line written meanwhile, by any module, carries the run id, account and window (finops/core/logs.py).
    """
    context = {
        "run_id": run.id,
        "account_id": run.account_id,
        "account": run.account.name,
        "window_start": run.window_start,
        "window_end": run.window_end,
        "file": run.file_name or None,
    }
    with log_context(**context):
        log.info("ingest run %s started (%s)", run.id, run.trigger)
        try:
            run_lock(account_id=run.account_id, run_id=run.id)
        except RunInProgress as busy:
            log.info("ingest run %s: %s; this delivery leaves it be", run.id, busy)
            if wait_if_busy:
                raise
            return run
        try:
            return _execute_locked(run, read=read, write=write, final_attempt=final_attempt, wait_if_busy=wait_if_busy)
        except DATABASE_LOST as error:
            return _database_lost(run, error, final_attempt=final_attempt)
        finally:
            try:
                run_unlock(run_id=run.id)
            except DATABASE_LOST:
                pass  # the connection that held the lock is gone, and the lock with it


def _execute_locked(
    run: IngestRun, *, read: Callable[[], T], write: Callable[[T], WriteResult], final_attempt: bool, wait_if_busy: bool
) -> IngestRun:
    if not _claim(run, wait_if_busy):
        return run
    release = True
    try:
        run.status, run.started_at, run.error = IngestRun.Status.RUNNING, timezone.now(), ""
        run.save(update_fields=["status", "started_at", "error"])
        try:
            fetched = read()
            with transaction.atomic():
                account_write_lock(account_id=run.account_id)
                attribution_lock(shared=True)  # before the rules are loaded: a rule change waits for this run
                result = write(fetched)
                spend_changed(days=result.days, reason="ingest", account_ids=[run.account_id])
        except AccountBusy as busy:
            release = False  # another delivery of this very run holds the lease and is writing: leave it be
            return _busy(run, busy, wait_if_busy)
        except ProviderError as error:
            if error.reason == "auth":
                Account.objects.filter(id=run.account_id).update(enabled=False)
            if not error.permanent and not final_attempt:
                run.status, run.error = IngestRun.Status.QUEUED, f"{error} — will retry"
                run.save(update_fields=["status", "error"])
                raise
            _finish(run, error=str(error))
        except RUN_FAILURES as error:
            _finish(run, error=str(error))
        except tuple(READ_FAILURES) as error:
            _finish(run, error=_read_failure(run, error))
        else:
            _finish(run, result=result)
    except DATABASE_LOST:
        release = False  # the lease cannot be released on a dead connection: _database_lost does it on a new one
        raise
    finally:
        if release:
            lease_release(account_id=run.account_id, run_id=run.id)
    return run


DATABASE_LOST_MESSAGE = "The database connection was lost during the run ({error}); nothing it wrote was kept."


def _database_lost(run: IngestRun, error: Exception, *, final_attempt: bool) -> IngestRun:
    """The connection broke under the run (found by tests/integration/test_faults_postgres.py).

    Before: the OperationalError escaped the run, the `finally` tried to release the lease on the dead connection
    and failed, the task was not retried (only provider errors and a busy account were), and the run stayed
    `running` holding its account's lease: ingest.schedule.runs_abandoned_fail never touched it (its lease still named
    it) and
    due_sync_runs never pulled the account again (it had a pending run). Now: the broken connection is dropped,
    and on a new one the lease is released and the run is marked — queued to be retried (DatabaseLost, which
    the task retries after a short backoff) or, on the final attempt, failed with the reason. Nothing of the
    run's write is kept either way (one transaction), so the retry writes the window whole. When the database
    is still unreachable the bookkeeping waits too: the retry (same run) takes its own lease back, and a run
    left behind is failed by runs_abandoned_fail once its lease has lapsed.
    """
    reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    log.warning("ingest run %s lost its database connection: %s", run.id, reason)
    if not connection.in_atomic_block:
        connection.close()  # a broken connection is not reused: the next query opens a new one
    try:
        lease_release(account_id=run.account_id, run_id=run.id)
        # Only a run still marked running: the connection may have broken after the run was settled (releasing
        # the lease of a run that had succeeded), and a succeeded run must stay succeeded (found by the same test:
        # a worker stopped right after a run's success had it queued again).
        unsettled = IngestRun.objects.filter(id=run.id, status=IngestRun.Status.RUNNING)
        if not unsettled.exists():
            run.refresh_from_db()
            return run
        if final_attempt:
            _finish(run, error=DATABASE_LOST_MESSAGE.format(error=reason) + " The next pull reads the window again.")
        else:
            run.status, run.error = IngestRun.Status.QUEUED, DATABASE_LOST_MESSAGE.format(error=reason) + " Will retry."
            unsettled.update(status=run.status, error=run.error)
    except DATABASE_LOST as still:
        log.warning("ingest run %s: the database is still unreachable (%s); the retry will take over", run.id, still)
        if not connection.in_atomic_block:
            connection.close()
        if final_attempt:
            raise DatabaseLost(reason) from error
    if not final_attempt:
        raise DatabaseLost(reason) from error
    return run


def _read_failure(run: IngestRun, error: BaseException) -> str:
    meaning = next(text for kind, text in READ_FAILURES.items() if isinstance(error, kind))
    detail = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    return f"{run.file_name or 'the pull'}: {meaning} ({detail})"


def _claim(run: IngestRun, wait_if_busy: bool) -> bool:
    """Take the account's lease for this run; False when another run holds it (the run says so, or a retry waits)."""
    try:
        lease_claim(account_id=run.account_id, run_id=run.id)
    except AccountBusy as busy:
        _busy(run, busy, wait_if_busy)
        return False
    return True


def _busy(run: IngestRun, busy: AccountBusy, wait_if_busy: bool) -> IngestRun:
    """The account is being written by another run (or delivery): wait for a retry, or say so and stop."""
    if wait_if_busy:
        IngestRun.objects.filter(id=run.id).update(error=f"Waiting: {busy}")
        raise busy
    _finish(run, error=f"Not started: {busy}. Try again when it has finished.")
    return run


def _finish(run: IngestRun, *, result: WriteResult | None = None, error: str = "") -> None:
    now = timezone.now()
    run.status = IngestRun.Status.FAILED if error else IngestRun.Status.SUCCEEDED
    run.error, run.finished_at = error, now
    if result is not None:
        run.lines_read, run.lines_written, run.lines_replaced = result.read, result.written, result.replaced
        run.left_out = result.left_out
        if result.windows and run.window_start is None:
            run.window_start, run.window_end = result.windows[0][0], result.windows[-1][1]
    else:
        run.lines_written = run.lines_replaced = 0
        run.left_out = {}
    run.save()
    if error:
        log.warning("ingest run %s for account %s failed: %s", run.id, run.account_id, error)
        Account.objects.filter(id=run.account_id).update(last_sync_at=now, last_error=error, last_error_at=now)
    else:
        log.info(
            "ingest run %s succeeded: %s lines read, %s written, %s replaced%s",
            run.id,
            run.lines_read,
            run.lines_written,
            run.lines_replaced,
            f"; {run.left_out_summary}" if run.left_out else "",
        )
        Account.objects.filter(id=run.account_id).update(last_sync_at=now, last_success_at=now, last_error="")
