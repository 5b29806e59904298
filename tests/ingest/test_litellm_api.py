"""The LiteLLM proxy connector (ingest/connectors/litellm_api/api.py) against a real local HTTP server playing the
proxy.

Records are LiteLLM_SpendLogs rows as the proxy returns them (tests/fixtures/gateway_log/litellm_spend_logs.json,
the gateway-log reader's fixture), served by tests/fakes/litellm_proxy.py with /spend/logs/v2's paging.
"""

import copy
import dataclasses
import datetime as dt
import io
import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.db.models import Sum

from finops.models import Account, AttributionRule, DailyPerformance, IngestRun, Provider, UsageLine
from finops.sources.services.accounts import (
    AccountInvalid,
    account_create,
    account_credentials,
    account_set_credentials,
)
from ingest.connection_check import connection_check
from ingest.connectors.base import ProviderError
from ingest.connectors.gateway.log import GatewayLog
from ingest.connectors.litellm_api.api import LiteLLMApi
from ingest.http import HttpClient
from tests.fakes.litellm_proxy import SPEND_LOGS, SpendLogs, proxy_error, start_time
from tests.fakes.provider_server import FakeProviderServer, Reply

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "gateway_log" / "litellm_spend_logs.json"
SECRET = "sk-litellm-master-never-print-me-0123456789"
UTC = dt.UTC
JUN_14, JUN_15, JUN_16 = (dt.datetime(2026, 6, d, tzinfo=UTC) for d in (14, 15, 16))


def records() -> list[dict]:
    return json.loads(FIXTURE.read_text())


def many_records(count: int, day: dt.datetime = JUN_14) -> list[dict]:
    """`count` requests spread over the day's hours, from the fixture's first record (a streamed Groq call)."""
    template, made = records()[0], []
    for n in range(count):
        record = copy.deepcopy(template)
        begin = day + dt.timedelta(hours=n % 24, minutes=n % 60, seconds=n % 7)
        record.update(
            request_id=f"chatcmpl-many-{n:05d}",
            startTime=begin.isoformat().replace("+00:00", "Z"),
            completionStartTime=(begin + dt.timedelta(milliseconds=200 + n)).isoformat().replace("+00:00", "Z"),
            endTime=(begin + dt.timedelta(milliseconds=900 + 3 * n)).isoformat().replace("+00:00", "Z"),
            user=("alice", "bob", "carol")[n % 3],
            prompt_tokens=1000 + n,
            completion_tokens=100 + n,
        )
        record["metadata"]["usage_object"] = {"prompt_tokens": 1000 + n, "completion_tokens": 100 + n}
        made.append(record)
    return made


def file_rows(recs: list[dict]) -> list:
    """What the gateway-log file reader makes of the same records, exported as /spend/logs JSON."""
    return list(GatewayLog().parse(io.BytesIO(json.dumps(recs).encode()), file_name="spend_logs.json"))


def comparable(rows) -> list[dict]:
    """Rows as dicts, but for where each came from (a file line or an API page)."""
    return [{k: v for k, v in dataclasses.asdict(r).items() if k != "source_ref"} for r in rows]


@pytest.fixture
def server():
    with FakeProviderServer() as fake:
        yield fake


@pytest.fixture
def sleeps():
    return []


def fetch(server, sleeps=None, *, start=JUN_14, end=JUN_15) -> list:
    client = HttpClient(timeout=5, max_attempts=4, sleep=(sleeps if sleeps is not None else []).append)
    return list(LiteLLMApi().fetch(client=client, base_url=server.url, secret=SECRET, start=start, end=end))


def fetch_error(server, sleeps=None, **kwargs) -> ProviderError:
    with pytest.raises(ProviderError) as caught:
        fetch(server, sleeps, **kwargs)
    assert SECRET not in str(caught.value)
    return caught.value


def asked(server) -> list[tuple]:
    return [(r.query["start_date"][0], r.query["end_date"][0], r.query["page"][0]) for r in server.requests]


# --- requests and rows ---


def test_a_day_is_asked_for_with_the_admin_key_in_litellms_date_format_and_the_largest_page(server):
    server.route(SPEND_LOGS, SpendLogs(records()))

    fetch(server)

    [request] = server.requests
    assert request.path == SPEND_LOGS and request.headers["Authorization"] == f"Bearer {SECRET}"
    assert request.query == {
        "start_date": ["2026-06-14 00:00:00"],
        "end_date": ["2026-06-15 00:00:00"],
        "page": ["1"],
        "page_size": ["1000"],
    }


