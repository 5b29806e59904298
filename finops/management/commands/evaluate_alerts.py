"""One evaluation now, then the sends it calls for (the beat does the same every 15 minutes)."""

from django.core.management.base import BaseCommand

from finops.alerts import evaluate as evaluations
from finops.management.arguments import utc_day
from finops.models import AlertEvent
from finops.notify.deliver import events_deliver_ids
from finops.tasks import deliver_alerts


class Command(BaseCommand):
    help = (
        "Evaluate every cap now and raise the alerts it calls for (each threshold once, however often this runs), "
        "then send what is due: through the notify queue when a broker is configured (REDIS_URL), inline when "
        "not. Prints each event raised and, when sent inline, each event sent."
    )

    def add_arguments(self, parser):
        parser.add_argument("--today", type=utc_day, default=None, help="Evaluate as of this UTC day (default: today).")

    def handle(self, *args, today=None, **options):
        raised = evaluations.alerts_evaluate(today=today)
        self.stdout.write(f"Raised {len(raised)} event(s).")
        for event in raised:
            self.stdout.write(f"  raised #{event.id} {event.kind}: {event.title}")
        if deliver_alerts.app.conf.task_always_eager:  # no broker (REDIS_URL unset): tasks run inline anyway
            sent = AlertEvent.objects.filter(id__in=events_deliver_ids()).order_by("id")
            self.stdout.write(f"Sent {len(sent)} event(s).")
            for event in sent:
                told = event.notifications.filter(status="sent").count()
                self.stdout.write(f"  sent #{event.id} {event.kind} to {told} recipient(s): {event.title}")
            waiting = AlertEvent.objects.filter(state=AlertEvent.State.FAILED).count()
            if waiting:
                self.stdout.write(f"{waiting} event(s) failed and will be retried (see /alerts/).")
        else:
            deliver_alerts.delay()
            self.stdout.write("Delivery queued on the notify queue (a worker sends; see /alerts/).")
