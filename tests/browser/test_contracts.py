"""Finance opens Contracts from the navigation: the auto-renewal coming up is the first thing on the page, before
the timeline and the table; its contract page draws the burn-down. Both fit a desktop and a phone."""

import datetime as dt
import io
from decimal import Decimal

import pytest

from finops.models import Contract, Provider
from ingest.services import usage_file_import

from .conftest import screenshot, signed_in

pytestmark = pytest.mark.browser


@pytest.fixture
def contracts(openai_account, fiona):
    today = dt.datetime.now(dt.UTC).date()
    day, rows = today - dt.timedelta(days=120), ["day,model,input_tokens,output_tokens,cost,project"]
    while day <= today:
        rows.append(f"{day},gpt-5-mini,1000,100,100.00,proj")
        day += dt.timedelta(days=1)
    assert (
        usage_file_import(account=openai_account, stream=io.BytesIO("\n".join(rows).encode()), file_name="u.csv").status
        == "succeeded"
    )
    openai = Provider.objects.get(slug="openai")
    Contract.objects.create(
        name="OpenAI fixed",
        provider=openai,
        start=today - dt.timedelta(days=60),
        end=today + dt.timedelta(days=300),
        commitment=Decimal(36_000),
        notice_days=30,
    )
    return Contract.objects.create(
        name="OpenAI enterprise",
        provider=openai,
        start=today - dt.timedelta(days=90),
        end=today + dt.timedelta(days=100),
        commitment=Decimal(40_000),
        auto_renew=True,
        notice_days=60,
    )


def _open_menu_if_collapsed(page):
    toggle = page.locator(".menu-toggle")
    if toggle.is_visible():
        toggle.click()


@pytest.mark.parametrize("width", [1440, 390])
def test_finance_sees_the_auto_renewal_first_and_the_burn_down_of_its_contract(page, width, contracts):
    page.set_viewport_size({"width": width, "height": 900})
    signed_in(page, "fiona", "/rules/")  # any page: its navigation (folded on a phone) leads to Contracts
    page.wait_for_selector("main")
    _open_menu_if_collapsed(page)
    page.click("nav >> text=Contracts")
    page.wait_for_selector("h1:has-text('Contracts')")

    sections = page.eval_on_selector_all("main section.card", "cards => cards.map(c => c.id)")
    assert sections[:3] == ["renewals", "timeline", "all-contracts"]
    renewal = page.locator("#renewals .renewal").first
    assert "OpenAI enterprise" in renewal.inner_text() and "40 days left" in renewal.inner_text()
    assert "OpenAI fixed" not in page.inner_text("#renewals")
    page.wait_for_selector("[data-figure=chart-contracts] .main-svg", timeout=10_000)
    assert page.evaluate("document.documentElement.scrollWidth") <= width, "the list scrolls sideways"
    screenshot(page, f"contracts-list-{width}.png")

    renewal.locator("a").first.click()
    page.wait_for_selector("h1:has-text('OpenAI enterprise')")
    page.wait_for_selector("[data-figure=chart-contract] .main-svg", timeout=10_000)  # the burn-down is drawn
    assert page.locator("[data-figure=chart-contract] .scatterlayer .trace").count() == 4
    assert "Edit" not in page.inner_text("main h1 + p")  # finance changes nothing
    assert page.evaluate("document.documentElement.scrollWidth") <= width, "the contract page scrolls sideways"
    screenshot(page, f"contracts-detail-{width}.png")


def test_an_admin_adds_a_contract_through_the_form_and_lands_on_its_page(page, ada, openai_account):
    page.set_viewport_size({"width": 390, "height": 900})
    signed_in(page, "ada", "/contracts/")
    page.wait_for_selector("text=No contracts yet")
    page.click("main >> text=Add the first contract")
    page.fill("input[name=name]", "OpenAI 2027")
    page.select_option("select[name=provider]", label="OpenAI")
    page.select_option("select[name=accounts]", label=f"OpenAI — {openai_account.name}")
    page.fill("input[name=start]", "2027-01-01")
    page.fill("input[name=end]", "2028-01-01")
    page.fill("input[name=commitment]", "120000")
    page.select_option("select[name=commitment_basis]", "monthly")
    page.check("input[name=auto_renew]")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390, "the form scrolls sideways"
    screenshot(page, "contracts-form-390.png")
    page.click("main button[type=submit]")

    page.wait_for_selector("h1:has-text('OpenAI 2027')")
    assert page.inner_text("h1 .badge") == "Not started"
    page.wait_for_selector("[data-figure=chart-contract] .main-svg", timeout=10_000)
    contract = Contract.objects.get(name="OpenAI 2027")
    assert (contract.commitment_basis, contract.auto_renew, list(contract.accounts.all())) == (
        "monthly",
        True,
        [openai_account],
    )
