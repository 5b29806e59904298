import json

from django.core.management.base import BaseCommand, CommandError

from finops.management.arguments import utc_day
from finops.reports.spend_csv import write_csv
from finops.spend.selectors.spend_report import FILTER_NAMES, GROUPS, as_json, filter_errors, spend_rows


class Command(BaseCommand):
    help = (
        "Spend for [--start, --end) (UTC days; --end is exclusive: --start 2026-10-01 --end 2026-11-01 is October), "
        "grouped by provider, account, model, day, month, team or workload, in the reporting currency; the same "
        "figures and filters as GET /api/v1/spend. A cost no price is known for is shown as — (null in JSON, empty in "
        "CSV)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--start", required=True, type=utc_day)
        parser.add_argument("--end", required=True, type=utc_day)
        parser.add_argument("--by", required=True, choices=list(GROUPS))
        parser.add_argument("--format", default="table", choices=["json", "csv", "table"])
        for name in FILTER_NAMES:
            parser.add_argument(
                f"--{name}", default="", help=f"Only this {name} (as in Explore; '-' = unattributed team or workload)."
            )

    def handle(self, *args, start, end, by, format, **options):
        filters = {name: options[name] for name in FILTER_NAMES if options[name]}
        errors = filter_errors(None, filters)
        if errors:
            raise CommandError(" ".join(errors.values()))
        try:
            rows = as_json(spend_rows(start=start, end=end, by=by, filters=filters))
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        if format == "json":
            self.stdout.write(json.dumps(rows, indent=2))
        elif format == "csv":
            write_csv(rows, self.stdout, lineterminator="\n")
        else:
            self._table(rows)

    def _table(self, rows):
        columns = (
            "label",
            "cost",
            "billed_cost",
            "estimated_cost",
            "input_tokens",
            "output_tokens",
            "unpriced_tokens",
            "usd_per_mtok",
        )
        cells = [[str(row[c]) if row[c] is not None else "—" for c in columns] for row in rows]
        widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(columns)]

        def line(values):
            return "  ".join(v.ljust(w) if i == 0 else v.rjust(w) for i, (v, w) in enumerate(zip(values, widths)))

        self.stdout.write(line(("group", *columns[1:])))
        for row in cells:
            self.stdout.write(line(row))
        if not rows:
            self.stdout.write("(no spend in this period)")
