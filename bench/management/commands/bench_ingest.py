from pathlib import Path

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from bench.focus_ingest import run_bench
from bench.gateway_ingest import run_gateway_bench


class Command(BaseCommand):
    help = (
        "Benchmark FOCUS ingest on Postgres: generate an N-line FOCUS 1.2 export, import it end to end in a child "
        "process (lines/s, peak RSS), beside a plain COPY of the same rows; write JSON and print a table. "
        "With --requests, also (or, without --lines, only) a generated N-request LiteLLM spend-log CSV, the same way. "
        "Needs its own Postgres database named *_bench: it empties the usage-line and rollup tables."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--lines",
            type=int,
            action="append",
            metavar="N",
            help="Lines in the generated file; repeat for several sizes (default 1000000).",
        )
        parser.add_argument(
            "--requests",
            type=int,
            action="append",
            metavar="N",
            help="Requests in a generated LiteLLM spend log (gateway_log); repeat for several sizes. Given alone, "
            "only the gateway log is measured.",
        )
        parser.add_argument(
            "--resource-rows",
            type=int,
            action="append",
            metavar="N",
            help="Rows in a generated per-resource FOCUS file (daily rows of 5,000+ Bedrock application inference "
            "profiles in 6 regions, tags on every row); repeat for several sizes.",
        )
        parser.add_argument(
            "--toolkit-file",
            action="append",
            metavar="PATH",
            help="A FOCUS 1.2 AWS CSV made by the focus-data-toolkit generator (`focus-toolkit generate --provider aws "
            "--focus-version 1.2 --rows 100000`), imported with every service kept (EC2, VPC, Glue …: it has no "
            "Bedrock); repeat for several files. Never deleted.",
        )
        parser.add_argument(
            "--scattered-requests",
            type=int,
            action="append",
            metavar="N",
            help="Requests in a LiteLLM log where requests rarely share an hourly line (300 keys, 50 users, 7 teams "
            "over 23 days, not tied together).",
        )
        parser.add_argument(
            "--proxy-requests",
            type=int,
            action="append",
            metavar="N",
            help=(
                "Requests in a LiteLLM log of a typical proxy (each key one user, team and model: ~6 requests a line)."
            ),
        )
        parser.add_argument("--out", default="bench-results/ingest.json", help="Where the JSON results go.")
        parser.add_argument(
            "--gateway-out", default="bench-results/ingest-gateway.json", help="Where the gateway-log JSON results go."
        )
        parser.add_argument("--workdir", help="Directory for the generated file (default: the system temp directory).")
        parser.add_argument("--seed", type=int, default=20260301, help="Seed of the generated quantities.")
        parser.add_argument(
            "--breakdown",
            action="store_true",
            help=(
                "Also time the Python share alone (the column reader; reader + line columns + COPY rows) for the "
                "smallest size."
            ),
        )
        parser.add_argument(
            "--tracemalloc",
            action="store_true",
            help="Also run each import once more under tracemalloc (slower) and report the Python heap peak.",
        )

    def handle(
        self,
        *args,
        lines,
        requests,
        resource_rows,
        toolkit_file,
        scattered_requests,
        proxy_requests,
        out,
        gateway_out,
        workdir,
        seed,
        breakdown,
        tracemalloc,
        **options,
    ):
        gateway = {"busy-day": requests or [], "scattered": scattered_requests or [], "proxy": proxy_requests or []}
        selected = any(gateway.values()) or resource_rows or toolkit_file
        sizes = lines or ([] if selected else [1_000_000])
        if any(n <= 0 for n in [*sizes, *(resource_rows or []), *(n for ns in gateway.values() for n in ns)]):
            raise CommandError("--lines, --resource-rows and the request counts must be positive")
        name = str(connection.settings_dict["NAME"])
        if connection.vendor != "postgresql" or not name.endswith("_bench"):
            raise CommandError(
                f"bench_ingest runs on a Postgres database named *_bench (it empties usage lines), not {name!r} "
                f"({connection.vendor}); e.g. DATABASE_URL=postgres://postgres@127.0.0.1:5432/finops_bench"
            )
        call_command("migrate", interactive=False, verbosity=0)  # the schema, if this database has none yet
        if sizes or resource_rows or toolkit_file:
            run_bench(
                sizes=sizes,
                resource_sizes=resource_rows or [],
                toolkit_files=[Path(file) for file in toolkit_file or []],
                out=Path(out),
                workdir=Path(workdir) if workdir else None,
                seed=seed,
                breakdown=breakdown,
                trace=tracemalloc,
                echo=self.stdout.write,
            )
        if any(gateway.values()):
            run_gateway_bench(
                shapes=gateway,
                out=Path(gateway_out),
                workdir=Path(workdir) if workdir else None,
                breakdown=breakdown,
                echo=self.stdout.write,
            )
