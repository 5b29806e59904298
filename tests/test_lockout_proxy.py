"""Sign-in lockout behind a reverse proxy (issue 26), over real HTTP to a live server: every request connects from
127.0.0.1 (the proxy) and carries X-Forwarded-For as the proxy wrote it. The lockout is keyed on the user name and
the real client address, so one person's wrong passwords lock out no one else."""

import re

import pytest
import requests
from django.core.cache import cache

from tests.conftest import make_user

PASSWORD = "correct horse battery staple"
ATTACKER, ADA_AT_HOME = "203.0.113.7", "198.51.100.20"


@pytest.fixture
def ada(transactional_db, settings):
    settings.FINOPS_TRUSTED_PROXIES = 1  # Caddy in front, as docker-compose runs it
    cache.clear()
    user = make_user("ada", "admin")
    user.set_password(PASSWORD)
    user.save()
    make_user("bob", "finance")
    return user


def sign_in(live_server, username, password, forwarded_for) -> int:
    """A fresh browser through the proxy: the login page for its CSRF token, then the form's POST."""
    browser = requests.Session()
    headers = {"X-Forwarded-For": forwarded_for}
    page = browser.get(f"{live_server.url}/accounts/login/", headers=headers, timeout=30)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
    answer = browser.post(
        f"{live_server.url}/accounts/login/",
        timeout=30,
        allow_redirects=False,
        headers={**headers, "Referer": f"{live_server.url}/accounts/login/"},
        data={"username": username, "password": password, "csrfmiddlewaretoken": token},
    )
    return answer.status_code


def test_wrong_passwords_through_the_proxy_lock_only_that_user_from_that_client(live_server, ada):
    # The attacker writes their own X-Forwarded-For; the proxy appends the address it saw: only that one is believed.
    for attempt in range(5):
        sign_in(live_server, "ada", f"guess-{attempt}", f"10.{attempt}.0.1, {ATTACKER}")
    for attempt in range(5):  # spraying other names from the same address
        sign_in(live_server, f"user{attempt}", "guess", ATTACKER)
    assert sign_in(live_server, "ada", PASSWORD, f"1.1.1.1, {ATTACKER}") == 429, "the attacker stays locked out"
    assert sign_in(live_server, "ada", PASSWORD, ADA_AT_HOME) == 302, "ada, from her own address, signs in"
    assert sign_in(live_server, "bob", "x-wrong", ATTACKER) == 200, "bob is not locked by ada's failures"


def test_with_no_trusted_proxy_the_header_is_ignored(live_server, ada, settings):
    settings.FINOPS_TRUSTED_PROXIES = 0
    for attempt in range(5):  # a direct client rotating a made-up header does not escape its lockout
        sign_in(live_server, "ada", f"guess-{attempt}", f"192.0.2.{attempt}")
    assert sign_in(live_server, "ada", PASSWORD, "192.0.2.99") == 429
