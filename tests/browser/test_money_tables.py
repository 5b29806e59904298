"""Every table with money in it, on a desktop (1440 px) and a phone (390 px), over the demo organisation's pages:
no money cell is cut ("$22,6…" at the card's edge) and no column is hidden.

What is measured, in the browser, per table (`table.data`) of each page:
- every column is rendered: no header cell and no body cell is `display: none` or `visibility: hidden`;
- every money cell (a cell whose text holds an amount, "$1,043.12", "€12.50/M") fits in its cell (scrollWidth ≤
  clientWidth) and its text lies wholly inside the viewport and inside every box that clips it (the table's
  scrolling card), as the page first shows it: a number is never cut, nor pushed past the right edge;
- on a desktop the whole table fits its card: every column shows without scrolling sideways.

One demo for the whole walk, as in test_guide_screenshots: the run's copy of it for tests/demo_helpers.py's TODAY
(tests/demo_snapshot.py), loaded once a run by whichever module asks first.
"""

import datetime as dt

import pytest

from finops.core.months import month_of
from finops.models import Account, Cap, Contract, Provider
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

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1440, "height": 900}

# Runs in the page: one finding per problem, each naming the table, the column and the text.
MEASURE = r"""() => {
  const MONEY = /[$€£¥]\s?\d/;
  const findings = [];
  const view = {left: 0, right: document.documentElement.clientWidth};
  const clippers = el => {
    const boxes = [];
    for (let node = el.parentElement; node && node !== document.body; node = node.parentElement) {
      const style = getComputedStyle(node);
      if (style.overflowX !== 'visible') boxes.push(node);
    }
    return boxes;
  };
  const textBox = cell => {
    const range = document.createRange();
    range.selectNodeContents(cell);
    const rects = [...range.getClientRects()].filter(r => r.width > 0);
    if (!rects.length) return null;
    return {left: Math.min(...rects.map(r => r.left)), right: Math.max(...rects.map(r => r.right))};
  };
  const tables = [...document.querySelectorAll('table.data')].filter(
    t => t.offsetParent !== null || t.getClientRects().length);
  let moneyCells = 0;
  tables.forEach((table, index) => {
    const name = (table.dataset.table || `table #${index + 1}`);
    const headers = [...table.querySelectorAll('thead th')].map(th => th.textContent.trim());
    for (const cell of table.querySelectorAll('th, td')) {
      const style = getComputedStyle(cell);
      if (style.display === 'none' || style.visibility === 'hidden')
        findings.push({table: name, problem: 'column not rendered', text: cell.textContent.trim().slice(0, 40)});
    }
    for (const row of table.querySelectorAll('tbody tr')) {
      [...row.children].forEach((cell, column) => {
        const text = cell.innerText.trim();
        if (!MONEY.test(text)) return;
        moneyCells += 1;
        const where = {table: name, column: headers[column] || column, text: text.slice(0, 40)};
        if (cell.scrollWidth > cell.clientWidth + 1) findings.push({...where, problem: 'overflows its cell'});
        const box = textBox(cell);
        if (!box) return;
        if (box.left < view.left - 1 || box.right > view.right + 1)
          findings.push({...where, problem: 'outside the viewport', box});
        for (const clip of clippers(cell)) {
          const c = clip.getBoundingClientRect();
          const left = c.left + clip.clientLeft, right = left + clip.clientWidth;
          if (box.left < left - 1 || box.right > right + 1) {
            findings.push({...where, problem: 'cut by its scrolling box', box, clip: {left, right}});
            break;
          }
        }
      });
    }
  });
  const wide = tables.filter(t => {
    const scroller = t.closest('.table-scroll') || t.parentElement;
    return scroller.scrollWidth > scroller.clientWidth + 1;
  }).map(t => t.dataset.table || 'table');
  return {findings, moneyCells, tables: tables.length, wide};
}"""


def _pages() -> list[str]:
    last_month = month_of(month_of(TODAY) - dt.timedelta(days=1))
    bedrock = Account.objects.get(name="bedrock-us-east-1")
    return [
        "/",
        "/teams/",
        "/teams/support/",
        "/workloads/",
        "/workloads/support-agent/",
        "/providers/",
        f"/providers/{Provider.objects.get(slug='openai').slug}/",
        "/explore/",
        "/unattributed/",
        "/caps/",
        f"/caps/{Cap.objects.order_by('pk').first().pk}/",
        "/scorecard/",
        "/contracts/",
        f"/contracts/{Contract.objects.order_by('pk').first().pk}/",
        f"/reports/{last_month:%Y-%m}/",
        "/savings/",
        "/whatif/",
        "/offerings/",
        "/sources/",
        f"/sources/{bedrock.pk}/",
    ]


def _walk(page, viewport: dict, paths: list[str]) -> tuple[list, int]:
    page.set_viewport_size(viewport)
    problems, money_cells = [], 0
    for path in paths:
        response = page.goto(path)
        assert response.status == 200, (path, response.status)
        page.wait_for_selector("main h1")
        found = page.evaluate(MEASURE)
        money_cells += found["moneyCells"]
        problems += [{"page": path, **f} for f in found["findings"]]
        if viewport is DESKTOP:  # a desktop has the room: every column shows without scrolling the card
            problems += [
                {"page": path, "table": name, "problem": "scrolls sideways at 1440 px"} for name in found["wide"]
            ]
    return problems, money_cells


def test_no_money_cell_is_cut_and_no_column_hidden_on_a_desktop_or_a_phone(page, tmp_path_factory):
    demo_loaded(TODAY, tmp_path_factory)
    paths = _pages()
    signed_in(page, "admin")  # the walk opens "/" first
    report = {}
    for label, viewport in (("1440 px", DESKTOP), ("390 px", PHONE)):
        problems, money_cells = _walk(page, viewport, paths)
        assert money_cells > 500, money_cells  # the walk really measured the money tables
        report[label] = problems
    assert report == {"1440 px": [], "390 px": []}, "\n".join(
        f"{label} {p}" for label, problems in report.items() for p in problems[:40]
    )
