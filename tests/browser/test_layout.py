"""The page shell on a phone and on a desktop: the menu folds behind a button on a narrow screen, nothing makes the
page scroll sideways (tables scroll inside their card), and the charts' axes read like the rest of the app."""

import datetime as dt
import io
import re

import pytest

from ingest.services import usage_file_import

from .conftest import signed_in

pytestmark = pytest.mark.browser

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1440, "height": 900}
NAV = [
    "Overview",
    "Teams",
    "Workloads",
    "Providers",
    "Explore",
    "Caps",
    "Scorecard",
    "Contracts",
    "Reports",
    "Rules",
    "Sources",
    "Savings",
    "Alerts",
]


@pytest.fixture
def usage(openai_account):
    """Two days of spend, $1,200 on the larger, and tokens nobody could price: wide tables, a chart in thousands."""
    days = [(dt.datetime.now(dt.UTC) - dt.timedelta(days=n)).date().isoformat() for n in (1, 2)]
    csv = "day,model,input_tokens,output_tokens,cost\n" + "".join(
        f"{day},gpt-5-mini,{n * 40_000_000},9000000,{n * 600}.00\n{day},an-in-house-model-nobody-priced,3400000,1000,\n"
        for n, day in enumerate(days, start=1)
    )
    run = usage_file_import(account=openai_account, stream=io.BytesIO(csv.encode()), file_name="usage.csv")
    assert run.status == "succeeded", run.error


def open_as_ada(page, viewport: dict, path: str) -> None:
    page.set_viewport_size(viewport)
    signed_in(page, "ada", path)
    page.wait_for_selector("h1")


def page_scrolls_sideways(page) -> bool:
    return page.evaluate("document.documentElement.scrollWidth > document.documentElement.clientWidth")


def menu_links(page) -> list[str]:
    return [text.strip() for text in page.locator("#site-menu a:visible, #site-menu button:visible").all_inner_texts()]


# /explore/ is not here: its table has money, and on a phone a money table folds each row into labelled figures
# rather than scrolling (tests/browser/test_money_tables.py measures it); the sources' unpriced-usage table scrolls.
@pytest.mark.parametrize("path", ["/sources/"])
def test_on_a_phone_the_page_never_scrolls_sideways_and_its_tables_scroll_in_their_card(page, ada, usage, path):
    open_as_ada(page, PHONE, path)
    page.wait_for_load_state("load")
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    assert not page_scrolls_sideways(page)
    # Tables wider than the phone stay inside it: each scrolls by itself instead.
    tables = page.eval_on_selector_all(
        "table.data",
        """tables => tables.map(t => {
        const box = (t.closest('.table-scroll') || t).getBoundingClientRect();
        return {left: box.left, right: box.right, content: t.scrollWidth};
    })""",
    )
    assert any(t["content"] > PHONE["width"] for t in tables), tables  # the test really has a wide table
    assert all(0 <= t["left"] and t["right"] <= PHONE["width"] for t in tables), tables


def test_on_a_phone_the_menu_is_folded_and_opens_on_a_click_with_every_link(page, ada):
    open_as_ada(page, PHONE, "/sources/")
    toggle = page.get_by_role("button", name="Menu")
    assert toggle.is_visible() and toggle.get_attribute("aria-expanded") == "false"
    assert menu_links(page) == []
    assert not page_scrolls_sideways(page)

    toggle.click()
    assert toggle.get_attribute("aria-expanded") == "true"
    assert menu_links(page) == [*NAV, "Audit", "Admin", "API", "Sign out"]
    assert page.locator("#site-menu .user").inner_text() == "ada · Admin"
    assert not page_scrolls_sideways(page)

    page.get_by_role("link", name="Explore").click()
    page.wait_for_selector("h1:has-text('Explore')")
    assert page.get_by_role("button", name="Menu").get_attribute("aria-expanded") == "false"  # a new page starts folded


def test_on_a_phone_the_menu_works_from_the_keyboard(page, ada):
    open_as_ada(page, PHONE, "/explore/")
    page.get_by_role("button", name="Menu").focus()
    page.keyboard.press("Enter")
    assert page.locator("nav a", has_text="Sources").is_visible()
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Overview"
    page.keyboard.press("Escape")
    assert not page.locator("nav a", has_text="Sources").is_visible()
    assert (
        page.evaluate("document.activeElement.getAttribute('aria-controls')") == "site-menu"
    )  # focus back on the button


def test_on_a_desktop_every_link_shows_without_a_click(page, ada):
    open_as_ada(page, DESKTOP, "/sources/")
    assert not page.get_by_role("button", name="Menu").is_visible()
    assert [text.strip() for text in page.locator("nav a").all_inner_texts()] == NAV
    assert all(page.locator("nav a", has_text=label).first.is_visible() for label in NAV)
    assert (
        page.get_by_role("link", name="API", exact=True).is_visible()
        and page.get_by_role("button", name="Sign out").is_visible()
    )
    header = page.locator(".topbar").bounding_box()
    assert header["height"] <= 60  # one line
    assert not page_scrolls_sideways(page)


def test_the_spend_chart_counts_money_in_thousands_with_the_currency_symbol(page, ada, usage):
    open_as_ada(page, DESKTOP, "/explore/")
    page.wait_for_selector("[data-figure=chart-explore] .main-svg", timeout=10_000)
    ticks = page.locator("[data-figure=chart-explore] .ytick text").all_text_contents()
    assert "$1.2k" in ticks or "$1k" in ticks, ticks
    assert all(re.fullmatch(r"\$\d+(\.\d+)?k?", tick) for tick in ticks), ticks  # never "1,200" nor "1.2G"


def test_without_javascript_the_links_wrap_in_the_header_on_a_phone(browser, live_server, ada):
    context = browser.new_context(base_url=live_server.url, java_script_enabled=False, viewport=PHONE)
    try:
        page = context.new_page()
        page.base_url = live_server.url
        signed_in(page, "ada", "/sources/")
        assert not page.locator(".menu-toggle").is_visible()
        assert menu_links(page) == [*NAV, "Audit", "Admin", "API", "Sign out"]
        assert not page_scrolls_sideways(page)
    finally:
        context.close()
