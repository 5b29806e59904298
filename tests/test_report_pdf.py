"""The monthly TCO report's PDF and charts (issue 14) on the demo organisation's last full month (October 2026):
rendered by WeasyPrint, turned into PNG pages with pdftoppm and read back with pdftotext, as a CFO would get it."""

import datetime as dt
import re
import subprocess
from pathlib import Path

import pytest
from PIL import Image

from finops.core import display
from finops.models import User
from finops.reports import tco_charts
from finops.reports.selectors.tco_report import TcoReport, tco_report
from finops.reports.services.reports import report_publish
from finops.reports.tco_pdf import report_html, report_pdf
from finops.reports.tco_tables import SECTIONS, SUMMARY, TITLES
from tests.demo_helpers import TODAY, demo_loaded_once, october_report

A4_PT = (595.28, 841.89)
MARGIN_PT = 14 * 72 / 25.4  # report-print.css: 14 mm left and right


@pytest.fixture(scope="module")
def demo(django_db_setup, django_db_blocker, tmp_path_factory):
    """The demo, and October's report made once for the module's tests (they only read it: ~0.3 s a report)."""
    with demo_loaded_once(django_db_blocker, tmp_path_factory) as summary:
        yield {"summary": summary, "october": october_report()}


@pytest.fixture
def loaded(demo, db):
    return demo


@pytest.fixture
def october(loaded) -> TcoReport:
    return loaded["october"]


def _pages(pdf: bytes, folder: Path, *, drawn: bool = True) -> list[dict]:
    """Each page of `pdf`: its text (pdftotext, which ends each page with a form feed) and, when `drawn`, its PNG
    (pdftoppm) and its words' boxes (pdftotext -bbox): a test that reads only the words leaves the drawing out (a
    second or more of pdftoppm)."""
    path = folder / "report.pdf"
    path.write_bytes(pdf)
    texts = subprocess.run(
        ["pdftotext", "-layout", str(path), "-"], capture_output=True, text=True, check=True
    ).stdout.split("\f")[:-1]
    if drawn:
        subprocess.run(["pdftoppm", "-r", "40", "-png", str(path), str(folder / "page")], check=True)
    pngs = sorted(folder.glob("page-*.png"))
    pages = [
        {"number": number, "text": text + "\f", "png": pngs[number - 1] if number <= len(pngs) else None}
        for number, text in enumerate(texts, 1)
    ]
    if not drawn:
        return pages
    boxes = subprocess.run(["pdftotext", "-bbox", str(path), "-"], capture_output=True, text=True, check=True).stdout
    assert boxes.count("<page ") == len(pages)
    for index, page in enumerate(boxes.split("<page ")[1:]):
        width, height = (float(v) for v in re.match(r'width="([\d.]+)" height="([\d.]+)"', page).groups())
        boxes = [
            (float(x0), float(y0), float(x1), float(y1), word)
            for x0, y0, x1, y1, word in re.findall(
                r'<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" yMax="([\d.]+)">([^<]*)</word>', page
            )
        ]
        words = [(x0, x1, word) for x0, _y0, x1, _y1, word in boxes]
        pages[index].update(size=(width, height), words=words, boxes=boxes)
    return pages


@pytest.fixture(scope="module")
def pdf_pages(demo, django_db_blocker, tmp_path_factory):
    """The PDF of October rendered once for the module's tests (rendering and reading it back takes seconds)."""
    with django_db_blocker.unblock():
        return _pages(report_pdf(demo["october"]), tmp_path_factory.mktemp("report-pdf"))


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_every_section_table_and_chart_is_in_the_pdf(october, pdf_pages):
    text = _flat(" ".join(page["text"] for page in pdf_pages))
    for number, section in enumerate(SECTIONS, 1):
        assert f"{number}. {section.title}" in text
        for table in section.tables:
            assert _flat(TITLES[table.name]) in text, table.name
    charts = tco_charts.section_charts(october)
    drawn = [chart for entry in charts.values() for chart in entry["charts"]]
    # The demo's October has figures for every chart but the billed-against-list variance (every provider bills
    # its list price): that section says so in a sentence instead.
    assert {chart.name for chart in drawn} == {"movers", "trend", "unit_economics", "commitments", "caps", "savings"}
    assert charts["data_quality"]["empty"] and _flat(charts["data_quality"]["empty"]) in text
    for chart in drawn:
        # The chart's title is drawn inside its SVG only (the page carries it in the image's alt text), so finding
        # it in the PDF's text means the chart itself was drawn, as vectors with real text.
        assert chart.title in text, chart.name
        assert chart.title not in _flat(re.sub(r"<img [^>]+>", "", report_html(october))), chart.name


def test_the_summary_is_figures_from_its_spec_and_the_totals_are_the_reports(october, pdf_pages):
    first = _flat(pdf_pages[0]["text"])
    for column in SUMMARY.page_columns:
        assert column.title() in first, column.header
    summary = october.summary
    assert display.money_exact(summary["cost"]) in first
    assert display.money_exact(summary["forecast_next"]) in first
    assert "TCO report October 2026" in first


