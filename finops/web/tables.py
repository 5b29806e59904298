"""Every table on a page can be downloaded as CSV: `?csv=<table name>` answers that table's rows, with the
columns of its spec (finops.reports.tables): the page's columns, plain decimals, a Currency column."""

from django.http import HttpResponse

from finops.reports.cells import SafeCsvWriter
from finops.reports.tables import Table, csv_header, csv_row


def csv_response(filename: str, table: Table, rows: list[dict]) -> HttpResponse:
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}.csv"'
    writer = SafeCsvWriter(response)
    writer.writerow(csv_header(table))
    for row in rows:
        writer.writerow(csv_row(table, row))
    return response


def csv_requested(
    request, prefix: str, tables: dict[str, tuple[Table, list[dict]]], *, stem: str
) -> HttpResponse | None:
    """The CSV of the table `?csv=` names, if it names one of `tables` ({name: (spec, rows)})."""
    wanted = request.GET.get("csv")
    if wanted in tables:
        table, rows = tables[wanted]
        return csv_response(f"{prefix}-{wanted}-{stem}", table, rows)
    return None


XLSX_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


def xlsx_response(filename: str, table: Table, rows: list[dict], *, title: str, sheet: str) -> HttpResponse:
    """The table as an XLSX workbook (finops.reports.xlsx): the CSV's columns, numbers as numbers."""
    from django.utils import timezone

    from finops.reports.xlsx import xlsx_bytes

    response = HttpResponse(
        xlsx_bytes(table, rows, title=title, sheet=sheet, generated_at=timezone.now()), content_type=XLSX_TYPE
    )
    response["Content-Disposition"] = f'attachment; filename="{filename}.xlsx"'
    return response
