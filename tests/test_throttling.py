"""Throttling (issue 16): wrong passwords lock a username and an address out for a while, with every failure logged
(never the password); the API slows down a runaway client with 429 and Retry-After."""

import logging

import pytest
from django.core.cache import cache
from rest_framework.throttling import SimpleRateThrottle, UserRateThrottle

from tests.conftest import make_user

LOGIN = "/accounts/login/"


@pytest.fixture
def ada_with_password(db):
    user = make_user("ada", "admin")
    user.set_password("correct horse battery staple")
    user.save()
    return user


def sign_in(client, username, password, address="203.0.113.7"):
    return client.post(LOGIN, {"username": username, "password": password}, REMOTE_ADDR=address)


def test_five_wrong_passwords_lock_the_username_out_even_for_the_right_one(client, ada_with_password, caplog):
    caplog.set_level(logging.WARNING)
    answers = [sign_in(client, "ada", f"guess-{attempt}").status_code for attempt in range(5)]
    assert answers == [200, 200, 200, 200, 429]  # the form again with its error, then the fifth failure locks
    locked = sign_in(client, "ada", "correct horse battery staple")
    assert locked.status_code == 429 and b"Too many failed sign-ins" in locked.content
    assert "_auth_user_id" not in client.session
    failures = [r.getMessage() for r in caplog.records if "login failure" in r.getMessage().lower()]
    assert len(failures) >= 5 and "ada" in failures[0]
    assert not any("guess-" in r.getMessage() or "correct horse" in r.getMessage() for r in caplog.records)


def test_the_lock_is_per_username_and_address_so_no_one_else_is_locked_out(client, ada_with_password):
    """Issue 26: keyed on the address alone, one person's failures with any usernames locked out everyone behind
    the same proxy (tests/test_lockout_proxy.py goes through one over HTTP)."""
    for attempt in range(5):
        sign_in(client, "ada", f"guess-{attempt}", address="198.51.100.1")
    assert sign_in(client, "ada", "correct horse battery staple", address="198.51.100.1").status_code == 429
    assert sign_in(client, "ada", "correct horse battery staple", address="192.0.2.99").status_code == 302
    client.logout()
    make_user("bob", "finance").set_password("x")
    assert sign_in(client, "bob", "whatever", address="198.51.100.1").status_code == 200


def test_a_success_before_the_limit_resets_the_count(client, ada_with_password):
    for attempt in range(4):
        sign_in(client, "ada", f"guess-{attempt}")
    assert sign_in(client, "ada", "correct horse battery staple").status_code == 302
    client.logout()
    for attempt in range(4):
        sign_in(client, "ada", f"again-{attempt}")
    assert sign_in(client, "ada", "correct horse battery staple").status_code == 302


def test_the_api_answers_429_with_retry_after_past_the_users_rate(client_as, fiona, monkeypatch):
    cache.clear()
    monkeypatch.setattr(UserRateThrottle, "THROTTLE_RATES", {"user": "3/minute", "anon": "3/minute"})
    client = client_as(fiona)
    assert [client.get("/api/v1/teams").status_code for _ in range(3)] == [200, 200, 200]
    slowed = client.get("/api/v1/teams")
    assert slowed.status_code == 429 and int(slowed["Retry-After"]) > 0
    cache.clear()


def test_anonymous_calls_past_the_anonymous_rate_get_429_with_retry_after(db, client, monkeypatch):
    """Issue 26: 125 anonymous calls all got 401, because DRF checks permissions before its throttles; the 401s
    now count against the anonymous rate, per client address."""
    cache.clear()
    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", {"user": "3/minute", "anon": "3/minute"})
    answers = [client.get("/api/v1/teams", REMOTE_ADDR="203.0.113.9").status_code for _ in range(3)]
    bad_tokens = client.get("/api/v1/teams", REMOTE_ADDR="203.0.113.9", HTTP_AUTHORIZATION="Token nope")
    assert answers == [401, 401, 401] and bad_tokens.status_code == 429, bad_tokens.content
    assert int(bad_tokens["Retry-After"]) > 0 and bad_tokens["Content-Type"].startswith("application/json")
    assert client.get("/api/v1/teams", REMOTE_ADDR="198.51.100.4").status_code == 401  # another client: its own rate
    cache.clear()
