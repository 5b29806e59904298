from pathlib import Path

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from bench.pages import guard
from bench.whatif import REPEATS, run_bench


class Command(BaseCommand):
    help = (
        "Benchmark the what-if calculator on Postgres: on the page bench's organisation (10M lines by default), "
        "GET /api/v1/whatif for the busiest workload as an admin and a team lead (p50/p95, target ≤ 200 ms); "
        "figures in bench-results/whatif.json. Needs the page bench's own database (*_bench or *_bench<size>); "
        "the lines already there are reused when they are as many as --lines."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--lines", type=int, default=10_000_000, help="Usage lines of the organisation (default 10000000)."
        )
        parser.add_argument("--out", default="bench-results/whatif.json", help="Where the JSON figures go.")
        parser.add_argument("--repeats", type=int, default=REPEATS, help="Timed calls per user.")

    def handle(self, *args, lines, out, repeats, **options):
        if lines < 1000 or repeats < 1:
            raise CommandError("--lines must be at least 1000 and --repeats at least 1")
        guard()
        call_command("migrate", interactive=False, verbosity=0)
        run_bench(lines=lines, out=Path(out), repeats=repeats, echo=self.stdout.write)
