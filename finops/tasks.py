"""Thin Celery tasks of the finops app: IDs in, a service call."""

from celery import shared_task


@shared_task(bind=True, acks_late=True, max_retries=3, queue="rollup")
def reattribute(self, job_id: int) -> str:
    from finops.spend.services import rules

    return rules.reattribution_run(job_id=job_id).status


@shared_task(acks_late=True, queue="notify", expires=3600)
def evaluate_alerts(**change) -> int:
    """After a "spend changed" signal (finops.alerts.services.spend_changes), or on the beat with no arguments: raise
    the events the change calls for, then queue their delivery. Returns how many events were raised."""
    from finops.alerts import evaluate as evaluations
    from finops.alerts.services.spend_changes import SpendChange

    raised = evaluations.alerts_evaluate(change=SpendChange.from_task_kwargs(**change) if change else None)
    if raised:
        deliver_alerts.delay()
    return len(raised)


@shared_task(acks_late=True, queue="notify", expires=3600)
def deliver_alerts() -> int:
    """Send every event that is due (new, or failed and due for a retry); each claimed once (finops.notify)."""
    from finops.notify.deliver import events_deliver

    return events_deliver()


@shared_task(acks_late=True, queue="notify", expires=3600)
def send_reports() -> int:
    """The monthly TCO report: on or after each subscription's day, last month's report once
    (finops.notify.report_deliveries); failed sends retried when due. Returns how many emails this run sent."""
    from finops.notify.report_deliveries import reports_send

    return len(reports_send())
