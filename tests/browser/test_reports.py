"""The Reports page in a browser (issue 14), on the demo organisation: finance opens /reports/ and reads every
section with its charts under the strict Content-Security-Policy (tests/browser/conftest.py fails on any refusal);
its print reads like the PDF; a team lead is told the page does not exist."""

import datetime as dt

import pytest

from finops.reports.tco_tables import SECTIONS, TITLES
from tests.clock import holding
from tests.demo_helpers import TODAY
from tests.demo_snapshot import demo_loaded

from .conftest import signed_in

pytestmark = pytest.mark.browser

# The demo of tests/demo_helpers.py's TODAY, the day most demo modules read: the run's one snapshot of it
# (tests/demo_snapshot.py) serves this module too, rather than a second load of the whole demo for the real date.
# The pages read "today" (the overview's last 30 days, the report's last full month, a source's freshness), so the
# module's tests are held on that day (tests/clock.py): they see the demo as on the day it was loaded for.
_held_on_today = holding(TODAY)
CHARTED = {
    "summary": "movers",
    "spend": "trend",
    "unit_economics": "unit_economics",
    "commitments": "commitments",
    "caps": "caps",
    "data_quality": "reconciliation",
    "savings": "savings",
}


@pytest.fixture
def demo(reseeded, tmp_path_factory):
    # The demo of TODAY: its window holds the last full month (October) and the one before (the movers' comparison).
    return demo_loaded(TODAY, tmp_path_factory)


def test_finance_reads_every_section_with_its_charts_and_a_team_lead_gets_404(page, demo, tmp_path):
    signed_in(page, "cfo", "/reports/")
    last_full = (TODAY.replace(day=1) - dt.timedelta(days=1)).strftime("%Y-%m")
    assert page.url.endswith(f"/reports/{last_full}/")
    page.wait_for_selector("[data-section=savings]")
    for section in SECTIONS:
        box = page.locator(f"section[data-section={section.key}]")
        assert box.locator("h2").inner_text().endswith(section.title)
        for table in section.tables:
            assert box.locator(f"[data-report-table={table.name}] h3").inner_text() == TITLES[table.name]
        # Each section draws its chart, or says in a sentence why it has none.
        charts, sentence = (
            box.locator(f"figure[data-chart={CHARTED[section.key]}] img"),
            box.locator("[data-chart-empty]"),
        )
        assert charts.count() + sentence.count() == 1, section.key
    # The demo's month has figures for these charts: each is an image the browser decoded and laid out full width.
    for name in ("movers", "trend", "unit_economics", "commitments", "caps", "savings"):
        image = page.locator(f"figure[data-chart={name}] img")
        assert image.get_attribute("src").startswith("data:image/svg+xml;base64,")
        assert image.evaluate(
            "img => img.complete && img.naturalWidth > 300 && img.getBoundingClientRect().height > 60"
        ), name
        assert "Biggest movers" in page.locator("figure[data-chart=movers] img").get_attribute("alt")
    figures = page.locator("dl.figures[data-table=summary]")
    assert (
        "Forecast next month" in figures.inner_text() and figures.locator(".fig").count() == 15
    )  # with quarter and year to date

    # A phone: the charts and tables scroll inside their cards, never the page.
    page.set_viewport_size({"width": 390, "height": 844})
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    # Ctrl-P: the navigation, the month picker and the publish form are left out; the charts stay.
    page.emulate_media(media="print")
    assert not page.locator(".topbar").is_visible() and not page.locator("form.period-picker").is_visible()
    assert page.locator("figure[data-chart=trend] img").is_visible()
    page.pdf(path=str(tmp_path / "print.pdf"), format="A4")
    assert (tmp_path / "print.pdf").read_bytes().startswith(b"%PDF-")
    page.emulate_media(media="screen")

    page.context.clear_cookies()
    signed_in(page, "support-lead")
    for url in ("/reports/", f"/reports/{last_full}/", f"/reports/{last_full}/report.pdf"):
        assert page.request.get(url).status == 404, url
