import os
import tempfile
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from finops.core.months import MonthError
from finops.reports.usage_focus import write_focus_csv
from finops.spend.selectors.usage_focus import export_month, month_lines
from finops.web.period import today_utc


class Command(BaseCommand):
    help = (
        "Write one UTC month's usage lines as a FOCUS 1.2 Cost and Usage CSV (docs/focus-export.md): to stdout, "
        "or to --output FILE. A month with no usage gives the header alone; a month not yet begun is refused."
    )

    def add_arguments(self, parser):
        parser.add_argument("--month", required=True, metavar="YYYY-MM", help="The UTC calendar month.")
        parser.add_argument("--output", metavar="FILE", help="Write here instead of stdout.")

    def handle(self, *args, month, output=None, **options):
        try:
            first_day = export_month(month, today=today_utc())
        except MonthError as error:
            raise CommandError(str(error)) from None
        if not output:
            write_focus_csv(month_lines(first_day), self.stdout)
            return
        count = _write_whole(Path(output), lambda stream: write_focus_csv(month_lines(first_day), stream))
        self.stderr.write(f"{count} usage lines of {first_day:%Y-%m} written to {output} (FOCUS 1.2)")


def _write_whole(target: Path, write) -> int:
    """`write(stream)` into a file beside `target`, renamed to it only once whole: a failed export (a database
    error half-way, a full disk) leaves no file behind, and an earlier export at `target` is kept as it was."""
    descriptor, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent or ".")
    try:
        with os.fdopen(descriptor, "w", newline="", encoding="utf-8") as stream:
            count = write(stream)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)  # as open() would have made it (mkstemp's file is the owner's alone)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return count