def test_the_pulled_rows_equal_the_file_readers_rows_for_the_same_records(server):
    server.route(SPEND_LOGS, SpendLogs(records()))

    rows = fetch(server)

    assert comparable(rows) == comparable(file_rows(records()))
    assert sum(r.requests for r in rows) == 10 and all(r.cost is None for r in rows)
    assert all(r.latency and r.latency.requests == r.requests for r in rows)
    assert rows[0].source_ref.startswith(
        "LiteLLM /spend/logs/v2 2026-06-14 00:00:00 to 2026-06-15 00:00:00 page 1 record "
    )


def test_team_key_alias_user_tags_and_metadata_reach_the_rows_that_rules_match(server):
    server.route(SPEND_LOGS, SpendLogs(records()))

    rows = fetch(server)

    first = next(r for r in rows if r.tags.get("key_alias") == "support-bot")
    assert first.tags == {
        "env": "prod",
        "feature": "summaries",
        "key_alias": "support-bot",
        "team_alias": "Support Platform",
        "team_id": "support",
    }
    assert first.user_ref == "alice" and first.api_key_ref == records()[0]["api_key"]
    assert first.provider_slug == "groq" and first.model_raw == "llama-3.3-70b-versatile"


def test_pages_are_followed_until_total_pages_and_make_the_same_rows_as_one_file(server):
    recs = many_records(2500)
    server.route(SPEND_LOGS, SpendLogs(recs))

    rows = fetch(server)

    assert [page for _, _, page in asked(server)][:3] == ["1", "2", "3"]  # then the seconds tied across pages
    assert sum(r.requests for r in rows) == 2500
    assert comparable(rows) == comparable(file_rows(recs))


def test_each_utc_day_of_the_window_is_its_own_query(server):
    recs = many_records(30, JUN_14) + many_records(20, JUN_15)
    for n, record in enumerate(recs):
        record["request_id"] = f"r-{n}"
    server.route(SPEND_LOGS, SpendLogs(recs))

    rows = fetch(server, end=JUN_16)

    assert asked(server) == [
        ("2026-06-14 00:00:00", "2026-06-15 00:00:00", "1"),
        ("2026-06-15 00:00:00", "2026-06-16 00:00:00", "1"),
    ]
    assert sum(r.requests for r in rows) == 50
    assert comparable(rows) == comparable(file_rows(recs))


def test_a_request_at_midnight_is_read_once_by_the_day_it_starts(server):
    # end_date is inclusive: the 15th 00:00:00 request comes back for both days' queries.
    at_midnight = dict(
        records()[0],
        request_id="midnight",
        startTime="2026-06-15T00:00:00Z",
        completionStartTime=None,
        endTime="2026-06-15T00:00:01Z",
    )
    server.route(SPEND_LOGS, SpendLogs([at_midnight]))

    rows = fetch(server, end=JUN_16)

    assert [(r.period_start, r.requests) for r in rows] == [(JUN_15, 1)]
    assert fetch(server, end=JUN_15) == []


def test_a_record_pushed_onto_the_next_page_by_a_new_request_is_read_once(server):
    recs = many_records(1500)
    newcomer = dict(
        records()[0],
        request_id="late-arrival",
        startTime="2026-06-14T23:59:00Z",
        completionStartTime=None,
        endTime="2026-06-14T23:59:01Z",
    )

    def request_lands(logs, page):
        if page == 2 and newcomer not in logs.records:
            logs.records.append(newcomer)  # newest first: every record moves one place down

    server.route(SPEND_LOGS, SpendLogs(recs, before_page=request_lands))

    rows = fetch(server)

    assert sum(r.requests for r in rows) == 1500  # the newcomer is the next pull's; nobody is counted twice
    assert comparable(rows) == comparable(file_rows(recs))


def test_a_record_lost_while_paging_fails_the_pull_as_transient_instead_of_storing_part_of_the_day(server):
    def retention_deletes(logs, page):
        if page == 2 and len(logs.records) == 1500:
            oldest = min(logs.records, key=start_time)
            logs.records.remove(oldest)
            logs.records.remove(max(logs.records, key=start_time))  # and the log shifts one place up

    server.route(SPEND_LOGS, SpendLogs(many_records(1500), before_page=retention_deletes))

    error = fetch_error(server)

    assert error.reason == "server" and not error.permanent
    assert "reported 1,500 records but 1,498 distinct ones were read" in str(error)


