"""Thin Celery tasks of the finops app: IDs in, a service call."""

from celery import shared_task

from finops.services import rules


@shared_task(bind=True, acks_late=True, max_retries=3, queue="rollup")
def reattribute(self, job_id: int) -> str:
    return rules.reattribution_run(job_id=job_id).status
