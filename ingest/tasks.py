"""Thin Celery tasks: run IDs in, a service call, typed retries (docs/architecture.md habits).

Tasks are acks_late, so a task whose worker dies is delivered again and its run resumes: the run's
writes were one transaction that died with the worker, and the lease belongs to the run, so the
redelivered task takes it straight back.

Inline tasks (no REDIS_URL: CELERY_TASK_ALWAYS_EAGER, the demo and the tests) have no worker to run a
retry later: Celery would raise its `Retry` into whoever queued the task (a page, an API call) and the run
would stay "queued" for ever. So an inline attempt is always the final one: a transient failure ends the
run as failed with its message, a busy account fails the run saying which run holds it, and the caller
reads the run's outcome once its transaction has committed (ingest.services.sync_now).
"""

import random

from celery import shared_task
from django.db import connection

from finops.models import IngestRun
from ingest.connectors.base import ProviderError

from .http import HttpClient
from .lease import AccountBusy

RETRY_BACKOFF_MAX = 15 * 60


def _countdown(retries: int) -> int:
    """Exponential backoff with full jitter, capped: many accounts failing at once do not retry in step."""
    return random.randint(1, min(RETRY_BACKOFF_MAX, 30 * 2**retries))


def _database_countdown(retries: int) -> int:
    """A database restart or failover takes seconds: retry soon (1–5 s, then up to 10 s, 20 s …), with jitter."""
    return random.randint(1, min(RETRY_BACKOFF_MAX, 5 * 2**retries))


def _database_gone(task, error: Exception):
    """The database went away before or after the run's own handling (ingest.services._database_lost): drop the
    broken connection and retry; Celery's own default would be to fail the task and forget the run."""
    if not connection.in_atomic_block:
        connection.close()
    return task.retry(countdown=_database_countdown(task.request.retries), exc=error)


def _inline(task) -> bool:
    """Whether this attempt runs inside the caller's process (eager), where nothing can be retried later."""
    return bool(task.request.is_eager)


def _inline_client() -> HttpClient:
    """An inline pull has someone waiting on the page: two quick attempts, not a worker's patient minutes."""
    return HttpClient(timeout=15, max_attempts=2, backoff_max=5)


@shared_task(bind=True, acks_late=True, max_retries=6, queue="ingest")
def run_sync(self, run_id: int) -> str:
    from . import services  # tasks import services inside their bodies; services import tasks (HackSoft)
    from .services import DATABASE_LOST, DatabaseLost

    if _inline(self):
        return services.run_sync(run_id=run_id, client=_inline_client(), final_attempt=True, wait_if_busy=False).status
    try:
        run = services.run_sync(run_id=run_id, final_attempt=self.request.retries >= self.max_retries)
    except AccountBusy as busy:
        raise self.retry(countdown=_countdown(self.request.retries), exc=busy) from None
    except ProviderError as error:  # transient, with attempts left: the run waits, saying why
        raise self.retry(countdown=_countdown(self.request.retries), exc=error) from None
    except (DatabaseLost, *DATABASE_LOST) as error:
        raise _database_gone(self, error) from None
    return run.status


@shared_task(bind=True, acks_late=True, max_retries=6, queue="ingest")
def run_import(self, run_id: int) -> str:
    from . import services
    from .services import DATABASE_LOST, DatabaseLost

    if _inline(self):
        return services.run_import(run_id=run_id, wait_if_busy=False).status
    try:
        run = services.run_import(run_id=run_id, final_attempt=self.request.retries >= self.max_retries)
    except AccountBusy as busy:
        raise self.retry(countdown=_countdown(self.request.retries), exc=busy) from None
    except (DatabaseLost, *DATABASE_LOST) as error:
        raise _database_gone(self, error) from None
    return run.status


@shared_task(queue="ingest")
def dispatch_due_syncs() -> int:
    """Beat, every 5 minutes: queue a pull for each enabled API account whose interval has passed, and again the
    runs whose task was lost (ingest.schedule.schedule_dispatch: one dispatch at a time, whoever sent it)."""
    from .schedule import schedule_dispatch

    runs, lost = schedule_dispatch()
    return len(runs) + len(lost)


def enqueue(run: IngestRun) -> None:
    task = run_import if run.trigger == IngestRun.Trigger.UPLOAD else run_sync
    task.delay_on_commit(run.id)


@shared_task(queue="ingest")
def prune_uploads() -> int:
    """Beat: delete uploaded files past their retention (ingest/uploads.py)."""
    from .uploads import uploads_prune

    return uploads_prune()


@shared_task(queue="ingest")
def prune_usage_lines() -> int:
    """Beat, daily: delete raw usage lines past FINOPS_USAGE_RETENTION_MONTHS in small batches (ingest/retention.py)."""
    from .retention import usage_lines_prune

    return usage_lines_prune().deleted