def test_an_empty_range_asks_once_per_day_and_yields_nothing(server):
    server.route(SPEND_LOGS, SpendLogs([]))

    assert fetch(server, end=JUN_16) == []
    assert [page for _, _, page in asked(server)] == ["1", "1"]


def test_an_empty_window_asks_nothing_and_a_naive_one_is_refused(server):
    assert fetch(server, start=JUN_15, end=JUN_15) == [] and server.requests == []
    error = fetch_error(server, start=dt.datetime(2026, 6, 14))
    assert "no time zone" in str(error) and server.requests == []


def test_the_default_base_url_is_a_local_proxy():
    assert LiteLLMApi.default_base_url == "http://localhost:4000" and LiteLLMApi.kind == "litellm_api"


# --- failures ---


def test_a_rejected_key_fails_with_reason_auth_and_never_shows_the_key(server):
    server.route(
        SPEND_LOGS,
        [
            proxy_error(
                401,
                f"Authentication Error, Invalid proxy server token passed. Received API Key = {SECRET[:8]}...",
                "auth_error",
            )
        ],
    )

    error = fetch_error(server)

    assert error.reason == "auth" and error.permanent and "HTTP 401" in str(error)
    assert len(server.requests) == 1


def test_a_429_is_retried_after_the_seconds_the_proxy_asks_for(server, sleeps):
    logs, limited = SpendLogs(records()), []

    def spend_logs(query):
        if not limited:
            limited.append(query)
            return Reply(
                429,
                {"error": {"message": "Max parallel request limit reached", "type": "None", "code": "429"}},
                {"Retry-After": "3"},
            )
        return logs(query)

    server.route(SPEND_LOGS, spend_logs)

    rows = fetch(server, sleeps)

    assert sleeps == [3.0] and len(server.requests) == 2
    assert sum(r.requests for r in rows) == 10


def test_a_server_error_is_retried_and_the_pull_then_completes(server, sleeps):
    logs, broken = SpendLogs(records()), []

    def spend_logs(query):
        if not broken:
            broken.append(query)
            return proxy_error(500, "Internal Server Error", "internal_error")
        return logs(query)

    server.route(SPEND_LOGS, spend_logs)

    rows = fetch(server, sleeps)

    assert len(sleeps) == 1 and 0 <= sleeps[0] <= 60
    assert sum(r.requests for r in rows) == 10


def test_a_server_error_that_persists_gives_up_as_transient(server, sleeps):
    server.route(SPEND_LOGS, [proxy_error(500, "Internal Server Error", "internal_error")])

    error = fetch_error(server, sleeps)

    assert error.reason == "server" and not error.permanent and "gave up after 4 attempts" in str(error)


def page_of(data, **envelope) -> dict:
    return {"data": data, "total": len(data), "page": 1, "page_size": 1000, "total_pages": 1, **envelope}


@pytest.mark.parametrize(
    "bad_page, complaint",
    [
        (Reply(200, "<html>502 Bad Gateway</html>"), "malformed response (not JSON)"),
        (Reply(200, {"logs": []}), "expected a `data` list"),
        (Reply(200, page_of([], total_pages=None)), "total_pages is None, not a whole number"),
        (Reply(200, page_of(["chatcmpl-1"])), "record 1: malformed response (expected an object)"),
        (
            Reply(200, page_of([dict(records()[0], prompt_tokens=-5)])),
            "record 1: malformed response (prompt_tokens is negative",
        ),
        (Reply(200, page_of([dict(records()[0], startTime="yesterday")])), "not an ISO 8601 date-time"),
        (Reply(200, page_of([], page=2)), "page 2 came back for page 1"),
    ],
)
def test_a_malformed_page_fails_naming_the_day_and_page(server, bad_page, complaint):
    server.route(SPEND_LOGS, [bad_page])

    error = fetch_error(server)

    assert error.reason == "malformed" and error.permanent
    assert "LiteLLM /spend/logs/v2 2026-06-14 00:00:00 to 2026-06-15 00:00:00 page 1" in str(error)
    assert complaint in str(error)


# --- the connection check ---


