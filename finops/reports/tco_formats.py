"""The monthly TCO report as files: CSV (every table one after another, each under its section and title, with its
header) and XLSX (a sheet per table, numbers as numbers with currency formats). Both render the tables of
finops.reports.tco_tables from a TcoReport's rows (live or a snapshot's): no ORM here."""

import datetime as dt

from .cells import SafeCsvWriter
from .tables import csv_header, csv_row
from .tco_tables import SECTIONS, TITLES, rows_with_total
from .xlsx import SHEET_NAME_MAX, workbook_bytes


def report_title(report) -> str:
    return f"TCO report, {report.label}" + (" (provisional)" if report.provisional else "")


def write_csv(report, stream) -> None:
    writer = SafeCsvWriter(stream, lineterminator="\r\n")
    writer.writerow(
        [
            report_title(report),
            f"generated {report.generated_at.astimezone(dt.UTC):%Y-%m-%d %H:%M} UTC",
            f"currency {report.currency}",
        ]
    )
    for section in SECTIONS:
        writer.writerow([])
        writer.writerow([section.title])
        for table in section.tables:
            writer.writerow([TITLES[table.name]])
            writer.writerow(csv_header(table))
            for row in rows_with_total(table, report.rows(table.name)):
                writer.writerow(csv_row(table, row))
            writer.writerow([])


def xlsx(report) -> bytes:
    sheets = []
    for section in SECTIONS:
        for table in section.tables:
            sheets.append(
                (
                    table,
                    rows_with_total(table, report.rows(table.name)),
                    f"{TITLES[table.name]} · {report_title(report)}",
                    _sheet_name(TITLES[table.name]),
                )
            )
    return workbook_bytes(sheets, generated_at=report.generated_at)


def _sheet_name(title: str) -> str:
    """Excel refuses []:*?/\\ in a sheet name and more than 31 characters."""
    cleaned = "".join(" " if ch in "[]:*?/\\" else ch for ch in title.split(" (")[0])
    return cleaned[:SHEET_NAME_MAX].strip()
