"""Postgres cut off and restarted in the middle of an import: the run retries and ends equal to a clean run, no
partial window is ever visible, and the run is never left `running`.

A real `celery worker` reaches Postgres through a TCP proxy (tests/fakes/tcp_proxy.py) that the test cuts while
the worker is inside its COPY into the usage-line table: every connection closed at once and new ones refused
for 3 s, as clients see a Postgres restart (the shared cluster itself is never stopped). What this found, and the
fix: ingest/services.py, _database_lost (the run used to stay `running` holding its account's lease, and the task
was never retried).

Where the cut lands: the proxy passes the COPY statement and then holds what the client sends (its rows), so the
server waits in the COPY and the client inside psycopg's copy — the point the cut must hit, since a cut there
raises psycopg's own error rather than Django's (ingest/services.py, DATABASE_LOST) — however small the file. The
files were once 30,000 and 24,000 lines so that a COPY was still streaming when a poll of pg_stat_activity saw it.
"""

import datetime as dt
import threading
import time
from decimal import Decimal
from urllib.parse import quote

import psycopg
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
# The statement the proxy holds the client in: the writer's COPY of usage lines (ingest/columnar.py).
COPY_LINES = f"COPY {UsageLine._meta.db_table} ".encode()


def proxied_url(port: int) -> str:
    db = connection.settings_dict
    credentials = quote(db["USER"] or "", safe="") + (":" + quote(db["PASSWORD"], safe="") if db["PASSWORD"] else "")
    return (  # no TLS, whatever the server offers: the proxy reads the statements
        f"postgres://{credentials}@127.0.0.1:{port}/{quote(db['NAME'], safe='')}"
        f"?application_name={WORKER_APPLICATION}&sslmode=disable"
    )


def copying(*, pid: int | None = None, cursor=None) -> list[int]:
    """The backends (the workers', or `pid`) inside a COPY of usage lines: running it, waiting for its rows.
    Read on `cursor` if given (a connection off the proxy), else on the test's connection."""
    sql = (
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND state = 'active' "
        "AND query LIKE %s AND (pid = %s OR (%s::int IS NULL AND application_name = %s))"
    )
    params = [COPY_LINES.decode().strip() + "%", pid, pid, WORKER_APPLICATION]
    if cursor is not None:
        return [found for (found,) in cursor.execute(sql, params).fetchall()]
    with connection.cursor() as django_cursor:
        django_cursor.execute(sql, params)
        return [found for (found,) in django_cursor.fetchall()]


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
    write_usage_csv(big, BIG_DAYS, 100, seed=2)  # restates three of the small file's days
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
            held = proxy.hold_after(COPY_LINES)
            with big.open("rb") as stream:
                run = usage_upload_accept(account=cut, upload=stream, file_name=big.name)

            # The worker's transaction has sent its COPY, and Postgres waits for the rows the proxy holds: cut there.
            wait_for(held.is_set, 60, "the worker to begin its COPY", [worker])
            wait_for(copying, 60, "Postgres to wait in the worker's COPY", [worker])
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
    (pg_terminate_backend, from another connection) while it is inside its COPY. The run ends failed saying the
    database connection was lost, nothing of it is kept, the lease is released and the next import works.

    The test's connection goes through the proxy for the import, held after the COPY statement (see the module's
    docstring); the termination comes from Postgres, as before."""
    reseed_reference_data()
    FxRate.objects.create(day=dt.date(2025, 1, 1), currency="EUR", rate=Decimal("1.0815"))
    account = Account.objects.create(
        name="openai-inline", provider=Provider.objects.get(slug="openai"), connector="usage_csv"
    )
    small, big = tmp_path / "february.csv", tmp_path / "march.csv"
    write_usage_csv(small, SMALL_DAYS, 100, seed=1)
    write_usage_csv(big, BIG_DAYS[:12], 100, seed=2)
    with small.open("rb") as stream:
        assert usage_file_import(account=account, stream=stream, file_name=small.name).status == "succeeded"
    before = account_snapshot(account)
    db = connection.settings_dict
    direct = {key: db[key] for key in ("HOST", "PORT", "OPTIONS")}
    terminated = []

    def terminate_when_copying(proxy: TcpProxy, held: threading.Event, mine: int) -> None:
        watcher = psycopg.connect(
            dbname=db["NAME"],
            user=db["USER"] or None,
            password=db["PASSWORD"] or None,
            host=direct["HOST"] or None,
            port=direct["PORT"] or None,
            autocommit=True,
        )
        try:
            deadline = time.monotonic() + 60
            while not held.wait(0.02) or not copying(pid=mine, cursor=watcher.cursor()):
                if time.monotonic() > deadline:
                    return  # never inside the COPY: terminated stays empty and the test fails
            terminated.append(watcher.execute("SELECT pg_terminate_backend(%s)", [mine]).fetchone()[0])
        finally:
            watcher.close()
            proxy.release()  # the import is never left waiting on the proxy

    with TcpProxy(db["HOST"] or "127.0.0.1", int(db["PORT"] or 5432)) as proxy:
        connection.close()
        db.update(HOST="127.0.0.1", PORT=str(proxy.port), OPTIONS={**db["OPTIONS"], "sslmode": "disable"})
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_backend_pid()")
                mine = cursor.fetchone()[0]
            watcher = threading.Thread(target=terminate_when_copying, args=(proxy, proxy.hold_after(COPY_LINES), mine))
            watcher.start()
            with big.open("rb") as stream:
                run = usage_file_import(account=account, stream=stream, file_name=big.name)
            watcher.join()
        finally:
            connection.close()
            db.update(direct)

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