def test_the_connection_check_reads_yesterday_and_explains_a_refused_key(server):
    yesterday = many_records(5, JUN_14)
    server.route(SPEND_LOGS, SpendLogs(yesterday))

    report = connection_check(connector="litellm_api", base_url=server.url, secret=SECRET, today=JUN_15.date())

    assert report.ok and report.requests == 5 and "LiteLLM proxy (spend logs API)" in report.message
    assert (
        "5 lines, 5 requests, 1 model (llama-3.3-70b-versatile); no billed cost: the lines are priced from the catalog"
        in report.message
    )
    server.route(SPEND_LOGS, [proxy_error(401, "Authentication Error", "auth_error")])
    refused = connection_check(connector="litellm_api", base_url=server.url, secret=SECRET, today=JUN_15.date())
    assert not refused.ok and "The key was refused (HTTP 401)" in refused.message and "master key" in refused.message


# --- the account ---


def test_the_admin_key_is_stored_encrypted_and_a_proxy_account_names_who_bills_unnamed_requests(db, server):
    with pytest.raises(AccountInvalid, match="litellm_api needs a provider"):
        account_create(name="gateway", connector="litellm_api", base_url=server.url, secret=SECRET)

    account = account_create(
        name="gateway",
        connector="litellm_api",
        provider=Provider.objects.get(slug="groq"),
        base_url=server.url,
        secret=SECRET,
    )

    assert account.is_api and SECRET not in account.credentials_ciphertext
    assert account_credentials(account=account) == SECRET


# --- pulled end to end: the sync command ---


def gateway_account(name: str, server, *, provider: str = "groq") -> Account:
    """A LiteLLM proxy account pulling from the fake proxy, with its master key stored."""
    account = Account.objects.create(
        name=name, provider=Provider.objects.get(slug=provider), connector="litellm_api", base_url=server.url
    )
    account_set_credentials(account=account, secret=SECRET)
    return account


@pytest.fixture
def litellm_account(db, server):
    return gateway_account("gateway-prod", server)


def sync(start: str, end: str) -> str:
    out = io.StringIO()
    call_command("sync", "--account", "gateway-prod", "--start", start, "--end", end, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def totals() -> dict:
    lines = UsageLine.objects.aggregate(
        requests=Sum("requests"), input=Sum("input_tokens"), output=Sum("output_tokens"), cost=Sum("reporting_cost")
    )
    measured = DailyPerformance.objects.aggregate(requests=Sum("requests"), errors=Sum("errors"))
    return {**lines, "measured": measured}


def test_a_re_pull_of_an_overlapping_window_changes_no_total(litellm_account, server):
    server.route(SPEND_LOGS, SpendLogs(records() + many_records(40, JUN_15)))

    sync("2026-06-14", "2026-06-16")
    first = totals()
    sync("2026-06-15", "2026-06-17")  # the 15th again, and an empty 16th
    sync("2026-06-14", "2026-06-15")

    assert totals() == first
    assert first["requests"] == 50 and first["measured"] == {"requests": 50, "errors": 1}
    assert UsageLine.objects.filter(account=litellm_account, latency__isnull=True).count() == 0


def test_the_pulled_lines_are_attributed_by_litellms_key_alias(litellm_account, server, support_agent):
    AttributionRule.objects.create(workload=support_agent, priority=1, tags={"key_alias": "support-bot"})
    server.route(SPEND_LOGS, SpendLogs(records()))

    sync("2026-06-14", "2026-06-15")

    support = UsageLine.objects.filter(signature__workload=support_agent)
    assert support.exists() and all(line.tag_set.tags["key_alias"] == "support-bot" for line in support)
    others = UsageLine.objects.exclude(signature__workload=support_agent)
    assert others.exists() and not any(line.tag_set.tags.get("key_alias") == "support-bot" for line in others)


def test_a_rejected_key_disables_the_account_and_says_why(litellm_account, server):
    server.route(
        SPEND_LOGS, [proxy_error(401, "Authentication Error, Invalid proxy server token passed.", "auth_error")]
    )

    with pytest.raises(CommandError, match="1 run"):
        sync("2026-06-14", "2026-06-15")

    litellm_account.refresh_from_db()
    assert not litellm_account.enabled
    assert (
        "rejected the credentials (HTTP 401)" in litellm_account.last_error and SECRET not in litellm_account.last_error
    )
    assert IngestRun.objects.get(account=litellm_account).status == "failed"
