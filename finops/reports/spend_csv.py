"""`GET /api/v1/spend?format=csv` and `spend --format csv`: the spend selector's rows as CSV."""

from finops.spend.selectors.spend_report import FIELDS

from .cells import SafeCsvWriter


def write_csv(rows: list[dict], stream, *, lineterminator: str = "\r\n") -> None:
    """`as_json` rows as CSV (the API's `format=csv` and `spend --format csv`): a header row, the same columns,
    money as plain decimals, an unknown value as an empty cell."""
    writer = SafeCsvWriter(stream, lineterminator=lineterminator)
    writer.writerow(FIELDS)
    for row in rows:
        writer.writerow(["" if row[k] is None else row[k] for k in FIELDS])
