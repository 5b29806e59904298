from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from finops.models import ReportSubscription
from finops.notify.report_deliveries import delivery_preview, next_delivery, send_now


class Command(BaseCommand):
    help = (
        "Preview the report email a subscriber would get now for last month — the monthly email, or the 'restated' "
        "one when a later version differs from the one they were sent — rendered by the same function that sends it. "
        "--output writes the message as sent (.eml: headers, text, HTML, the PDF); --send sends it now, through the "
        "same delivery rows and attempts as the hourly schedule, so it is never sent twice."
    )

    def add_arguments(self, parser):
        parser.add_argument("--to", required=True, help="The subscription's email address.")
        parser.add_argument("--output", default="", help="Write the message (RFC 5322, .eml) to this file.")
        parser.add_argument("--send", action="store_true", help="Send it now.")

    def handle(self, *args, to, output, send, **options):
        subscription = ReportSubscription.objects.filter(email__iexact=to.strip()).select_related("user").first()
        if subscription is None:
            raise CommandError(f"No subscription for {to}: add it on Reports → Emailed monthly: subscriptions.")
        now = timezone.now()
        delivery, what = next_delivery(subscription, now)
        self.stdout.write(what)
        if delivery is None:
            return
        message = delivery_preview(delivery).message()
        self.stdout.write("Subject: " + " ".join(str(message["Subject"]).split()))
        if output:
            path = Path(output)
            if not path.parent.is_dir():
                raise CommandError(f"{path.parent} is not a directory.")
            path.write_bytes(message.as_bytes())
            self.stdout.write(f"Wrote {path}")
        if send:
            if not subscription.active:
                raise CommandError(f"{subscription.email} has unsubscribed: reactivate it first.")
            sent = send_now(subscription, now)
            self.stdout.write(
                f"Sent {len(sent)} email(s) to {subscription.email}."
                if sent
                else "Nothing was sent: see the delivery's attempts on the subscriptions page."
            )
