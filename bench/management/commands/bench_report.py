from pathlib import Path

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from bench.pages import guard
from bench.report import REPEATS, run_bench


class Command(BaseCommand):
    help = (
        "Benchmark the monthly TCO report on Postgres: on the page bench's organisation (a year of usage lines), time "
        "the report of the last full month as an admin — the selector, the charts, the page, the PDF, the CSV and "
        "the XLSX, p50/p95 — beside a control query (targets: page ≤ 1 s, PDF ≤ 10 s). Reuses the lines bench_pages "
        "left when they are as many as --lines, else generates them. Needs its own database named *_bench or "
        "*_bench<size>."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--lines", type=int, default=10_000_000, help="Usage lines of the organisation (default 10000000)."
        )
        parser.add_argument("--out", default="bench-results/report.json", help="Where the JSON figures go.")
        parser.add_argument("--repeats", type=int, default=REPEATS, help="Timed runs per measurement (the PDF: 3).")
        parser.add_argument("--no-reuse", action="store_true", help="Generate the lines even when they are there.")

    def handle(self, *args, lines, out, repeats, no_reuse, **options):
        if lines < 1000 or repeats < 1:
            raise CommandError("--lines must be at least 1000 and --repeats at least 1")
        guard()
        call_command("migrate", interactive=False, verbosity=0)
        run_bench(lines=lines, out=Path(out), reuse=not no_reuse, repeats=repeats, echo=self.stdout.write)
