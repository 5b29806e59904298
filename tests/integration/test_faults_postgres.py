"""Postgres cut off and restarted in the middle of an import: the run retries and ends equal to a clean run, no
partial window is ever visible, and the run is never left `running`.

A real `celery worker` reaches Postgres through a TCP proxy (tests/fakes/tcp_proxy.py) that the test cuts while
the worker's COPY is streaming rows into the usage-line table: every connection closed at once and new ones refused
for 3 s, as clients see a Postgres restart (the shared cluster itself is never stopped). What this found, and the
fix: ingest/services.py, _database_lost (the run used to stay `running` holding its account's lease, and the task
was never retried).
"""

import datetime as dt
import time
from decimal import Decimal
from urllib.parse import quote

import pytest
from django.conf import settings as django_settings
from django.db import connection

from finops.models import Account, FxRate, IngestRun, Provider, UsageLine
from ingest.services import usage_file_import, usage_upload_accept
from tests.conftest import reseed_reference_data
from tests.fakes.tcp_proxy import TcpProxy
from tests.integration.fault_helpers import logs, process_env, start_worker, wait_ready
from tests.integration.test_worker_killed import (  # noqa: F401  real_queue is a fixture
    WORKER_APPLICATION,
    account_snapshot,
    lines_differing,
    other_backends,
    raw_by_day,
    real_queue,
    rollup_by_day,
    wait_for,
    write_usage_csv,
)
from tests.rollup_check import raw_groups, rollup_groups

pytestmark = [pytest.mark.worker, pytest.mark.slow]

BIG_DAYS = [dt.date(2025, 3, 1) + dt.timedelta(days=n) for n in range(20)]
SMALL_DAYS = [dt.date(2025, 2, 26) + dt.timedelta(days=n) for n in range(6)]


def proxied_url(port: int) -> str:
    db = connection.settings_dict
    credentials = quote(db["USER"] or "", safe="") + (":" + quote(db["PASSWORD"], safe="") if db["PASSWORD"] else "")
    return (
        f"postgres://{credentials}@127.0.0.1:{port}/{quote(db['NAME'], safe='')}?application_name={WORKER_APPLICATION}"
    )


def test_postgres_cut_and_restarted_during_an_import_the_run_retries_and_equals_a_clean_run(
    transactional_db, real_queue, settings, tmp_path
):
    reseed_reference_data()
    settings.MEDIA_ROOT = str(tmp_path / "media")
    FxRate.objects.create(day=dt.date(2025, 1, 1), currency="EUR", rate=Decimal("1.0815"))
    openai = Provider.objects.get(slug="openai")
    cut = Account.objects.create(name="openai-cut", provider=openai, connector="usage_csv")
    clean = Account.objects.create(name="openai-clean", provider=openai, connector="usage_csv")
    small, big = tmp_path / "february.csv", tmp_path / "march.csv"
    write_usage_csv(small, SMALL_DAYS, 100, seed=1)
    write_usage_csv(big, BIG_DAYS, 1_500, seed=2)
    for account in (cut, clean):
        with small.open("rb") as stream:
            assert usage_file_import(account=account, stream=stream, file_name=small.name).status == "succeeded"
    before = account_snapshot(cut)

    db = connection.settings_dict
    with TcpProxy(db["HOST"] or "127.0.0.1", int(db["PORT"] or 5432)) as proxy:
        env = process_env(
            redis_url=django_settings.REDIS_URL, db_url=proxied_url(proxy.port), FINOPS_MEDIA_ROOT=settings.MEDIA_ROOT
        )
        worker = start_worker("pg", env, tmp_path, queues="ingest,default")
        try:
            # The clean run to compare with, imported here while the worker starts.
            with big.open("rb") as stream:
                reference = usage_file_import(account=clean, stream=stream, file_name=big.name)
            assert reference.status == "succeeded", reference.error
            wait_ready(worker)
            with big.open("rb") as stream:
                run = usage_upload_accept(account=cut, upload=stream, file_name=big.name)

            def copying():
                return [
                    pid
                    for pid, state, query in other_backends()
                    if state in ("active", "idle in transaction") and query.startswith("COPY finops_usageline")
                ]

            wait_for(copying, 60, "the worker to copy rows", [worker])
            time.sleep(0.2)
            assert proxy.cut(down_for=3.0) >= 1
            cut_at = time.monotonic()

            # Postgres rolls the cut transaction back: nothing of the run is visible, the earlier data is intact.
            wait_for(lambda: not copying(), 60, "the cut COPY to end", [worker])
            assert not UsageLine.objects.filter(ingest_run=run).exists()
            assert account_snapshot(cut) == before

            wait_for(
                lambda: IngestRun.objects.filter(id=run.id, status__in=["succeeded", "failed"]).exists(),
                90,
                "the run to end after the database came back",
                [worker],
            )
            output = worker.output()
        finally:
            worker.stop()

    run.refresh_from_db()
    assert run.status == "succeeded", f"{run.status}: {run.error}\n{logs(worker)}"
    assert "lost its database connection" in output, logs(worker)
    assert proxy.refused >= 1 or time.monotonic() - cut_at > 3  # it came back while Postgres was still "down"
    assert (run.lines_read, run.lines_written, run.lines_replaced) == (
        reference.lines_read,
        reference.lines_written,
        reference.lines_replaced,
    )
    assert lines_differing(cut, clean) == 0
    assert raw_by_day(cut) == raw_by_day(clean)
    assert rollup_by_day(cut) == rollup_by_day(clean) == raw_by_day(cut)
    assert raw_groups(account=cut) == rollup_groups(account=cut)
    cut.refresh_from_db()
    assert (cut.lease_token, cut.lease_expires_at, cut.last_error) == ("", None, "")
    assert not IngestRun.objects.filter(status__in=["queued", "running"]).exists()


