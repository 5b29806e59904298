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
The PDF's tables have a fixed layout with widths worked out here from the cells (column_widths), separate borders
(nothing to collapse), and the charts reach WeasyPrint by reference rather than as data: URIs (report_pdf): see
docs/reports.md, "PDF speed".
"""

import base64
import html
import re
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
# Fixed table layout (column_widths): A4's width inside the margins and a cell's padding (report-print.css), in
# points, and DejaVu Sans's average advance per character in em: figures (digits are 0.64 em, bold 0.70, with
# narrower commas and points: erring wide, since a figure never wraps), text, and the bold headers.
TABLE_WIDTH_PT, CELL_PADDING_PT, BADGE_PADDING_PT = (210 - 2 * 14) / 25.4 * 72, 6, 6
FIGURE_EM, TEXT_EM, BOLD_EM = 0.66, 0.56, 0.66
BLOCK_PART = re.compile(r'<span class="(?:delta|unpriced)"[^>]*>')  # parts of a cell shown on lines of their own
TAG = re.compile(r"<[^>]+>")


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
            else:
                entry["widths"] = column_widths(table, entry["rows"], wide=entry["wide"])
            tables.append(entry)
        sections.append({"key": section.key, "title": section.title, "tables": tables})
    return sections


def _longest_line(cell: str) -> int:
    return max(len(html.unescape(TAG.sub("", part)).strip()) for part in BLOCK_PART.split(cell))


def column_widths(table, rows: list[dict], *, wide: bool) -> list[float]:
    """Each page column's share of the table's width (percent), for the PDF's fixed table layout.

    WeasyPrint's automatic table layout measures every cell twice (its narrowest and its widest line) before it
    lays the table out: most of a long report's layout time. A fixed layout takes the widths given, so they are
    worked out here from the cells' text the way the automatic layout works them out (CSS 2.1, 17.5.2.2), with
    the text measured in characters of an average width rather than shaped: a column's narrowest is its longest
    figure (figures never wrap) or its longest word, its widest its longest line; when the widest of every column
    fit, each column gets its widest and the room left in proportion to it, otherwise its narrowest and the room
    left in proportion to how much wider it would like to be."""
    columns = table.page_columns
    size = 7 if wide else 8.5  # report-print.css: the cells' type, and the headers' (bold) a size smaller
    header_size = 6.5 if wide else 7
    narrowest, widest = [], []
    for column in columns:
        cells = [html_cell(column, row) for row in rows]
        title = str(column.title())
        if column.numeric or column.kind == "badge":  # a figure, its header and a badge never wrap (.num, .badge)
            width = max(
                max((_longest_line(cell) for cell in cells), default=0) * FIGURE_EM * size
                + (BADGE_PADDING_PT if column.kind == "badge" else 0),
                len(title) * BOLD_EM * header_size,
            )
            narrowest.append(width)
            widest.append(width)
        else:
            words = [w for cell in cells for w in html.unescape(TAG.sub(" ", cell)).split()]
            header_word = max((len(w) for w in title.split()), default=0) * BOLD_EM * header_size
            narrowest.append(max(max((len(w) for w in words), default=0) * FIGURE_EM * size, header_word))
            header_line = len(title) * BOLD_EM * header_size
            widest.append(max(max((_longest_line(cell) for cell in cells), default=0) * TEXT_EM * size, header_line))
    narrowest = [w + CELL_PADDING_PT for w in narrowest]
    widest = [w + CELL_PADDING_PT for w in widest]
    room = TABLE_WIDTH_PT - sum(widest)
    if room >= 0:
        widths = [w + room * w / sum(widest) for w in widest]
    else:
        room, wish = TABLE_WIDTH_PT - sum(narrowest), sum(widest) - sum(narrowest)
        widths = [n + max(room, 0) * (w - n) / wish for n, w in zip(narrowest, widest, strict=True)]
    total = sum(widths)
    return [round(100 * w / total, 2) for w in widths]


def fixed_layout_css(sections: list[dict]) -> str:
    """The PDF's column widths (column_widths) as style rules on each table's header cells: in a fixed layout the
    first row's cells set the columns. Only the document carries them; the page keeps its automatic layout."""
    rules = []
    for section in sections:
        for table in section["tables"]:
            if "widths" not in table:
                continue
            name = table["spec"].name
            rules.append(f'table[data-table="{name}"]{{table-layout:fixed}}')
            rules.extend(
                f'table[data-table="{name}"] th:nth-child({n}){{width:{width}%;box-sizing:border-box}}'
                for n, width in enumerate(table["widths"], start=1)
            )
    return "\n".join(rules)


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
    sections = report_sections(report)
    return render_to_string(
        "reports/tco_document.html",
        {
            "report": report,
            "snapshot": snapshot,
            "latest": latest,
            "sections": sections,
            "headline": report_headline(report),
            "stylesheet": (STATIC / "report-print.css").read_text(encoding="utf-8") + "\n" + fixed_layout_css(sections),
        },
    )


CHART_URI = re.compile(r'"data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)"')
CHART_SCHEME = "finops-chart:"


def report_pdf(report, *, snapshot=None) -> bytes:
    """The document laid out by WeasyPrint. Its charts are handed over by reference rather than inline: the HTML
    parser reads a data: URI one character at a time (the charts were most of the document's bytes and a tenth of
    the PDF's time), so each becomes `finops-chart:N`, which the URL fetcher answers from memory — still offline,
    still the same SVG drawn as vectors."""
    charts: list[bytes] = []

    def by_reference(match: re.Match) -> str:
        charts.append(base64.b64decode(match.group(1)))
        return f'"{CHART_SCHEME}{len(charts) - 1}"'

    document = CHART_URI.sub(by_reference, report_html(report, snapshot=snapshot))

    return lay_out(document, charts)


def lay_out(document: str, charts: list[bytes]) -> bytes:
    """WeasyPrint's layout of the document, its charts answered from memory. A pure function of its arguments (the
    PDF carries no identifier or date that WeasyPrint makes up), which the test suite relies on to lay out each
    distinct document once per process (tests/conftest.py)."""
    from weasyprint import HTML, default_url_fetcher  # imported on use: loading Pango costs ~0.3 s

    def fetch(url: str):
        if url.startswith(CHART_SCHEME):
            return {"string": charts[int(url.removeprefix(CHART_SCHEME))], "mime_type": "image/svg+xml"}
        return default_url_fetcher(url)

    return HTML(string=document, base_url=str(STATIC), url_fetcher=fetch).write_pdf()


def snapshot_pdf(snapshot) -> bytes:
    """A published version's PDF (finops.models.ReportDocument): laid out the first time it is asked for, then
    read back. The email, its preview, the download and `manage.py tco_report` all take it from here. Two senders
    laying it out at once store the first one's; both send the bytes stored."""
    from finops.models import ReportDocument
    from finops.reports.selectors.tco_report import TcoReport

    if snapshot.pk is None:  # a preview of what publishing would send: nothing to keep
        return report_pdf(TcoReport.from_json(snapshot.figures), snapshot=snapshot)
    stored = ReportDocument.objects.filter(snapshot_id=snapshot.pk).values_list("pdf", flat=True).first()
    if stored is None:
        pdf = report_pdf(TcoReport.from_json(snapshot.figures), snapshot=snapshot)
        document, _ = ReportDocument.objects.get_or_create(snapshot_id=snapshot.pk, defaults={"pdf": pdf})
        stored = document.pdf
    return bytes(stored)
