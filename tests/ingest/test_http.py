"""The outbound HTTP seam against a real local server: retries, Retry-After, typed errors, no secret leaks."""

import pytest

from ingest.connectors.base import ProviderError
from ingest.http import HttpClient, retry_after_seconds
from tests.fakes.provider_server import FakeProviderServer, Reply

SECRET = "sk-admin-never-print-me-0123456789"


@pytest.fixture
def server():
    with FakeProviderServer() as fake:
        yield fake


def client(sleeps: list) -> HttpClient:
    return HttpClient(timeout=5, max_attempts=4, sleep=sleeps.append)


def test_a_429_is_retried_after_the_seconds_the_provider_asks_for(server):
    server.route(
        "/usage",
        [
            Reply(
                429, {"error": {"message": "Rate limit reached", "type": "rate_limit_exceeded"}}, {"Retry-After": "7"}
            ),
            {"data": [1]},
        ],
    )
    sleeps = []
    assert client(sleeps).get_json(server.url + "/usage") == {"data": [1]}
    assert sleeps == [7.0]


def test_server_errors_are_retried_with_bounded_jittered_backoff(server):
    server.route("/usage", [Reply(500, "oops"), Reply(503, {}), {"ok": True}])
    sleeps = []
    assert client(sleeps).get_json(server.url + "/usage") == {"ok": True}
    assert len(sleeps) == 2 and all(0 <= s <= 60 for s in sleeps)


def test_retries_give_up_with_a_transient_error_naming_the_request(server):
    server.route("/usage", [Reply(502, "bad gateway")])
    with pytest.raises(ProviderError) as caught:
        client([]).get_json(server.url + "/usage", where="usage page 2")
    assert not caught.value.permanent and caught.value.reason == "server"
    assert "usage page 2: HTTP 502" in str(caught.value) and "gave up after 4 attempts" in str(caught.value)
    assert len(server.requests) == 4


@pytest.mark.parametrize("status", [401, 403])
def test_rejected_credentials_fail_at_once_and_never_echo_the_key(server, status):
    server.route("/costs", [Reply(status, {"error": {"message": "Invalid API key provided"}})])
    with pytest.raises(ProviderError) as caught:
        client([]).get_json(server.url + "/costs", headers={"Authorization": f"Bearer {SECRET}"})
    assert caught.value.permanent and caught.value.reason == "auth"
    assert f"HTTP {status}" in str(caught.value) and SECRET not in str(caught.value)
    assert len(server.requests) == 1
    assert server.requests[0].headers["Authorization"] == f"Bearer {SECRET}"


def test_insufficient_quota_is_not_retried(server):
    server.route(
        "/usage",
        [
            Reply(
                429,
                {
                    "error": {
                        "message": "You exceeded your current quota",
                        "type": "insufficient_quota",
                        "code": "insufficient_quota",
                    }
                },
            )
        ],
    )
    with pytest.raises(ProviderError) as caught:
        client([]).get_json(server.url + "/usage")
    assert caught.value.reason == "quota" and caught.value.permanent and len(server.requests) == 1


def test_a_malformed_page_is_a_permanent_error(server):
    server.route("/usage", [Reply(200, "{not json")])
    with pytest.raises(ProviderError, match="malformed response") as caught:
        client([]).get_json(server.url + "/usage")
    assert caught.value.reason == "malformed"


def test_an_unreachable_host_is_a_transient_error():
    sleeps = []
    with pytest.raises(ProviderError, match="could not reach the provider") as caught:
        client(sleeps).get_json("http://127.0.0.1:9/usage")
    assert not caught.value.permanent and len(sleeps) == 3


def test_retry_after_reads_seconds_and_http_dates():
    assert retry_after_seconds("12") == 12.0
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # in the past: retry now
    assert retry_after_seconds(None) is None and retry_after_seconds("soon") is None


def test_json_numbers_arrive_as_exact_decimals(server):
    from decimal import Decimal

    server.route("/costs", [Reply(200, '{"amount": {"value": 0.12345678901234567890123, "currency": "usd"}, "n": 3}')])
    body = client([]).get_json(server.url + "/costs")
    assert body["amount"]["value"] == Decimal("0.12345678901234567890123") and body["n"] == 3


def test_an_overloaded_provider_529_is_retried(server):
    server.route(
        "/v1/messages",
        [Reply(529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}), {"ok": 1}],
    )
    sleeps = []
    assert client(sleeps).get_json(server.url + "/v1/messages") == {"ok": 1} and len(sleeps) == 1
