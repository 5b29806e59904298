"""Two `celery beat` processes started by mistake: every scheduled task is sent twice, and two workers run the
copies at the same moment. No window is pulled twice, no run is duplicated, and no alert email goes out twice.
The monthly report's send is the one entry left out here (BEATS_SEND): tests/integration/test_report_workers.py
runs it under two beats and two workers, where its emails are looked at; here it would cost the workers ~0.3 s of
CPU a second per beat for nothing this test reads.

What this found, and the fix: ingest/schedule.py, schedule_dispatch (two dispatches at once each created runs for
the same accounts and windows). Alert delivery was already safe: each event is claimed with a conditional UPDATE
(finops/notify/deliver.py), which this test confirms under two beats.
"""

import datetime as dt
import ipaddress
import re
import time
from decimal import Decimal

import pytest
from django.conf import settings as django_settings
from django.test import override_settings
from django.utils import timezone

from finops.alerts.services.channels import cap_channels_sync, channel_save
from finops.models import Account, ChannelKind, IngestRun
from tests.conftest import reseed_reference_data, stored_cap
from tests.fakes.provider_server import FakeProviderServer
from tests.fakes.smtp_server import FakeSmtpServer
from tests.fakes.webhook_server import FakeWebhookServer
from tests.integration.fault_helpers import (  # noqa: F401  fake_provider is a fixture
    api_account,
    cap_event,
    emails_by_event,
    fake_provider,
    logs,
    process_env,
    pulls_of,
    purge,
    start_beat,
    start_worker,
    told,
    wait_for,
    wait_ready,
    window_routes,
)

pytestmark = [pytest.mark.worker, pytest.mark.slow]

ACCOUNTS = 4
# Every entry of the schedule but send-reports (see the module's docstring); settings_test refuses a name that is
# not in the schedule, and the test below checks that none but send-reports is missing.
BEATS_SEND = ("dispatch-due-syncs", "evaluate-alerts", "deliver-alerts", "prune-usage-lines", "prune-uploads")


