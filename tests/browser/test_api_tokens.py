"""A person makes an API token on the tokens page, sees its secret once, uses it against the API, revokes it, and
the API refuses it (401); an admin finds both changes in the audit log."""

import json
import urllib.error
import urllib.request

import pytest

from .conftest import signed_in

pytestmark = pytest.mark.browser


def api_get(base_url: str, path: str, token: str) -> tuple[int, dict]:
    request = urllib.request.Request(base_url + path, headers={"Authorization": f"Token {token}"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 - the live test server
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def test_create_a_token_see_it_once_use_it_revoke_it_and_the_api_refuses_it(page, live_server, fiona, ada):
    signed_in(page, "fiona", "/")
    page.click("header >> text=API")
    page.wait_for_selector("text=No token yet")
    page.fill("input[name=name]", "Quarterly close sheet")
    page.select_option("select[name=scope]", "read")
    page.fill("input[name=days]", "30")
    page.click("text=Create token")

    secret = page.inner_text("#token-secret").strip()
    assert len(secret) >= 32 and "shown this once" in page.inner_text("#new-secret")
    status, me = api_get(live_server.url, "/api/v1/me", secret)
    assert status == 200 and me["username"] == "fiona"

    page.click("text=Back to your tokens")
    row = page.locator("#tokens tbody tr").first
    assert "Quarterly close sheet" in row.inner_text() and secret[:8] in row.inner_text()
    assert secret not in page.content()  # never shown again
    assert row.get_attribute("data-status") == "active" and "never" not in row.inner_text()  # last used: just now

    page.once("dialog", lambda dialog: dialog.accept())
    row.locator("text=Revoke").click()
    page.wait_for_selector("text=is revoked: it no longer works")
    assert page.locator("#tokens tbody tr").first.get_attribute("data-status") == "revoked"
    status, body = api_get(live_server.url, "/api/v1/me", secret)
    assert status == 401 and body["detail"] == "Invalid token."

    page.click("text=Sign out")
    signed_in(page, "ada", "/")
    page.click("header >> text=Audit")
    page.select_option("select[name=entity]", "token")
    page.click("#audit-filters >> text=Show")
    rows = page.locator("table.data tbody tr")
    assert rows.count() == 2 and secret not in page.content()
    assert "Revoked" in rows.nth(0).inner_text() and "Created" in rows.nth(1).inner_text()
    assert "fiona: Quarterly close sheet" in rows.nth(1).inner_text()