def test_a_connection_cut_during_an_inline_import_fails_the_run_cleanly(transactional_db, tmp_path):
    """No worker to retry (the `import_usage` command, tasks inline): the import's own connection is terminated
    (pg_terminate_backend, from another connection) while it copies rows. The run ends failed saying the
    database connection was lost, nothing of it is kept, the lease is released and the next import works."""
    import threading

    from django.db import connections

    reseed_reference_data()
    FxRate.objects.create(day=dt.date(2025, 1, 1), currency="EUR", rate=Decimal("1.0815"))
    account = Account.objects.create(
        name="openai-inline", provider=Provider.objects.get(slug="openai"), connector="usage_csv"
    )
    small, big = tmp_path / "february.csv", tmp_path / "march.csv"
    write_usage_csv(small, SMALL_DAYS, 100, seed=1)
    write_usage_csv(big, BIG_DAYS[:12], 2_000, seed=2)  # past the first 20,000-row COPY chunk
    with small.open("rb") as stream:
        assert usage_file_import(account=account, stream=stream, file_name=small.name).status == "succeeded"
    before = account_snapshot(account)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        mine = cursor.fetchone()[0]
    terminated = []

    def cut_when_copying():
        watcher = connections.create_connection("default")
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not terminated:
                with watcher.cursor() as cursor:
                    cursor.execute("SELECT query FROM pg_stat_activity WHERE pid = %s", [mine])
                    row = cursor.fetchone()
                    if row and row[0].startswith("COPY finops_usageline"):
                        cursor.execute("SELECT pg_terminate_backend(%s)", [mine])
                        terminated.append(cursor.fetchone()[0])
                time.sleep(0.02)
        finally:
            watcher.close()

    watcher = threading.Thread(target=cut_when_copying)
    watcher.start()
    with big.open("rb") as stream:
        run = usage_file_import(account=account, stream=stream, file_name=big.name)
    watcher.join()

    assert terminated == [True]
    run.refresh_from_db()
    assert run.status == "failed"
    assert (
        run.error.startswith("The database connection was lost during the run (")
        and "nothing it wrote was kept" in run.error
    )
    assert not UsageLine.objects.filter(ingest_run=run).exists()
    assert account_snapshot(account) == before
    account.refresh_from_db()
    assert (account.lease_token, account.lease_expires_at) == ("", None)
    assert "database connection was lost" in account.last_error
    with small.open("rb") as stream:  # the account is free again: the next import runs
        again = usage_file_import(account=account, stream=stream, file_name=small.name)
    assert again.status == "succeeded", again.error
    assert raw_groups(account=account) == rollup_groups(account=account)
