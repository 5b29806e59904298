"""A team lead creates a cap through the form and sees it listed with its progress bar and its burn-up; a lead
of another team can neither see nor edit it. The list and the cap page fit a desktop and a phone."""

import datetime as dt
import io

import pytest

from finops.models import AttributionRule, Cap
from finops.spend.services.attribution import history_reattribute
from ingest.services import usage_file_import

from .conftest import screenshot, signed_in

pytestmark = pytest.mark.browser
WIDTHS = {"desktop": 1440, "phone": 390}


@pytest.fixture
def support_spend(openai_account, support_agent):
    """$40 today on Support's agent (today is always in the cap's period)."""
    today = dt.datetime.now(dt.UTC).date().isoformat()
    csv = f"day,model,input_tokens,output_tokens,cost,project\n{today},gpt-5-mini,1000,100,40.00,support\n"
    assert (
        usage_file_import(account=openai_account, stream=io.BytesIO(csv.encode()), file_name="u.csv").status
        == "succeeded"
    )
    AttributionRule.objects.create(workload=support_agent, priority=1, project="support")
    history_reattribute()


def fits(page) -> bool:
    """Nothing wider than the viewport (tables scroll inside their cards)."""
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


def test_a_lead_creates_a_cap_sees_its_progress_and_another_team_cannot_reach_it(page, sam, tess, support_spend):
    signed_in(page, "sam", "/caps/")  # the navigation's Caps link is followed below, once the cap is made
    page.wait_for_selector("text=No caps yet")
    page.click("text=New cap")

    page.fill("input[name=name]", "Support monthly")
    page.select_option("select[name=scope]", "team:support")
    page.fill("input[name=amount]", "100")
    page.fill("input[name=thresholds]", "80, 50, 100")
    page.fill("textarea[name=recipients]", "sam@example.com, role:team_leads")
    page.click("main button[type=submit]")

    page.wait_for_selector("h1:has-text('Support monthly')")
    page.wait_for_selector("[data-figure=chart-cap] .main-svg", timeout=10_000)  # the burn-up rendered
    assert "$40.00" in page.inner_text(".tiles")
    cap = Cap.objects.get()
    assert (cap.team.slug, cap.thresholds, cap.created_by.username) == ("support", [50, 80, 100], "sam")

    page.click("nav >> text=Caps")
    card = page.locator(".cap-card", has_text="Support monthly")
    assert "$40.00 of $100.00 (40.0 %)" in card.inner_text()
    assert card.locator("[role=progressbar] .capbar-fill").get_attribute("style") == "width: 40.00%"

    for name, width in WIDTHS.items():
        page.set_viewport_size({"width": width, "height": 900})
        page.goto("/caps/")
        assert fits(page), f"the caps list overflows at {width} px"
        screenshot(page, f"caps-list-{name}.png")
        page.goto(f"/caps/{cap.pk}/")
        page.wait_for_selector("[data-figure=chart-cap] .main-svg", timeout=10_000)
        assert fits(page), f"the cap page overflows at {width} px"
        screenshot(page, f"caps-detail-{name}.png")

    page.context.clear_cookies()  # signed out
    signed_in(page, "tess", "/caps/")
    assert "Support monthly" not in page.inner_text("main")
    assert page.goto(f"/caps/{cap.pk}/").status == 404
    assert page.goto(f"/caps/{cap.pk}/edit/").status == 404
