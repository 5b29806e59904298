"""Redis restarted while tasks are queued: the worker and the beat reconnect, the pulls whose messages were lost
run all the same, new scheduled pulls go on, and no alert email is sent twice.

The test starts a Redis of its own (tests/fakes/redis_server.py, a free port, no persistence: a restart loses every
key, as a cache-only Redis does) and never touches the shared one. One worker is kept busy by a slow pull while the
beat queues the other accounts' pulls behind it; then Redis is killed and started again.

What this found, and the fix: ingest/schedule.py, runs_lost (the runs whose messages were lost stayed `queued` for
ever, and since due_sync_runs skips an account with a pending run, those accounts were never pulled again).
"""

import datetime as dt
from decimal import Decimal

import pytest
from django.utils import timezone

from finops.models import IngestRun
from ingest.services import account_sync
from tests.conftest import reseed_reference_data, stored_cap
from tests.fakes.provider_server import FakeProviderServer
from tests.fakes.redis_server import RedisServer
from tests.fakes.smtp_server import FakeSmtpServer
from tests.integration.fault_helpers import (
    api_account,
    cap_event,
    emails_by_event,
    figures,
    logs,
    process_env,
    start_beat,
    start_worker,
    told,
    wait_for,
    wait_ready,
    window_routes,
)

pytestmark = [pytest.mark.worker, pytest.mark.slow]


def succeeded(account) -> bool:
    return IngestRun.objects.filter(account=account, status="succeeded").exists()


def test_redis_restarted_with_pulls_queued_loses_no_pull_and_sends_no_email_twice(
    transactional_db, tmp_path, support_team, sam, fiona
):
    reseed_reference_data()
    with (
        RedisServer() as redis_server,
        FakeProviderServer() as slow,
        FakeProviderServer() as quick,
        FakeSmtpServer() as smtp,
    ):
        window_routes(slow, delay=1.5)  # about 4.5 s a pull: the worker is busy while the others wait in Redis
        window_routes(quick)
        earlier = timezone.now() - dt.timedelta(hours=2)
        busy = api_account("openai-busy", slow, last_sync_at=earlier, last_success_at=earlier)
        waiting = [
            api_account(f"openai-waiting-{n}", quick, last_sync_at=earlier, last_success_at=earlier) for n in range(2)
        ]
        cap = stored_cap(
            name="Support November",
            scope="team",
            team=support_team,
            amount=Decimal("5000"),
            recipients=["role:team_leads", "role:finance"],
        )
        before = cap_event(cap, threshold=80)
        env = process_env(
            redis_url=redis_server.url, CELERY_BEAT_EVERY=1, EMAIL_URL=smtp.url, FINOPS_INGEST_REQUEUE_SECONDS=3
        )
        worker = start_worker("worker", env, tmp_path)
        # The beat sends what this test is about, the pulls' dispatch and the alerts' delivery, and nothing else.
        beat = start_beat("beat", env, tmp_path, only=("dispatch-due-syncs", "deliver-alerts"))
        processes = [worker, beat]
        try:
            wait_ready(worker)
            # The slow pull runs; the other pulls are queued in Redis behind it.
            wait_for(
                lambda: IngestRun.objects.filter(account=busy, status="running").exists(),
                60,
                "the slow pull to start",
                processes,
            )
            queued = lambda: IngestRun.objects.filter(account__in=waiting, status="queued").count() == 2  # noqa: E731
            wait_for(queued, 30, "the other pulls to be queued", processes)
            queued_keys = redis_server.client().llen("ingest")
            assert queued_keys >= 2, "the pulls are not waiting in Redis"

            redis_server.restart(down_for=1.0)
            # The queued messages died with Redis. A process reconnecting may already have pushed some back (kombu
            # restores a channel's unacked messages; the beat re-sends runs still queued): take them out again, so
            # what follows proves the pulls are recovered by the product's own re-dispatch, not by luck of timing.
            redis_server.client().delete("ingest")

            # After the restart: the lost pulls run, and an alert raised now is sent like the one before.
            after = cap_event(cap, threshold=100)
            for account in (busy, *waiting):
                wait_for(
                    lambda account=account: succeeded(account),
                    60,
                    f"{account.name} to be pulled after the restart",
                    processes,
                )
            wait_for(
                lambda: told(smtp, before) == told(smtp, after) == {sam.email, fiona.email},
                60,
                "both alerts to be emailed",
                processes,
            )
            # A new account is pulled by the reconnected beat's next dispatch: the schedule goes on.
            newcomer = api_account("openai-newcomer", quick, last_sync_at=earlier, last_success_at=earlier)
            wait_for(lambda: succeeded(newcomer), 60, "a scheduled pull after the restart", processes)
            worker_log, beat_log = worker.output(), beat.output()
        finally:
            for process in processes:
                process.stop()

        # Each account's lines equal a clean pull of the same window, which the reference account makes here.
        for account in (*waiting, newcomer):
            [run] = IngestRun.objects.filter(account=account)
            assert run.status == "succeeded", run.error
            reference = api_account(f"{account.name}-reference", quick)
            [clean] = account_sync(account=reference, start=run.window_start, end=run.window_end)
            assert clean.status == "succeeded" and figures(account) == figures(reference)
        assert [r.status for r in IngestRun.objects.filter(account=busy)] == ["succeeded"]
        counts = emails_by_event(smtp)
        assert counts and set(counts.values()) == {1}, counts

    assert "queued again" in worker_log, logs(*processes)  # the lost pulls were found and sent again
    assert "Connection to broker lost" in worker_log or "Cannot connect" in worker_log, logs(worker)
    assert beat_log.count("Sending due task dispatch-due-syncs") >= 3, logs(beat)
