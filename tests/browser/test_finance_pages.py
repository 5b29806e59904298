"""Issue 9's walk, at a desktop's width and a phone's: the finance user opens last month on the overview, a
workload of unknown cost ("—", never $0), Explore by day (one series) and the unattributed page, and nothing
loads from another origin (the `page` fixture fails the test on any such request)."""

import datetime as dt
import io

import pytest

from finops.core.months import month_of
from finops.models import AttributionRule, Workload
from finops.spend.services.attribution import history_reattribute
from ingest.services import usage_file_import

from .conftest import signed_in

pytestmark = pytest.mark.browser


@pytest.fixture
def two_months(openai_account, support_agent, search_ranker, fiona):
    """Last month and this one: two priced workloads, a fine-tune nobody has a price for, and a sandbox key no
    rule claims (unattributed)."""
    Workload.objects.create(
        team=support_agent.team, name="Ticket router", slug="ticket-router", latency_profile="realtime"
    )
    today = dt.datetime.now(dt.UTC).date()
    day, rows = (
        month_of(month_of(today) - dt.timedelta(days=1)),
        ["day,model,input_tokens,output_tokens,cost,project,api_key"],
    )
    while day < today:
        rows += [
            f"{day},gpt-5-mini,1000000,100000,4.00,support,key_support",
            f"{day},gpt-5,1000000,100000,9.00,search,key_search",
            f"{day},acme-router-ft-8b,3000000,10000,,router,key_router",
            f"{day},gpt-5-nano,50000,1000,0.50,,key_personal_jdoe",
        ]
        day += dt.timedelta(days=1)
    assert (
        usage_file_import(account=openai_account, stream=io.BytesIO("\n".join(rows).encode()), file_name="u.csv").status
        == "succeeded"
    )
    for priority, (slug, project) in enumerate(
        (("support-agent", "support"), ("search-ranker", "search"), ("ticket-router", "router")), 1
    ):
        AttributionRule.objects.create(workload=Workload.objects.get(slug=slug), priority=priority, project=project)
    history_reattribute()


def _open_menu_if_collapsed(page):
    toggle = page.locator(".menu-toggle")
    if toggle.is_visible():
        toggle.click()


def _fits(page, width: int):
    assert page.evaluate("document.documentElement.scrollWidth") <= width, "the page scrolls sideways"


@pytest.mark.parametrize("width", [1440, 390])
def test_finance_reads_last_month_an_unknown_cost_explore_by_day_and_the_unattributed_page(page, width, two_months):
    page.set_viewport_size({"width": width, "height": 900})
    signed_in(page, "fiona", "/")
    page.wait_for_selector(".chart .main-svg", timeout=10_000)

    # Last month on the overview, chosen in the period picker (a preset applies at once).
    page.select_option("select[name=period]", "last-month")
    page.wait_for_url("**/?period=last-month")
    last_month = month_of(month_of(dt.datetime.now(dt.UTC).date()) - dt.timedelta(days=1))
    assert page.inner_text("[data-testid=period-range]").startswith(last_month.isoformat())
    page.wait_for_selector(".chart .main-svg", timeout=10_000)
    _fits(page, width)
    if width <= 400:
        assert not page.locator("nav[aria-label=Main] a", has_text="Explore").is_visible()  # the menu is collapsed

    # The workload of unknown cost: listed apart, and its page reads "—" with the unpriced tokens, never $0.
    page.click("[data-table=unknown_cost_workloads] a:has-text('Ticket router')")
    page.wait_for_selector("h1:has-text('Ticket router')")
    assert "period=last-month" in page.url
    spend = page.inner_text("[data-testid=period-spend]")
    assert spend.startswith("—") and "tokens unpriced" in spend and "$0.00" not in page.inner_text("main")
    _fits(page, width)

    # Explore by day: one series, not one per day.
    _open_menu_if_collapsed(page)
    page.click("nav[aria-label=Main] a:has-text('Explore')")
    page.select_option("select[name=group_by]", "day")
    page.click("form.explore-form button[type=submit]")
    page.wait_for_selector("[data-figure=chart-explore] .main-svg", timeout=10_000)
    assert page.evaluate("document.querySelector('[data-figure=chart-explore]').data.length") == 1
    _fits(page, width)

    # The unattributed card leads to the unattributed spend by key; finance writes no rules, so the page says an
    # admin's has the "Create a rule" link rather than offering one that would answer 403.
    _open_menu_if_collapsed(page)
    page.click("nav[aria-label=Main] a:has-text('Overview')")
    page.click("[data-testid=unattributed-tile]")
    page.wait_for_selector("h1:has-text('Unattributed')")
    assert "key_personal_jdoe" in page.inner_text("main")
    assert page.locator("a:has-text('Create a rule')").count() == 0 and "an admin's page has" in page.inner_text("main")
    _fits(page, width)