def test_pages_are_a4_numbered_labelled_and_nothing_runs_off_the_edge(october, pdf_pages):
    total = len(pdf_pages)
    assert total >= 3
    label = "Provisional" if october.provisional else "Final"
    # The demo published October: its live PDF says so on the cover, never "Not published".
    assert label in pdf_pages[0]["text"] and "Live figures · version" in pdf_pages[0]["text"]
    assert "Not published" not in pdf_pages[0]["text"]
    for page in pdf_pages:
        assert page["size"] == pytest.approx(A4_PT, abs=0.5)
        assert f"Page {page['number']} of {total}" in page["text"]
        if page["number"] > 1:  # the running head: month, provisional or final, version
            assert f"TCO report · October 2026 · {label} · live figures, version" in _flat(page["text"])
        width = page["size"][0]
        off = [word for x0, x1, word in page["words"] if x0 < MARGIN_PT - 2 or x1 > width - MARGIN_PT + 2]
        assert not off, f"page {page['number']}: words outside the margins: {off[:10]}"


def test_no_word_is_drawn_over_another(pdf_pages):
    """The PDF's tables have a fixed layout with widths worked out from the cells' text (tco_pdf.column_widths): a
    figure wider than its column would run into the next cell, inside the margins. No two words' boxes may cross."""
    for page in pdf_pages:
        boxes = page["boxes"]
        crossing = [
            (a[4], b[4])
            for i, a in enumerate(boxes)
            for b in boxes[i + 1 :]
            if min(a[2], b[2]) - max(a[0], b[0]) > 0.5 and min(a[3], b[3]) - max(a[1], b[1]) > 0.5
        ]
        assert not crossing, f"page {page['number']}: words drawn over each other: {crossing[:10]}"


def test_the_png_pages_exist_and_are_not_blank(pdf_pages):
    for page in pdf_pages:
        assert page["png"] is not None and page["png"].stat().st_size > 0
        image = Image.open(page["png"]).convert("L")
        assert image.size[0] < image.size[1]  # portrait
        inked = sum(count for level, count in enumerate(image.histogram()) if level < 200)
        assert inked > 0.01 * image.size[0] * image.size[1], f"page {page['number']} is (nearly) blank"
    # A chart page has colour: the trend's stacked bars are the providers' colours, not greys.
    coloured = [page for page in pdf_pages if _has_colour(Image.open(page["png"]).convert("RGB"))]
    assert coloured


def _has_colour(image) -> bool:
    return any(max(rgb) - min(rgb) > 80 for count, rgb in image.getcolors(maxcolors=1 << 20) if count > 50)


def test_a_published_version_prints_its_version_and_its_figures(october, tmp_path):
    snapshot = report_publish(report=october, by=User.objects.get(username="cfo"))
    pages = _pages(report_pdf(TcoReport.from_json(snapshot.figures), snapshot=snapshot), tmp_path, drawn=False)
    assert f"Published version {snapshot.version}" in pages[0]["text"] and "by cfo" in _flat(pages[0]["text"])
    assert f"· published version {snapshot.version}" in _flat(pages[1]["text"])
    assert display.money_exact(october.summary["cost"]) in _flat(pages[0]["text"])


def test_a_month_with_no_data_says_so_and_draws_no_chart(loaded, tmp_path):
    empty = tco_report(User.objects.get(username="cfo"), dt.date(2025, 1, 1), today=TODAY)
    charts = tco_charts.section_charts(empty)
    # No spend: nothing moved, no trend, no cost per outcome, no saving. (Caps and contracts are states as of the
    # month's end: the organisation's cap is there, with nothing spent, and is charted as such.)
    for key in ("summary", "spend", "unit_economics", "data_quality", "savings"):
        assert not charts[key]["charts"] and charts[key]["empty"], key
    text = _flat(" ".join(page["text"] for page in _pages(report_pdf(empty), tmp_path, drawn=False)))
    assert "No spend was recorded for January 2025" in text
    for key in ("summary", "spend", "savings"):
        assert _flat(charts[key]["empty"]) in text


def test_charts_are_self_contained_svgs_the_same_for_the_same_rows(october):
    for entry in tco_charts.section_charts(october).values():
        for chart in entry["charts"]:
            assert chart.svg.lstrip().startswith("<?xml") and "<svg" in chart.svg
            assert "<style" not in chart.svg and "<script" not in chart.svg and 'href="http' not in chart.svg
            assert chart.title in chart.svg  # text stays text (svg.fonttype none)
            assert chart.data_uri.startswith("data:image/svg+xml;base64,")
    tco_charts._drawn_once.cache_clear()
    again = tco_charts.movers_chart(october.rows("movers"), currency=october.currency)
    assert again.svg == tco_charts.section_charts(october)["summary"]["charts"][0].svg
