from pathlib import Path

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from bench.pages import REPEATS, guard, run_bench


class Command(BaseCommand):
    help = (
        "Benchmark the spend pages on Postgres: generate a year of usage lines (10M by default: 50 teams, 400 "
        "workloads, 2,000 API keys, 34 models, latency on the gateway lines), time the overview, a team, a workload "
        "and an Explore page as an "
        "admin and a team lead (p50/p95), then a re-attribution moving 20 % of the lines; check the rollup equals "
        "the raw lines. Needs its own database named *_bench or *_bench<size>: it empties the organisation there."
    )

    def add_arguments(self, parser):
        parser.add_argument("--lines", type=int, default=10_000_000, help="Usage lines to generate (default 10000000).")
        parser.add_argument("--out", default="bench-results/pages.json", help="Where the JSON figures go.")
        parser.add_argument("--repeats", type=int, default=REPEATS, help="Timed requests per page and user.")
        parser.add_argument(
            "--reuse",
            action="store_true",
            help="Keep the lines already there when they are as many as --lines (pages and re-attribution only).",
        )
        parser.add_argument("--no-reattribution", action="store_true", help="Time the pages only.")

    def handle(self, *args, lines, out, repeats, reuse, no_reattribution, **options):
        if lines < 1000 or repeats < 1:
            raise CommandError("--lines must be at least 1000 and --repeats at least 1")
        guard()
        call_command("migrate", interactive=False, verbosity=0)  # the schema, if this database has none yet
        run_bench(
            lines=lines,
            out=Path(out),
            reuse=reuse,
            repeats=repeats,
            reattribute=not no_reattribution,
            echo=self.stdout.write,
        )