def test_two_beats_pull_each_window_once_and_send_each_email_once(transactional_db, tmp_path, support_team, sam, fiona):
    reseed_reference_data()
    purge(django_settings.REDIS_URL)
    servers = [FakeProviderServer() for _ in range(ACCOUNTS)]
    smtp = FakeSmtpServer().start()
    slack, teams = FakeWebhookServer(), FakeWebhookServer(statuses=(202,))
    processes = []
    try:
        for receiver in (slack, teams):
            receiver.__enter__()
        for server in servers:
            server.__enter__()
            window_routes(server)
        # Due now, each for a 3-day look-back: one run each.
        earlier = timezone.now() - dt.timedelta(hours=2)
        accounts = [
            api_account(f"openai-{n}", server, last_sync_at=earlier, last_success_at=earlier)
            for n, server in enumerate(servers)
        ]
        cap = stored_cap(
            name="Support November",
            scope="team",
            team=support_team,
            amount=Decimal("5000"),
            recipients=["role:team_leads", "role:finance"],
        )
        # The cap's recipients are its own email channel; it also chose a Slack and a Teams channel (issue 25).
        cap_channels_sync(cap)
        for kind, receiver in ((ChannelKind.SLACK, slack), (ChannelKind.TEAMS, teams)):
            with override_settings(FINOPS_EGRESS_ALLOWED_NETWORKS=[ipaddress.ip_network("127.0.0.0/8")]):
                channel_save(by=None, name=f"Support {kind}", kind=kind, url=receiver.url + "/hook").caps.add(cap)
        event = cap_event(cap, threshold=80)
        env = process_env(
            redis_url=django_settings.REDIS_URL,
            CELERY_BEAT_EVERY=1,
            EMAIL_URL=smtp.url,
            FINOPS_EGRESS_ALLOWED_NETWORKS="127.0.0.0/8",  # the local Slack and Teams receivers
        )
        processes = [
            start_worker("w1", env, tmp_path),
            start_worker("w2", env, tmp_path),
            start_beat("beat1", env, tmp_path, only=BEATS_SEND),
            start_beat("beat2", env, tmp_path, only=BEATS_SEND),
        ]
        wait_ready(*processes[:2])

        ended = lambda: IngestRun.objects.filter(status="succeeded").count() >= ACCOUNTS  # noqa: E731
        wait_for(ended, 60, "every account to be pulled", processes)
        wait_for(lambda: told(smtp, event) == {sam.email, fiona.email}, 30, "the alert to be emailed", processes)
        wait_for(lambda: slack.received and teams.received, 30, "the alert to reach Slack and Teams", processes)
        # Both beats keep ticking, each tick sent twice, for a few more seconds.
        time.sleep(3)
        errors = [
            line for p in processes for line in p.output().splitlines() if " ERROR " in line or "Traceback" in line
        ]
        sent = {name for p in processes[2:] for name in re.findall(r"Sending due task (\S+)", p.output())}
        dispatches = [p.output().count("Sending due task dispatch-due-syncs") for p in processes[2:]]
        deliveries = [p.output().count("Sending due task deliver-alerts") for p in processes[2:]]
    finally:
        for process in processes:
            process.stop()
        smtp.stop()
        for receiver in (slack, teams):
            receiver.__exit__(None, None, None)
        for server in servers:
            server.__exit__(None, None, None)
        purge(django_settings.REDIS_URL)

    assert min(dispatches) >= 3 and min(deliveries) >= 3, logs(*processes)  # both beats really sent them
    assert sent == set(BEATS_SEND) == set(django_settings.CELERY_BEAT_SCHEDULE) - {"send-reports"}, sent
    # Every copy of every task (evaluations, deliveries, dispatches, prunes) ran without an error.
    assert errors == [], "\n".join(errors)
    for account, server in zip(accounts, servers):
        runs = IngestRun.objects.filter(account=account)
        assert [r.status for r in runs] == ["succeeded"], [(r.id, r.status, r.window_start) for r in runs]
        windows = pulls_of(server)
        assert len(windows) == len(set(windows)) == 1, f"{account.name} pulled {windows}"
        account.refresh_from_db()
        assert (account.lease_token, account.last_error) == ("", "")
    counts = emails_by_event(smtp)
    assert counts and set(counts.values()) == {1}, counts
    assert told(smtp, event) == {sam.email, fiona.email}
    assert len(slack.received) == len(teams.received) == 1  # once each, under two workers and two beats
    assert not Account.objects.filter(enabled=False).exists()


def test_two_dispatches_at_the_same_moment_create_one_run_per_account(transactional_db, fake_provider):
    """The race the beats above run into now and then, made certain: both dispatches have read the accounts
    (no run pending) before either may insert its runs — a share lock on the run table holds their INSERTs
    back until both are there. Before schedule_dispatch's lock, each created a run per account."""
    from django.db import connection, connections

    from ingest.schedule import schedule_dispatch

    reseed_reference_data()
    earlier = timezone.now() - dt.timedelta(hours=2)
    accounts = [
        api_account(f"openai-{n}", fake_provider, last_sync_at=earlier, last_success_at=earlier) for n in range(3)
    ]
    blocker = connections.create_connection("default")
    blocker.set_autocommit(False)
    with blocker.cursor() as cursor:
        cursor.execute(f"LOCK TABLE {IngestRun._meta.db_table} IN SHARE MODE")
    results, done = [], []

    def dispatch():
        try:
            results.append(schedule_dispatch()[0])
        finally:
            done.append(True)
            connections.close_all()

    import threading

    threads = [threading.Thread(target=dispatch) for _ in range(2)]
    for thread in threads:
        thread.start()

    def waiting_on_the_table() -> int:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND wait_event_type = 'Lock' AND query LIKE 'INSERT INTO%%'"
            )
            return cursor.fetchone()[0]

    try:
        wait_for(lambda: len(done) + waiting_on_the_table() == 2, 30, "both dispatches to reach their INSERTs")
    finally:
        blocker.rollback()
        blocker.close()
    for thread in threads:
        thread.join(30)

    assert sorted(len(runs) for runs in results) == [0, len(accounts)]  # one did the work, the other left it
    for account in accounts:
        assert IngestRun.objects.filter(account=account).count() == 1
