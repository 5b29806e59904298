import datetime as dt

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from finops.models import Account, IngestRun
from finops.sources.models import API_CONNECTORS
from ingest.lines import IngestError
from ingest.services import account_sync
from ingest.windows import scheduled_window


def _day(text: str) -> dt.datetime:
    try:
        return dt.datetime.combine(dt.date.fromisoformat(text), dt.time(), tzinfo=dt.UTC)
    except ValueError:
        raise CommandError(f"{text!r} is not a date in YYYY-MM-DD form") from None


class Command(BaseCommand):
    help = (
        "Pull usage and cost from API accounts now, in this process. Without --start/--end each account reads "
        "its scheduled window (3-day lookback, month to date on the first pull of a day, 90 days when new). "
        "--end is exclusive. Exits non-zero if any run failed."
    )

    def add_arguments(self, parser):
        parser.add_argument("--account", help="Only this account (by name).")
        parser.add_argument("--start", type=_day, help="First UTC day to read (YYYY-MM-DD).")
        parser.add_argument("--end", type=_day, help="UTC day after the last one to read (exclusive).")

    def handle(self, *args, account, start, end, **options):
        if (start is None) != (end is None):
            raise CommandError("give both --start and --end, or neither")
        if start is not None and end <= start:
            raise CommandError("--end must be after --start (it is exclusive)")
        accounts = Account.objects.filter(connector__in=[c.value for c in API_CONNECTORS]).select_related("provider")
        if account:
            accounts = accounts.filter(name=account)
            if not accounts:
                raise CommandError(f"No API account named {account!r} (file accounts are filled with import_usage).")
        else:
            accounts = accounts.filter(enabled=True)
        failed = 0
        for target in accounts:
            window = (
                (start, end) if start else scheduled_window(now=timezone.now(), last_success_at=target.last_success_at)
            )
            try:
                runs = account_sync(account=target, start=window[0], end=window[1], trigger=IngestRun.Trigger.COMMAND)
            except IngestError as refused:
                raise CommandError(str(refused)) from None
            for run in runs:
                span = f"{run.window_start:%Y-%m-%d} → {run.window_end:%Y-%m-%d}"
                if run.status == IngestRun.Status.SUCCEEDED:
                    self.stdout.write(
                        f"{target.name} {span}: read {run.lines_read}, written {run.lines_written}, replaced "
                        f"{run.lines_replaced}"
                    )
                else:
                    failed += 1
                    self.stderr.write(f"{target.name} {span}: FAILED: {run.error}")
        if failed:
            raise CommandError(f"{failed} run(s) failed")
