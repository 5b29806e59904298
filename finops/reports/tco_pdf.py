"""The monthly TCO report as a PDF: the report body's markup (templates/reports/_body.html, the page's own) in a
print document (templates/reports/tco_document.html) laid out by WeasyPrint, offline: the stylesheet is read from
the static files on disk, nothing is fetched over the network."""

from pathlib import Path

from django.conf import settings
from django.template.loader import render_to_string

from .tco_tables import SECTIONS, TITLES

STATIC = Path(settings.BASE_DIR) / "static" / "finops"


def _sections(report) -> list[dict]:
    return [{"key": s.key, "title": s.title,
             "tables": [{"spec": t, "title": TITLES[t.name], "rows": report.rows(t.name)} for t in s.tables]}
            for s in SECTIONS]


def report_html(report, *, snapshot=None) -> str:
    return render_to_string("reports/tco_document.html", {
        "report": report, "snapshot": snapshot, "sections": _sections(report),
        "stylesheet": (STATIC / "report-print.css").read_text(encoding="utf-8"),
    })


def report_pdf(report, *, snapshot=None) -> bytes:
    from weasyprint import HTML  # imported on use: loading Pango costs ~0.3 s that no other page should pay

    return HTML(string=report_html(report, snapshot=snapshot), base_url=str(STATIC)).write_pdf()
