import datetime as dt
import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from finops.core import access
from finops.models import ReportSnapshot, User
from finops.reports import tco_formats
from finops.reports.selectors.tco_report import MonthError, TcoReport, report_month, tco_report

FORMATS = ("html", "pdf", "csv", "xlsx")


class Command(BaseCommand):
    help = (
        "Write the monthly TCO report of --month (YYYY-MM; default the last full month) as a standalone HTML "
        "document, a PDF, a CSV or an XLSX: the same report the Reports page shows and downloads. --version N writes "
        "the version published as N (its figures as published, never recomputed). The report covers the whole "
        "organisation, as an admin sees it, unless --user names someone allowed to see reports."
    )

    def create_parser(self, prog_name, subcommand, **kwargs):
        # --version is the report's published version here, not Django's version: ours replaces the base option.
        return super().create_parser(prog_name, subcommand, conflict_handler="resolve", **kwargs)

    def add_arguments(self, parser):
        parser.add_argument("--month", default="", help="YYYY-MM (UTC calendar month); default: the last full month.")
        parser.add_argument("--format", default="pdf", choices=FORMATS)
        parser.add_argument(
            "--output", required=True, help="The file to write ('-' for standard output: html and csv only)."
        )
        parser.add_argument(
            "--version",
            type=int,
            default=None,
            dest="report_version",
            help="Write the snapshot published as this version instead of the figures as they stand now.",
        )
        parser.add_argument(
            "--user", default="", help="Read as this user (an admin or finance); default: the whole organisation."
        )

    def handle(self, *args, month, format, output, report_version, user, **options):
        today = timezone.now().astimezone(dt.UTC).date()
        try:
            the_month = report_month(month, today=today)
        except MonthError as error:
            raise CommandError(str(error)) from None
        snapshot = None
        if report_version is not None:
            snapshot = (
                ReportSnapshot.objects.filter(month=the_month, version=report_version)
                .select_related("published_by")
                .first()
            )
            if snapshot is None:
                published = list(ReportSnapshot.objects.filter(month=the_month).values_list("version", flat=True))
                raise CommandError(
                    f"{the_month:%Y-%m} has no version {report_version}: "
                    + (
                        f"published versions are {', '.join(map(str, sorted(published)))}."
                        if published
                        else "it has not been published."
                    )
                )
            report = TcoReport.from_json(snapshot.figures)
        else:
            report = tco_report(self._reader(user), the_month, today=today)
        if output == "-" and format in ("pdf", "xlsx"):
            raise CommandError(f"A {format.upper()} is binary: give --output a file name.")
        content = self._render(report, format, snapshot)
        if output == "-":
            sys.stdout.write(content)
            return
        path = Path(output)
        if not path.parent.is_dir():
            raise CommandError(f"{path.parent} is not a directory.")
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8", newline="")
        state = "provisional" if report.provisional else "final"
        version = f", version {snapshot.version}" if snapshot else ""
        empty = "" if report.has_data else " (no spend recorded: the report says so)"
        self.stdout.write(
            f"Wrote the TCO report of {report.label} ({state}{version}) as {format.upper()} to {path}{empty}."
        )

    def _reader(self, username: str):
        """Who the report is read as: a named user allowed to see reports, or an admin stand-in that is never saved
        (the command runs on the server, where whoever runs it sees the whole organisation already)."""
        if not username:
            return User(username="manage.py tco_report", role=User.Role.ADMIN)
        found = User.objects.filter(username=username).first()
        if found is None or not found.is_active:
            raise CommandError(f"No active user {username!r}.")
        if not access.can_see_reports(found):
            raise CommandError(f"{username} may not see reports: only admins and finance do.")
        return found

    def _render(self, report, format: str, snapshot) -> str | bytes:
        if format == "csv":
            from io import StringIO

            stream = StringIO()
            tco_formats.write_csv(report, stream)
            return stream.getvalue()
        if format == "xlsx":
            return tco_formats.xlsx(report)
        from finops.reports.tco_pdf import report_html, report_pdf, snapshot_pdf

        if format == "pdf":
            return snapshot_pdf(snapshot) if snapshot else report_pdf(report)
        return report_html(report, snapshot=snapshot)
