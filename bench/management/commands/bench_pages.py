from pathlib import Path

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.db.models import Sum

from bench.page_profile import profile_page
from bench.pages import REPEATS, guard, run_bench
from finops.models import DailySpend


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
        parser.add_argument(
            "--profile",
            metavar="PAGE",
            help="With --reuse: CPU and a cProfile of cold requests of one page (e.g. 'overview', 'teams, 6 months'); "
            "nothing else is timed or written.",
        )
        parser.add_argument("--as-lead", action="store_true", help="--profile as the team lead, not the admin.")

    def handle(self, *args, lines, out, repeats, reuse, no_reattribution, profile, as_lead, **options):
        if lines < 1000 or repeats < 1:
            raise CommandError("--lines must be at least 1000 and --repeats at least 1")
        guard()
        call_command("migrate", interactive=False, verbosity=0)  # the schema, if this database has none yet
        if profile:
            if not reuse:
                raise CommandError("--profile profiles the lines already there: give --reuse too")
            held = DailySpend.objects.aggregate(n=Sum("line_count"))["n"] or 0
            if held != lines:  # never a generation of 10M lines by surprise
                raise CommandError(f"--profile needs the {lines:,} lines there; the database holds {held:,}")
            profile_page(profile, who="lead" if as_lead else "admin", requests=repeats, echo=self.stdout.write)
            return
        run_bench(
            lines=lines,
            out=Path(out),
            reuse=reuse,
            repeats=repeats,
            reattribute=not no_reattribution,
            echo=self.stdout.write,
        )
