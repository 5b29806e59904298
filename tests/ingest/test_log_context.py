"""Every log line written during an ingest run names the run, its account and its window (finops/core/logs.py), in the
plain format and as JSON (LOG_FORMAT=json), whichever module writes it: the run's own lines, the HTTP client's
retry, a failure."""

import datetime as dt
import json
import logging

import pytest
from django.core.management import CommandError, call_command

from finops.core.logs import JsonFormatter, PlainFormatter, log_context
from finops.models import Account, IngestRun, Provider
from finops.sources.services.accounts import account_set_credentials
from tests.fakes.provider_server import Reply
from tests.ingest.test_openai_api import COSTS, SECRET

WINDOW = (dt.datetime(2026, 6, 12, tzinfo=dt.UTC), dt.datetime(2026, 6, 16, tzinfo=dt.UTC))


@pytest.fixture
def openai_api_account(db, fake_openai):
    account = Account.objects.create(
        name="openai-prod",
        provider=Provider.objects.get(slug="openai"),
        connector="openai_api",
        base_url=fake_openai.url + "/v1",
    )
    account_set_credentials(account=account, secret=SECRET)
    return account


def once_throttled(route):
    """The provider's first answer is a 429 with Retry-After: 0, then it serves the pages."""
    calls = []

    def reply(query):
        calls.append(query)
        return (
            Reply(429, {"error": {"message": "slow down"}}, {"Retry-After": "0"}) if len(calls) == 1 else route(query)
        )

    return reply


def ingest_records(caplog) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name.startswith("ingest")]


def test_each_line_of_a_pull_names_its_run_account_and_window(openai_api_account, fake_openai, caplog):
    fake_openai.route(COSTS, once_throttled(fake_openai.routes[COSTS]))
    caplog.set_level(logging.INFO)

    call_command("sync", "--account", "openai-prod", "--start", "2026-06-12", "--end", "2026-06-16")

    run = IngestRun.objects.get(account=openai_api_account)
    records = ingest_records(caplog)
    messages = [r.getMessage() for r in records]
    assert any("retrying" in m for m in messages), messages  # the HTTP client's line, deep inside the pull
    assert any(m.startswith(f"ingest run {run.id} succeeded") for m in messages), messages
    for record in records:
        assert (record.run_id, record.account_id, record.account) == (run.id, openai_api_account.id, "openai-prod")
        assert (record.window_start, record.window_end) == WINDOW

    plain = PlainFormatter("%(levelname)s %(name)s %(context)s%(message)s").format(records[0])
    assert (
        f"[run_id={run.id} account_id={openai_api_account.id} account=openai-prod "
        f"window_start=2026-06-12T00:00:00+00:00 window_end=2026-06-16T00:00:00+00:00] " in plain
    )
    entries = [json.loads(JsonFormatter().format(record)) for record in records]
    for entry in entries:
        assert entry["run_id"] == str(run.id) and entry["account"] == "openai-prod"
        assert (entry["window_start"], entry["window_end"]) == (
            "2026-06-12T00:00:00+00:00",
            "2026-06-16T00:00:00+00:00",
        )
        assert {"time", "level", "logger", "message"} <= set(entry)


def test_a_failed_runs_warning_names_it_and_lines_outside_a_run_name_none(openai_api_account, fake_openai, caplog):
    fake_openai.route(COSTS, [Reply(200, "{malformed")])
    caplog.set_level(logging.INFO)
    with pytest.raises(CommandError):
        call_command("sync", "--account", "openai-prod", "--start", "2026-06-12", "--end", "2026-06-16")
    run = IngestRun.objects.get(account=openai_api_account)
    [warning] = [r for r in ingest_records(caplog) if r.levelno == logging.WARNING]
    assert "malformed response" in warning.getMessage()
    assert (warning.run_id, warning.account, warning.window_start) == (run.id, "openai-prod", WINDOW[0])

    logging.getLogger("ingest.test").warning("outside any run")
    outside = caplog.records[-1]
    assert (outside.run_id, outside.account, outside.context) == (None, None, "")
    assert "run_id" not in json.loads(JsonFormatter().format(outside))


def test_contexts_nest_and_end_with_their_block(caplog):
    caplog.set_level(logging.INFO)
    log = logging.getLogger("ingest.test")
    with log_context(run_id=7, account="a"):
        with log_context(file="x.csv"):
            log.info("inner")
        log.info("outer")
    log.info("after")
    inner, outer, after = caplog.records[-3:]
    assert (inner.run_id, inner.file, outer.file, after.run_id) == (7, "x.csv", None, None)


def test_an_unknown_log_format_is_refused(monkeypatch):
    import importlib

    from django.core.exceptions import ImproperlyConfigured

    import finops.settings

    monkeypatch.setenv("LOG_FORMAT", "xml")
    try:
        with pytest.raises(ImproperlyConfigured, match="LOG_FORMAT must be plain or json"):
            importlib.reload(finops.settings)
    finally:
        monkeypatch.delenv("LOG_FORMAT")
        importlib.reload(finops.settings)
