"""The monthly TCO report as a document: the report body's markup (templates/reports/_body.html, the page's own) in
a print document (templates/reports/tco_document.html) laid out by WeasyPrint, offline: the stylesheet is read from
the static files on disk, the charts are data: SVGs (finops.reports.tco_charts), nothing is fetched over the network.

`report_sections(report)` is what the page, the standalone HTML and the PDF all render: each section's tables
(spec, title, rows) with the chart drawn from its rows, or the sentence saying why there is none, and the summary
as a list of figures (header and cell from the SUMMARY spec, one per column) rather than a one-row table too wide
for A4 or a phone.

Speed (the demo's month, warm): WeasyPrint's time goes into CSS matching and table layout, so report-print.css
uses short class selectors only, no shadows or rounded corners on cells, one font (DejaVu Sans, which the system
has: no font files embedded from the stylesheet), and the charts are vectors WeasyPrint draws without decoding.
"""

from pathlib import Path

from django.conf import settings
from django.template.loader import render_to_string

from . import tco_charts
from .tables import html_cell
from .tco_tables import SECTIONS, TITLES, rows_with_total

STATIC = Path(settings.BASE_DIR) / "static" / "finops"
# The table above which each section's charts go: the table whose rows they draw (finops.reports.tco_charts).
CHART_OF_TABLE = {
    "movers": "summary",
    "trend": "spend",
    "unit_economics": "unit_economics",
    "commitments": "commitments",
    "caps": "caps",
    "reconciliation": "data_quality",
    "savings": "savings",
}
WIDE = 8  # tables of this many columns or more set a smaller type in the PDF, so they fit A4's width


def summary_figures(table, row: dict) -> list[dict]:
    """The summary's one row as figures, one per column of its spec: header, help and the page's own cell."""
    return [
        {"key": column.key, "title": column.title(), "help": column.help, "cell": html_cell(column, row)}
        for column in table.page_columns
    ]


def report_sections(report) -> list[dict]:
    charts = tco_charts.section_charts(report)
    sections = []
    for section in SECTIONS:
        drawn = charts[section.key]
        tables = []
        for table in section.tables:
            rows = report.rows(table.name)
            entry = {
                "spec": table,
                "title": TITLES[table.name],
                "rows": rows_with_total(table, rows),
                "wide": len(table.page_columns) >= WIDE,
                "charts": [],
                "chart_empty": "",
            }
            if CHART_OF_TABLE.get(table.name) == section.key:
                entry["charts"], entry["chart_empty"] = drawn["charts"], drawn["empty"]
            if table.name == "summary" and rows:
                entry["figures"] = summary_figures(table, rows[0])
            tables.append(entry)
        sections.append({"key": section.key, "title": section.title, "tables": tables})
    return sections


def report_headline(report) -> list[str]:
    from .tco_headline import headline

    return headline(report)


def report_html(report, *, snapshot=None) -> str:
    """The standalone document (what the PDF lays out; `manage.py tco_report --format html` writes it). Its cover
    names the version: the snapshot's, or for live figures of a month already published, that they are live and
    which version was published (never "Not published" on a published month)."""
    from finops.models import ReportSnapshot

    latest = (
        None if snapshot is not None else ReportSnapshot.objects.filter(month=report.month).order_by("-version").first()
    )
    return render_to_string(
        "reports/tco_document.html",
        {
            "report": report,
            "snapshot": snapshot,
            "latest": latest,
            "sections": report_sections(report),
            "headline": report_headline(report),
            "stylesheet": (STATIC / "report-print.css").read_text(encoding="utf-8"),
        },
    )


def report_pdf(report, *, snapshot=None) -> bytes:
    from weasyprint import HTML  # imported on use: loading Pango costs ~0.3 s that no other page should pay

    return HTML(string=report_html(report, snapshot=snapshot), base_url=str(STATIC)).write_pdf()
