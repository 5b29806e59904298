"""Cells that are safe to open in a spreadsheet (issue 16: CSV and formula injection).

Model names, tags, workload and team names come from provider files and from users. A cell starting with `=`,
`+`, `-` or `@` (or a tab or carriage return, which some spreadsheets skip before reading a formula) is run as a
formula by Excel, LibreOffice and Google Sheets when a CSV or XLSX is opened: `=HYPERLINK("http://…","click")`
exfiltrates, `=1+2` computes. Every CSV and XLSX writer passes its text cells through `spreadsheet_safe`, which
prefixes such a cell with an apostrophe (OWASP's advice: shown as text, the apostrophe itself hidden by most
spreadsheets). Numbers are left exactly as they are: `-12.50` is a number, not a formula.
"""

import csv
import re

TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def spreadsheet_safe(cell):
    """`cell` unchanged unless it is text a spreadsheet would read as a formula; then prefixed with an apostrophe."""
    if not isinstance(cell, str) or not cell.startswith(TRIGGERS) or _NUMBER.fullmatch(cell):
        return cell
    return "'" + cell


class SafeCsvWriter:
    """csv.writer whose every cell is `spreadsheet_safe`: the one way this product writes CSV for people."""

    def __init__(self, out, **options):
        self._writer = csv.writer(out, **options)

    def writerow(self, cells):
        return self._writer.writerow([spreadsheet_safe(cell) for cell in cells])

    def writerows(self, rows):
        for cells in rows:
            self.writerow(cells)
