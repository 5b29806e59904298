"""Headless Chromium (Debian's package) driven by Playwright against pytest-django's live server."""

import os

import pytest
from django.conf import settings
from django.test import Client
from playwright.sync_api import sync_playwright

from finops.models import User

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
    # The live server needs committed data, so these tests flush the database after each one; the seeded providers
    # and catalog prices come back in that test's teardown (tests/conftest.py pytest_runtest_teardown), so they are
    # there when the next one starts. (Seeding them again here, over rows already there, rewrote every catalog
    # price: ~0.5 s of CPU a test.)
    context = browser.new_context(base_url=live_server.url, accept_downloads=True)
    page = context.new_page()
    page.base_url = live_server.url
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


def signed_in(page, username: str, path: str | None = None) -> None:
    """`username` signed in as the sign-in form would leave them (Django's `login()`: a session, its cookie in the
    browser), then at `path` if given. The form itself is walked by tests/browser/test_shell.py (the right and a
    wrong password) and tests/browser/test_unattributed_and_explore.py (back to the page asked for); everywhere
    else it cost a login page and the overview it lands on (Plotly's chart drawn) that the test never looked at."""
    client = Client()
    client.force_login(User.objects.get(username=username))
    cookie = client.cookies[settings.SESSION_COOKIE_NAME]
    page.context.add_cookies([{"name": cookie.key, "value": cookie.value, "url": page.base_url}])
    if path is not None:
        page.goto(path)


def sign_in(page, username: str, password: str) -> None:
    """Through the sign-in form, as a person does: the tests of the form itself (elsewhere `signed_in`)."""
    page.goto("/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")
