from pathlib import Path

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from bench.alerts import REPEATS, run_bench
from bench.pages import guard


class Command(BaseCommand):
    help = (
        "Benchmark alert evaluation on Postgres: on the page bench's organisation (10M lines by default: 50 teams, "
        "400 workloads) put a cap on every team and workload (450), then time a full evaluation and the evaluation "
        "after a one-day import; figures in bench-results/alerts.json. Needs the page bench's own database "
        "(*_bench or *_bench<size>); --reuse keeps the lines already there."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--lines", type=int, default=10_000_000, help="Usage lines of the organisation (default 10000000)."
        )
        parser.add_argument("--out", default="bench-results/alerts.json", help="Where the JSON figures go.")
        parser.add_argument("--repeats", type=int, default=REPEATS, help="Timed evaluations of each kind.")
        parser.add_argument(
            "--reuse", action="store_true", help="Keep the lines already there when they are as many as --lines."
        )

    def handle(self, *args, lines, out, repeats, reuse, **options):
        if lines < 1000 or repeats < 1:
            raise CommandError("--lines must be at least 1000 and --repeats at least 1")
        guard()
        call_command("migrate", interactive=False, verbosity=0)
        run_bench(lines=lines, out=Path(out), reuse=reuse, repeats=repeats, echo=self.stdout.write)
