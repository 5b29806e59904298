from pathlib import Path

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from bench.load import DURATION_S, LEVELS, MAX_REQUESTS, WORKERS, run_bench
from bench.pages import guard


class Command(BaseCommand):
    help = (
        "Throughput under concurrent sessions on Postgres: gunicorn (4 workers) on 127.0.0.1 serving the page bench's "
        "organisation, a mix of overview, teams, Explore, /api/v1/spend, caps and scorecard requested by 1, 8 and 32 "
        "signed-in sessions; requests/s, p50 and p95 per level in bench-results/load.json. Needs the page bench's own "
        "database (*_bench or *_bench<size>); its lines are reused, or --lines generated when it holds none."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--lines",
            type=int,
            default=200_000,
            help="Lines to generate when the database holds none (default 200000).",
        )
        parser.add_argument(
            "--sessions", type=int, action="append", help=f"Concurrent sessions of a level; repeat (default {LEVELS})."
        )
        parser.add_argument(
            "--seconds", type=float, default=DURATION_S, help="Longest a level runs (default %(default)s)."
        )
        parser.add_argument(
            "--max-requests", type=int, default=MAX_REQUESTS, help="Most requests a level sends (default %(default)s)."
        )
        parser.add_argument("--workers", type=int, default=WORKERS, help="gunicorn workers (default %(default)s).")
        parser.add_argument(
            "--write-every",
            type=float,
            default=0,
            help="Move the data version every that many seconds during a level, as a write would: the page cache's "
            "cold requests are then in the figures (default 0: no writes).",
        )
        parser.add_argument("--out", default="bench-results/load.json", help="Where the JSON figures go.")

    def handle(self, *args, lines, sessions, seconds, max_requests, workers, write_every, out, **options):
        levels = tuple(sessions or LEVELS)
        if lines < 1000 or min(levels) < 1 or max(levels) > 64 or not 0 < seconds <= 600 or max_requests < 1:
            raise CommandError("--lines ≥ 1000, 1 ≤ --sessions ≤ 64, 0 < --seconds ≤ 600 and --max-requests ≥ 1")
        guard()
        call_command("migrate", interactive=False, verbosity=0)
        run_bench(
            lines=lines,
            out=Path(out),
            levels=levels,
            duration_s=seconds,
            max_requests=max_requests,
            workers=workers,
            write_every_s=write_every,
            echo=self.stdout.write,
        )
