"""A pull that runs longer than the broker's visibility timeout is not executed twice in parallel.

Redis hands a delivered task that has not been acknowledged (acks_late: acknowledged when it ends) to another worker
once the visibility timeout has passed — while the first worker is still running it. Two real workers here, a 2 s
visibility timeout, and a provider that takes about 4 s to answer a pull: the second worker receives the same task
while the first is pulling. What this found, and the fix: ingest/lease.py, run_lock (the second worker used to pull
the whole window again and write it a second time, since the lease lets the same run take it back).
"""

import datetime as dt
import json

import pytest
from django.conf import settings as django_settings

from finops.models import IngestRun
from ingest.services import account_sync, sync_request
from tests.conftest import reseed_reference_data
from tests.fakes.provider_server import FakeProviderServer
from tests.integration.fault_helpers import (
    api_account,
    figures,
    process_env,
    pulls_of,
    start_worker,
    wait_for,
    wait_ready,
    window_routes,
)
from tests.integration.test_worker_killed import real_queue  # noqa: F401  a fixture

pytestmark = [pytest.mark.worker, pytest.mark.slow]

START, END = dt.datetime(2026, 10, 1, tzinfo=dt.UTC), dt.datetime(2026, 10, 8, tzinfo=dt.UTC)


def test_a_pull_longer_than_the_visibility_timeout_runs_once_and_is_not_pulled_twice(
    transactional_db, real_queue, tmp_path
):
    reseed_reference_data()
    with FakeProviderServer() as slow, FakeProviderServer() as quick:
        window_routes(slow, delay=1.4)  # three endpoints, one page each: about 4 s a pull
        window_routes(quick)
        account = api_account("openai-slow", slow)
        reference = api_account("openai-reference", quick)
        # The workers log as JSON, as production may (LOG_FORMAT=json): their ingest lines are checked below.
        env = process_env(redis_url=django_settings.REDIS_URL, CELERY_VISIBILITY_TIMEOUT=2, LOG_FORMAT="json")
        first, second = start_worker("first", env, tmp_path), start_worker("second", env, tmp_path)
        try:
            import time

            t0 = time.monotonic()
            wait_ready(first, second)
            print("ready", time.monotonic() - t0)
            [run] = sync_request(account=account, start=START, end=END)
            # The other worker is handed the same task while the first still pulls.
            started = lambda: sum(w.output().count(f"ingest run {run.id} started") for w in (first, second))  # noqa: E731
            wait_for(lambda: started() >= 2, 60, "the task to be redelivered to the other worker", [first, second])
            wait_for(
                lambda: IngestRun.objects.filter(id=run.id, status__in=["succeeded", "failed"]).exists(),
                60,
                "the run to end",
                [first, second],
            )
            outputs = first.output() + second.output()
        finally:
            first.stop()
            second.stop()
        print("stopped", time.monotonic() - t0)
        [clean] = account_sync(account=reference, start=START, end=END)

    run.refresh_from_db()
    assert run.status == "succeeded", run.error
    window = (str(int(START.timestamp())), str(int(END.timestamp())))
    assert pulls_of(slow) == [window], "the window was pulled more than once"
    assert "being executed by another worker" in outputs  # the second delivery saw the run lock and left it be
    assert (run.lines_read, run.lines_written, run.lines_replaced) == (clean.lines_read, clean.lines_written, 0)
    assert figures(account) == figures(reference)
    account.refresh_from_db()
    assert (account.lease_token, account.last_error) == ("", "")

    # Every ingest line either worker wrote is a JSON object naming the run, its account and its window.
    entries = [json.loads(line) for line in outputs.splitlines() if line.startswith("{")]
    ingest = [entry for entry in entries if entry["logger"].startswith("ingest")]
    assert len(ingest) >= 3, outputs
    for entry in ingest:
        assert (entry["run_id"], entry["account"], entry["window_start"], entry["window_end"]) == (
            str(run.id),
            "openai-slow",
            START.isoformat(),
            END.isoformat(),
        ), entry
