from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from ingest.retention import BATCH_SIZE, usage_lines_prune


def _whole(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise CommandError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise CommandError(f"{text!r}: give 0 or more")
    return value


class Command(BaseCommand):
    help = (
        "Delete raw usage lines older than the retention (FINOPS_USAGE_RETENTION_MONTHS, default 25 whole months "
        "before the current one), in small batches that each commit on their own. Rollups, reports and every "
        "total on the pages stay as they were. The beat runs the same prune daily; running it again does nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--months",
            type=_whole,
            help="Keep this many whole months before the current one "
            "(default: FINOPS_USAGE_RETENTION_MONTHS). 0 keeps everything.",
        )
        parser.add_argument(
            "--batch-size",
            type=_whole,
            default=BATCH_SIZE,
            help=f"Lines per batch, each its own transaction (default {BATCH_SIZE}).",
        )

    def handle(self, *args, months, batch_size, **options):
        if batch_size < 1:
            raise CommandError("--batch-size must be at least 1")
        months = settings.FINOPS_USAGE_RETENTION_MONTHS if months is None else months
        result = usage_lines_prune(months=months, batch_size=batch_size)
        if result.cutoff is None:
            self.stdout.write("Retention is off (0 months): nothing pruned.")
        elif result.skipped:
            self.stdout.write("Another prune is running: nothing done.")
        else:
            self.stdout.write(
                f"Pruned {result.deleted} usage lines starting before {result.cutoff:%Y-%m-%d} "
                f"({result.batches} batches)."
            )
