import csv
import datetime as dt
import json

from django.core.management.base import BaseCommand, CommandError

from finops.selectors.spend_report import FIELDS, GROUPS, as_json, spend_rows


def _day(text: str) -> dt.date:
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise CommandError(f"{text!r} is not a date in YYYY-MM-DD form") from None


class Command(BaseCommand):
    help = (
        "Spend for [--start, --end) (UTC days; --end is exclusive: --start 2026-10-01 --end 2026-11-01 is October), "
        "grouped by provider, account, model, day, team or workload, in the reporting currency."
    )

    def add_arguments(self, parser):
        parser.add_argument("--start", required=True, type=_day)
        parser.add_argument("--end", required=True, type=_day)
        parser.add_argument("--by", required=True, choices=list(GROUPS))
        parser.add_argument("--format", default="table", choices=["json", "csv", "table"])

    def handle(self, *args, start, end, by, format, **options):
        try:
            rows = as_json(spend_rows(start=start, end=end, by=by))
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        if format == "json":
            self.stdout.write(json.dumps(rows, indent=2))
        elif format == "csv":
            writer = csv.DictWriter(self.stdout, fieldnames=FIELDS, lineterminator="\n")
            writer.writeheader()
            writer.writerows(rows)
        else:
            self._table(rows)

    def _table(self, rows):
        columns = ("group", "cost", "billed_cost", "estimated_cost", "input_tokens", "output_tokens", "unpriced_tokens", "usd_per_mtok")
        cells = [[("Unattributed" if r["group"] is None and c == "group" else str(r[c] if r[c] is not None else "—")) for c in columns] for r in rows]
        widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(columns)]
        line = lambda values: "  ".join(v.ljust(w) if i == 0 else v.rjust(w) for i, (v, w) in enumerate(zip(values, widths)))  # noqa: E731
        self.stdout.write(line(columns))
        for row in cells:
            self.stdout.write(line(row))
        if not rows:
            self.stdout.write("(no spend in this period)")
