"""A table of figures as an XLSX workbook, from the same spec as its page and CSV (finops.reports.tables): the same
header and columns, cell for cell, but numbers as numbers so finance can sum and pivot them.

- Money is the exact Decimal (not rounded, not a float in the file's text) shown with 2 decimals and its currency's
  symbol (the row's, for a contract in another currency); $/M tokens with 3, cost per outcome with up to 4; changes and
  shares are fractions shown as percentages; latencies whole ms.
- Row 1 is a title (what, which period, when generated, in UTC); row 2 the header; panes frozen below the header
  and right of the first column; widths fitted to the header and the figures.
openpyxl writes it directly: the clearest code for per-cell number formats (pandas would only add a layer).
"""

import datetime as dt
import io
from decimal import Decimal

from openpyxl import Workbook
from openpyxl.styles import Font
from openpyxl.utils import get_column_letter

from finops.core import display

from .cells import spreadsheet_safe
from .tables import Table, csv_header, has_money, row_currency

FORMATS = {
    "money": "#,##0.00",
    "per_mtok": "#,##0.000",
    "per_outcome": "#,##0.00##",
    "price": "#,##0.00##",
    "change": "+0.0%;-0.0%;0.0%",
    "share": "0.0%",
    "tokens": "#,##0",
    "count": "#,##0",
    "requests": "#,##0",
    "ms": "#,##0",
    "ms_change": "+#,##0;-#,##0;0",
    "points": "+0.00;-0.00;0.00",
    "rate": "#,##0.0",
    "score": "0.0##",
    "score_change": "+0.0##;-0.0##;0",
    "speed": "#,##0",
}
SHEET_NAME_MAX = 31  # Excel's limit
CURRENCY_KINDS = ("money", "per_mtok", "per_outcome", "price")


def number_format(kind: str, currency: str) -> str | None:
    """The cell format of a kind; an amount of money carries its currency's symbol ("$"#,##0.00; CHF as
    "CHF "#,##0.00), so a sum or a pivot in the spreadsheet still reads as money."""
    found = FORMATS.get(kind)
    if found is None or kind not in CURRENCY_KINDS:
        return found
    return f'"{display.currency_symbol(currency)}"{found}'


def cell_value(kind: str, value):
    """The value a cell holds: a number for numeric kinds (None stays empty, as "—" in a CSV), text otherwise."""
    if value is None or value == "":
        return None
    if kind in (
        "money",
        "per_mtok",
        "per_outcome",
        "price",
        "change",
        "share",
        "points",
        "score",
        "score_change",
        "rate",
        "speed",
    ):
        return Decimal(value)
    if kind in ("tokens", "count"):
        return int(value)
    if kind == "requests":
        return int(value) or None  # 0: the source does not count requests (a CSV leaves it empty too)
    if kind in ("ms", "ms_change"):
        return round(float(value))
    if kind == "verdict":
        return value["label"]
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.UTC).replace(tzinfo=None)
    # Text from provider files and users: openpyxl would store "=…" as a formula (finops/reports/cells.py).
    return value if isinstance(value, (dt.date, int)) else spreadsheet_safe(str(value))


def _cells(table: Table, row: dict) -> list[tuple[object, str | None]]:
    cells = []
    currency = row_currency(table, row)
    for column in table.columns:
        cells.append((cell_value(column.kind, row.get(column.key)), number_format(column.kind, currency)))
        if column.unpriced:
            cells.append((int(row.get(column.unpriced) or 0), FORMATS["tokens"]))
        if column.delta:
            cells.append((cell_value(column.delta_kind, row.get(column.delta)), FORMATS.get(column.delta_kind)))
    if has_money(table):
        cells.append((row_currency(table, row), None))
    return cells


def xlsx_bytes(table: Table, rows: list[dict], *, title: str, sheet: str, generated_at: dt.datetime) -> bytes:
    """One table as a workbook of one sheet."""
    return workbook_bytes([(table, rows, title, sheet)], generated_at=generated_at)


def workbook_bytes(sheets: list[tuple[Table, list[dict], str, str]], *, generated_at: dt.datetime) -> bytes:
    """Several tables as a workbook, a sheet each: [(table, rows, title, sheet name)] in order."""
    book = Workbook()
    book.remove(book.active)
    for table, rows, title, sheet in sheets:
        write_sheet(book.create_sheet(sheet[:SHEET_NAME_MAX]), table, rows, title=title, generated_at=generated_at)
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def write_sheet(ws, table: Table, rows: list[dict], *, title: str, generated_at: dt.datetime) -> None:
    ws.cell(
        row=1, column=1, value=f"{title} · generated {generated_at.astimezone(dt.UTC):%Y-%m-%d %H:%M} UTC"
    ).font = Font(bold=True, size=12)
    header = csv_header(table)
    widths = [len(name) for name in header]
    for index, name in enumerate(header, 1):
        ws.cell(row=2, column=index, value=name).font = Font(bold=True)
    for number, row in enumerate(rows, 3):
        for index, (value, number_format) in enumerate(_cells(table, row), 1):
            cell = ws.cell(row=number, column=index, value=value)
            if number_format and value is not None:
                cell.number_format = number_format
            shown = (
                len(display.count(value)) + 3
                if isinstance(value, (int, float, Decimal)) and not isinstance(value, bool)
                else len(str(value or ""))
            )
            widths[index - 1] = max(widths[index - 1], shown)
    for index, width in enumerate(widths, 1):
        ws.column_dimensions[get_column_letter(index)].width = min(max(width + 2, 8), 48)
    ws.freeze_panes = "B3"
