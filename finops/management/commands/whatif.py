import json

from django.core.management.base import BaseCommand, CommandError

from finops.core import display
from finops.web.period import today_utc
from finops.whatif.calculator import ProfileInvalid
from finops.whatif.options import OPTIONS, parse_options
from finops.whatif.selectors import what_if


def option_name(field: str) -> str:
    return "--" + field.replace("_", "-")


class Command(BaseCommand):
    help = (
        "What a month of traffic would cost, and how fast it would be answered, on each offering (docs/whatif.md): "
        "a workload's last 30 days (--workload) or a profile typed in (--requests, --input-tokens, --output-tokens "
        "as monthly totals; --cached-input-tokens is the part of the input read from the cache). Cheapest first; "
        "the same figures as GET /api/v1/whatif."
    )

    def add_arguments(self, parser):
        parser.add_argument("--workload", help="Workload slug: its last 30 days and its SLA.")
        parser.add_argument("--requests", help="Requests per month.")
        parser.add_argument("--input-tokens", help="Input tokens per month, cached ones included.")
        parser.add_argument("--output-tokens", help="Output tokens per month.")
        parser.add_argument("--cached-input-tokens", help="Of the input tokens, those read from the prompt cache.")
        parser.add_argument("--sla-seconds", help="Latency SLA per request, in seconds.")
        parser.add_argument("--batch-window-hours", help="Batch: the nightly window the work must fit in, in hours.")
        parser.add_argument("--family", help="Only offerings of this model family.")
        parser.add_argument("--format", default="table", choices=["json", "table"])

    def handle(self, *args, format, **options):
        try:
            parsed = parse_options({name: options.get(name) for name in OPTIONS})
            result = what_if(None, today=today_utc(), **parsed)
        except ProfileInvalid as exc:
            raise CommandError(f"{option_name(exc.field)}: {exc.message}") from None
        if format == "json":
            self.stdout.write(json.dumps([r.as_json() for r in result.results], indent=2))
            return
        self._table(result)

    def _table(self, result):
        header = ("provider", "model", "family", "monthly_cost", "latency", "meets_sla", "missing")
        rows = []
        for r in result.results:
            latency = (
                "—"
                if r.latency_seconds is None
                else ("≥ " if r.latency_lower_bound else "") + display.seconds(r.latency_seconds)
            )
            rows.append(
                (
                    ("* " if r.best else "  ") + r.provider,
                    r.model,
                    r.family,
                    display.money_exact(r.monthly_cost),
                    latency,
                    {True: "yes", False: "no", None: "unknown"}[r.meets_sla],
                    ", ".join(r.missing) or "",
                )
            )
        widths = [max([len(h) + (2 if i == 0 else 0)] + [len(row[i]) for row in rows]) for i, h in enumerate(header)]
        line = lambda values: "  ".join(v.ljust(w) for v, w in zip(values, widths)).rstrip()  # noqa: E731
        self.stdout.write(line(("  " + header[0], *header[1:])))
        for row in rows:
            self.stdout.write(line(row))
        if not rows:
            self.stdout.write("(no offerings: add some under `offerings:` in the config, docs/config.md)")
        elif result.best is not None:
            self.stdout.write("* the cheapest offering that meets the SLA")
