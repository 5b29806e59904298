"""Headless Chromium (Debian's package) driven by Playwright against pytest-django's live server."""

import os

import pytest
from playwright.sync_api import sync_playwright

from tests.conftest import reseed_reference_data

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"]


@pytest.fixture(scope="session")
def browser():
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield browser
        browser.close()


@pytest.fixture
def page(browser, live_server):
    # The live server needs committed data, so these tests flush the database after each one, seeded
    # providers and catalog prices included: seed them again (both are idempotent).
    reseed_reference_data()
    context = browser.new_context(base_url=live_server.url, accept_downloads=True)
    page = context.new_page()
    # The UI must work offline: any request leaving the live server fails the test.
    outside = []
    # (A blob: URL of the server's own origin is in the page's memory, e.g. a web worker's script.)
    page.on(
        "request",
        lambda r: outside.append(r.url) if not r.url.startswith((live_server.url, f"blob:{live_server.url}")) else None,
    )
    # The Content-Security-Policy forbids inline scripts and foreign sources: anything it refuses fails the test,
    # so every browser test checks that the pages it opens work under it.
    refused = []
    page.on("console", lambda m: refused.append(m.text) if "Content Security Policy" in m.text else None)
    yield page
    context.close()
    assert not outside, f"the page fetched from outside the server: {outside}"
    assert not refused, f"the Content-Security-Policy refused: {refused}"


def sign_in(page, username: str, password: str) -> None:
    page.goto("/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")
