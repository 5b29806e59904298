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
def playwright_driver():
    with sync_playwright() as playwright:
        yield playwright


@pytest.fixture(scope="session")
def browser_context(playwright_driver, live_server, tmp_path_factory):
    """One Chromium profile for the run's browser tests, each test in a page of its own with no cookies (see `page`).

    A fresh context per test (an incognito profile) made every test download Plotly's 4.8 MB script again and
    compile it from scratch: V8 keeps no code cache in an incognito profile. A profile on disk keeps both, and a
    page load with a chart cost about half the CPU (15 loads, each in a new context: 10.2-10.8 s of Chromium's CPU;
    each in a new page of one profile: 5.3 s). What a test could inherit from the one before is its cookies (its
    signed-in session), cleared before and after each test; the pages set no web storage and the server's pages
    are not cached (no validators), only the static files."""
    context = playwright_driver.chromium.launch_persistent_context(
        str(tmp_path_factory.mktemp("chromium-profile")),
        executable_path=CHROMIUM,
        args=ARGS,
        headless=True,
        base_url=live_server.url,
        accept_downloads=True,
    )
    yield context
    context.close()


@pytest.fixture(scope="session")
def browser(playwright_driver):
    """A browser for a test that needs a context of its own options (JavaScript off), launched only if one asks."""
    browser = playwright_driver.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
    yield browser
    browser.close()


@pytest.fixture
def page(browser_context, live_server):
    # The live server needs committed data, so these tests flush the database after each one; the seeded providers
    # and catalog prices come back in that test's teardown (tests/conftest.py pytest_runtest_teardown), so they are
    # there when the next one starts. (Seeding them again here, over rows already there, rewrote every catalog
    # price: ~0.5 s of CPU a test.)
    context = browser_context
    context.clear_cookies()  # signed out, whatever the test before did
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
    for other in context.pages:  # the test's page and any it opened (a link in a new tab)
        other.close()
    context.clear_cookies()
    assert not outside, f"the page fetched from outside the server: {outside}"
    assert not refused, f"the Content-Security-Policy refused: {refused}"


def screenshot(page, path: str) -> None:
    """A full-page image for a person to look at, only when BROWSER_SCREENSHOTS names a folder: no assertion reads
    these (the guides' images are tests/browser/test_guide_screenshots.py's), and a full-page PNG costs Chromium
    its rendering and encoding every run."""
    folder = os.environ.get("BROWSER_SCREENSHOTS")
    if folder:
        page.screenshot(path=os.path.join(folder, path), full_page=True)


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
