"""The report's subscriptions in a browser: an admin reaches them from the Reports page, adds an address (the form
explains the day), changes its day and deactivates it; a recipient opens the email's unsubscribe link without
signing in, confirms, and is unsubscribed; a broken link says so."""

import pytest

from finops.models import ReportSubscription
from finops.notify.report_deliveries import unsubscribe_token
from finops.reports.services.subscriptions import subscription_add

from .conftest import screenshot, signed_in

pytestmark = pytest.mark.browser


def test_an_admin_adds_an_address_changes_its_day_and_deactivates_it(page, ada, fiona):
    signed_in(page, "ada", "/reports/")
    page.click("[data-testid=subscriptions]")
    assert page.url.endswith("/reports/subscriptions/")
    assert page.locator("tr[data-email='fiona@example.com']").inner_text().count("Subscribed by default (finance)") == 1
    assert (
        "The UTC day of each month the previous month's report is emailed"
        in page.locator("#add-subscription").inner_text()
    )

    page.fill("input[name=email]", "cfo@example.com")
    page.fill("input[name=day_of_month]", "7")
    page.click("#add-subscription button")
    assert "cfo@example.com will receive the report on day 7 of each month." in page.locator(".messages").inner_text()

    page.fill("input[name=email]", "CFO@example.com")
    page.click("#add-subscription button")
    assert "cfo@example.com is already subscribed." in page.locator(".error-text, .error").first.inner_text()

    row = page.locator("tr[data-email='cfo@example.com']")
    row.locator("select[name=day_of_month]").select_option("12")
    row.locator("button:has-text('Save')").click()
    assert "now receives the report on day 12" in page.locator(".messages").inner_text()
    page.locator("tr[data-email='cfo@example.com'] button:has-text('Deactivate')").click()
    assert "Unsubscribed on" in page.locator("tr[data-email='cfo@example.com']").inner_text()
    screenshot(page, "subscriptions-subscriptions.png")

    cfo = ReportSubscription.objects.get(email="cfo@example.com")
    assert (cfo.day_of_month, cfo.active) == (12, False)


def test_a_recipient_unsubscribes_from_the_emails_link_without_signing_in(page, ada):
    subscription = subscription_add(email="cfo@example.com", by=ada)
    token = unsubscribe_token(subscription)

    page.goto(f"/reports/unsubscribe/{token}/")
    assert "Stop emailing the monthly TCO report to cfo@example.com?" in page.locator("#unsubscribe").inner_text()
    assert ReportSubscription.objects.get(id=subscription.id).active
    screenshot(page, "subscriptions-confirm.png")
    page.click("button:has-text('Unsubscribe')")
    assert "cfo@example.com is unsubscribed" in page.locator("#unsubscribe").inner_text()
    assert not ReportSubscription.objects.get(id=subscription.id).active

    response = page.goto(f"/reports/unsubscribe/{token[:-3]}abc/")
    assert response.status == 400
    assert "This unsubscribe link is not valid" in page.locator("#unsubscribe").inner_text()
    screenshot(page, "subscriptions-tampered.png")
