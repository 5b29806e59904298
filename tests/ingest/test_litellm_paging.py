"""The LiteLLM connector against what LiteLLM's /spend/logs/v2 really does with a busy day (docs/litellm.md):
a total capped at 10,000 with `total_is_capped`, and records tied on startTime, which it does not order, across
page boundaries. The fake (tests/fakes/litellm_proxy.py) caps and shuffles ties as LiteLLM's query does."""

import datetime as dt
import io

import pytest
from django.core.management import CommandError, call_command
from django.db.models import Sum

from finops.models import IngestRun, UsageLine
from tests.fakes.litellm_proxy import SPEND_LOGS, SpendLogs
from tests.fakes.provider_server import FakeProviderServer
from tests.ingest.test_litellm_api import (
    JUN_14,
    JUN_15,
    comparable,
    fetch,
    fetch_error,
    file_rows,
    gateway_account,
    records,
)

HOUR = dt.timedelta(hours=1)


@pytest.fixture
def server():
    with FakeProviderServer() as fake:
        yield fake


def at(moments) -> list[dict]:
    """One request (the fixture's streamed Groq call) starting at each moment.

    Each record is a new dict with a metadata dict of its own; the nested values no test changes (tags, the team's
    metadata) are shared: a deepcopy of the template cost ~0.1 ms a record, ~5 s for the module's 54,000."""
    template, made = records()[0], []
    for n, begin in enumerate(moments):
        record = {
            **template,
            "request_id": f"chatcmpl-{n:06d}",
            "startTime": begin.isoformat().replace("+00:00", "Z"),
            "completionStartTime": None,
            "endTime": (begin + dt.timedelta(milliseconds=800)).isoformat().replace("+00:00", "Z"),
            "prompt_tokens": 100,
            "completion_tokens": 10,
            "metadata": {**template["metadata"], "usage_object": {"prompt_tokens": 100, "completion_tokens": 10}},
        }
        made.append(record)
    return made


def busy_day(count: int) -> list[dict]:
    """`count` requests over JUN_14, every hour busy, several sharing a start time."""
    return at(JUN_14 + dt.timedelta(seconds=(n * 8.2) // 1) for n in range(count))


def windows(server) -> list[tuple[str, str]]:
    return sorted({(r.query["start_date"][0], r.query["end_date"][0]) for r in server.requests})


def test_a_10500_request_day_is_read_as_hours_and_lands_whole_with_every_hour(server):
    logs = busy_day(10_500)
    server.route(SPEND_LOGS, SpendLogs(logs))

    rows = fetch(server)

    assert sum(r.requests for r in rows) == 10_500
    assert sorted({r.period_start for r in rows}) == [JUN_14 + h * HOUR for h in range(24)]
    assert comparable(rows) == comparable(file_rows(logs))
    # The day's answer said total_is_capped: it was not paged, but asked again hour by hour.
    day = ("2026-06-14 00:00:00", "2026-06-15 00:00:00")
    assert [r.query["page"] for r in server.requests if (r.query["start_date"][0], r.query["end_date"][0]) == day] == [
        ["1"]
    ]
    assert ("2026-06-14 23:00:00", "2026-06-15 00:00:00") in windows(server)


def test_an_hour_still_capped_is_read_as_minutes(server):
    logs = at(JUN_14 + dt.timedelta(hours=3, seconds=n * 0.3) for n in range(10_200))  # 51 minutes of hour 03
    server.route(SPEND_LOGS, SpendLogs(logs))

    rows = fetch(server)

    assert [(r.period_start, r.requests) for r in rows] == [(JUN_14 + 3 * HOUR, 10_200)]
    assert ("2026-06-14 03:07:00", "2026-06-14 03:08:00") in windows(server)


def test_a_second_of_more_requests_than_litellm_counts_fails_naming_it(server):
    logs = at([JUN_14 + dt.timedelta(hours=5, seconds=30, milliseconds=n % 1000) for n in range(10_001)])
    server.route(SPEND_LOGS, SpendLogs(logs))

    error = fetch_error(server)

    assert error.reason == "bad_input"
    assert "2026-06-14 05:00:30 to 2026-06-14 05:00:31" in str(error) and "cannot be read whole" in str(error)


def test_ties_straddling_a_page_boundary_neither_repeat_nor_vanish(server):
    # 990 requests before 12:00:00, then 40 at exactly 12:00:00.250: the tie spans pages 1 and 2 (newest first:
    # 170 later ones, then the 40), and the proxy orders the tie differently for each page.
    tie = JUN_14 + dt.timedelta(hours=12, milliseconds=250)
    logs = at(
        [JUN_14 + dt.timedelta(seconds=n * 40) for n in range(990)]
        + [tie] * 40
        + [tie + dt.timedelta(seconds=1 + n) for n in range(970)]
    )
    server.route(SPEND_LOGS, SpendLogs(logs))

    rows = fetch(server)

    assert sum(r.requests for r in rows) == 2000
    assert comparable(rows) == comparable(file_rows(logs))
    assert ("2026-06-14 12:00:00", "2026-06-14 12:00:01") in windows(server)  # the tied second, read on its own


def test_a_tie_larger_than_a_page_cannot_be_read_whole_and_fails_naming_the_second(server):
    logs = at([JUN_14 + dt.timedelta(hours=7, microseconds=500)] * 1200)
    server.route(SPEND_LOGS, SpendLogs(logs))

    error = fetch_error(server)

    assert error.permanent and error.reason == "bad_input"
    assert "2026-06-14 07:00:00 to 2026-06-14 07:00:01" in str(error) and "cannot be read whole" in str(error)


# --- end to end: a run that cannot read everything never succeeds and writes nothing ---


@pytest.fixture
def litellm_account(db, server):
    return gateway_account("gateway-busy", server)


def sync(start: str, end: str) -> None:
    call_command(
        "sync", "--account", "gateway-busy", "--start", start, "--end", end, stdout=io.StringIO(), stderr=io.StringIO()
    )


def test_a_busy_day_is_stored_whole_and_an_unreadable_second_fails_the_run_writing_nothing(litellm_account, server):
    logs = busy_day(10_500)
    server.route(SPEND_LOGS, SpendLogs(logs))
    sync("2026-06-14", "2026-06-15")
    assert UsageLine.objects.aggregate(n=Sum("requests"))["n"] == 10_500

    burst = at([JUN_15 + dt.timedelta(hours=5, seconds=30, milliseconds=500)] * 10_001)
    for n, record in enumerate(burst):
        record["request_id"] = f"burst-{n}"
    server.route(SPEND_LOGS, SpendLogs(logs + burst))
    with pytest.raises(CommandError, match="1 run"):
        sync("2026-06-14", "2026-06-16")

    run = IngestRun.objects.filter(account=litellm_account).latest("id")
    assert run.status == "failed" and "2026-06-15 05:00:30 to 2026-06-15 05:00:31" in run.error
    assert UsageLine.objects.aggregate(n=Sum("requests"))["n"] == 10_500  # the 14th as it was; nothing of the 15th
    assert not UsageLine.objects.filter(period_start__gte=JUN_15).exists()
