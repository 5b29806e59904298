"""Every table on a page can be downloaded as CSV: `?csv=<table name>` answers that table's rows."""

import csv
from decimal import Decimal

from django.http import HttpResponse


def csv_response(filename: str, columns: list[tuple[str, str]], rows: list[dict]) -> HttpResponse:
    """columns: (header, key) pairs; Decimals are written exactly, None as an empty cell."""
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}.csv"'
    writer = csv.writer(response)
    writer.writerow([header for header, _ in columns])
    for row in rows:
        writer.writerow([_cell(row.get(key)) for _, key in columns])
    return response


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, Decimal):
        return format(value, "f")
    return str(value)
