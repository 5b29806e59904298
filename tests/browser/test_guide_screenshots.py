"""The role guides' screenshots (docs/guides/), taken from the real pages of the demo organisation.

The demo (docs/demo.md) is loaded through the real import code for a window ending the day before TODAY (the module is
held on that day: tests/clock.py), then each role's demo user signs in and walks the pages their guide describes: the
CFO (finance), the platform admin and the Support Platform lead. Each page is checked for what that user relies on
(its heading and a figure) before it is saved as a 1440-px-wide PNG: into docs/guides/img/, overwriting the previous
one, when GUIDE_IMAGES=1 (`make guide-images`; the guides link those files), else into the run's temporary folder, so
that a test run leaves the checkout as it found it. One test, one demo: the three walks share the run's copy of it for
tests/demo_helpers.py's TODAY (tests/demo_snapshot.py), so the guides' pictures show that day's demo.
"""

import datetime as dt
import os
import re
from pathlib import Path

import pytest

from finops.core.months import month_of
from finops.models import Account, Cap, Contract
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

GUIDE_IMAGES = Path(__file__).resolve().parents[2] / "docs" / "guides" / "img"
WIDTH = 1440
MONEY = re.compile(r"\$\d")


def _shot(page, name: str) -> None:
    page.screenshot(path=str(page.images / f"{name}.png"), full_page=False)
    page.captured.append(name)


def _open(page, path: str, heading: str) -> None:
    page.goto(path)
    assert heading in page.inner_text("main h1")


def _chart(page) -> None:
    page.wait_for_selector(".chart .main-svg", timeout=15_000)


def _sign_in_as(page, username: str) -> None:
    page.context.clear_cookies()
    signed_in(page, username)


def _finance(page) -> None:
    _sign_in_as(page, "cfo")
    _open(page, "/", "Overview")
    assert MONEY.search(page.inner_text("[data-testid=period-spend]"))
    assert MONEY.search(page.inner_text("[data-testid=unattributed-tile]"))  # never hidden, never $0 by omission
    _chart(page)
    _shot(page, "finance-overview")

    _open(page, "/reports/", "TCO report")
    last_month = month_of(month_of(TODAY) - dt.timedelta(days=1))
    assert page.inner_text("[data-testid=report-month]").strip() == last_month.strftime("%B %Y")
    for kind in ("pdf", "csv", "xlsx"):
        assert page.locator(f"[data-testid=download-{kind}]").is_visible()
    _shot(page, "finance-report")

    _open(page, "/contracts/", "Contracts")
    assert page.locator("table[data-table=contracts] tbody tr").count() == Contract.objects.count() > 0
    _chart(page)
    _shot(page, "finance-contracts")

    _open(page, "/scorecard/", "Quarterly scorecard")
    assert page.locator("[data-testid=scorecard] tbody tr").count() > 0
    _shot(page, "finance-scorecard")


def _platform(page) -> None:
    _sign_in_as(page, "admin")
    _open(page, "/sources/", "Sources")
    body = page.inner_text("main")
    for account in Account.objects.values_list("name", flat=True):
        assert account in body
    assert page.locator("text=Connect an API account").first.is_visible()
    _shot(page, "platform-sources")

    _open(page, "/sources/new/", "Connect an API account")
    page.select_option("select[name=connector]", "openai_api")
    assert "Admin key" in page.inner_text("main")
    _shot(page, "platform-connect")

    bedrock = Account.objects.get(name="bedrock-us-east-1")
    _open(page, f"/sources/{bedrock.pk}/", "bedrock-us-east-1")
    assert "Succeeded" in page.inner_text("main") and "Data up to" in page.inner_text("main")
    _shot(page, "platform-source-detail")

    _open(page, "/rules/", "Attribution rules")
    assert page.locator("main table tbody tr").count() > 0
    _shot(page, "platform-rules")

    _open(page, "/caps/", "Spend caps")
    for cap in Cap.objects.values_list("name", flat=True):
        assert cap in page.inner_text("main")
    _shot(page, "platform-caps")

    _open(page, "/alerts/", "Alerts")
    _shot(page, "platform-alerts")

    _open(page, "/offerings/", "Offerings")
    assert page.locator("main table tbody tr").count() > 0
    _shot(page, "platform-offerings")


def _team_lead(page) -> None:
    _sign_in_as(page, "support-lead")
    _open(page, "/teams/support/", "Support Platform")
    assert MONEY.search(page.inner_text("[data-testid=period-spend]"))
    _chart(page)
    _shot(page, "lead-team")

    _open(page, "/workloads/", "Workloads")
    body = page.inner_text("main")
    assert "Support agent" in body and "Lead scoring" not in body  # their team's workloads, not Sales'
    _shot(page, "lead-workloads")

    _open(page, "/workloads/support-agent/", "Support agent")
    assert "per ticket resolved" in page.inner_text("main")  # its cost per outcome, against the target
    _chart(page)
    _shot(page, "lead-workload")

    _open(page, "/caps/", "Spend caps")
    _shot(page, "lead-caps")

    _open(page, "/scorecard/", "Quarterly scorecard")
    assert "Support agent" in page.inner_text("[data-testid=scorecard]")
    _shot(page, "lead-scorecard")

    _open(page, "/savings/", "Routing savings")
    _shot(page, "lead-savings")

    assert page.goto("/teams/sales/").status == 404  # another team's page does not exist for them


def test_each_roles_guide_pages_show_what_that_role_relies_on_and_are_captured(page, tmp_path_factory):
    page.images = GUIDE_IMAGES if os.environ.get("GUIDE_IMAGES") == "1" else tmp_path_factory.mktemp("guide-images")
    page.images.mkdir(parents=True, exist_ok=True)
    page.captured = []
    demo_loaded(TODAY, tmp_path_factory)
    page.set_viewport_size({"width": WIDTH, "height": 900})
    _finance(page)
    _platform(page)
    _team_lead(page)
    assert len(page.captured) == 17 and {f"{name}.png" for name in page.captured} <= {
        path.name for path in page.images.glob("*.png")
    }  # every page the three guides show was captured, each under its own name
