"""Thin Celery tasks: run IDs in, a service call, typed retries (DESIGN.md habits).

Tasks are acks_late, so a task whose worker dies is delivered again and its run resumes: the run's
writes were one transaction that died with the worker, and the lease belongs to the run, so the
redelivered task takes it straight back.
"""

import random

from celery import shared_task

from finops.models import IngestRun

from . import services
from .lease import AccountBusy
from .providers.base import ProviderError

RETRY_BACKOFF_MAX = 15 * 60


def _countdown(retries: int) -> int:
    """Exponential backoff with full jitter, capped: many accounts failing at once do not retry in step."""
    return random.randint(1, min(RETRY_BACKOFF_MAX, 30 * 2**retries))


@shared_task(bind=True, acks_late=True, max_retries=6, queue="ingest")
def sync_run(self, run_id: int) -> str:
    try:
        run = services.run_sync(run_id=run_id, final_attempt=self.request.retries >= self.max_retries)
    except AccountBusy as busy:
        raise self.retry(countdown=_countdown(self.request.retries), exc=busy) from None
    except ProviderError as error:  # transient, with attempts left: the run waits, saying why
        raise self.retry(countdown=_countdown(self.request.retries), exc=error) from None
    return run.status


@shared_task(bind=True, acks_late=True, max_retries=6, queue="ingest")
def import_run(self, run_id: int) -> str:
    try:
        run = services.run_import_upload(run_id=run_id)
    except AccountBusy as busy:
        raise self.retry(countdown=_countdown(self.request.retries), exc=busy) from None
    return run.status


@shared_task(queue="ingest")
def dispatch_due_syncs() -> int:
    """Beat, every 5 minutes: queue a pull for each enabled API account whose interval has passed."""
    runs = services.due_sync_runs()
    for run in runs:
        sync_run.delay_on_commit(run.id)
    services.runs_abandoned_fail()
    return len(runs)


def enqueue(run: IngestRun) -> None:
    task = import_run if run.trigger == IngestRun.Trigger.UPLOAD else sync_run
    task.delay_on_commit(run.id)
