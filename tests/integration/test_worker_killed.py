"""A Celery worker killed in the middle of an import loses nothing and double-counts nothing.

Real processes, not mocks: the test starts `celery worker` subprocesses on the same test database and a
real Redis queue, uploads a usage CSV, SIGKILLs the worker's whole process group in the middle of the run's
transaction — its lines COPYed into the usage-line table, not committed — checks the account's earlier data is
exactly as it was, starts a fresh worker and waits for the redelivered task (acks_late) to finish the same run.
The account's lines and rollup must then equal those of another account that imported the same files cleanly.

Where the kill lands: the test holds a lock on the daily rollup's table, so the worker's transaction, once it has
COPYed the run's lines, waits in the rollup's first statement (a DELETE of the rollup's rows) until the test lets it
go. The worker is killed there, a pause point the test sees in pg_stat_activity rather than a race against a file
big enough to be still copying (the test once wrote and imported 210,000 lines, three times, for that: ~60 s).

How a killed worker's task comes back: Redis keeps a delivered task in its `unacked` set until the worker
acknowledges it (after the task, acks_late). The workers run with CELERY_VISIBILITY_TIMEOUT=5
(finops/settings_test.py), so the fresh worker puts it back on the queue 5 s after its delivery.

Needs Postgres and Redis. Give the test a Redis database of its own (it deletes the broker's keys there):
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/finops_worker REDIS_URL=redis://127.0.0.1:6379/14 \
        .venv/bin/python -m pytest tests/integration/test_worker_killed.py
"""

import datetime as dt
import os
import random
import signal
import subprocess
import sys
import time
from decimal import Decimal
from pathlib import Path
from urllib.parse import quote

import psycopg
import pytest
import redis
from django.conf import settings
from django.db import connection
from django.db.models import Count, Sum
from django.db.models.functions import TruncDate

from finops.celery import app as celery_app
from finops.models import Account, DailySpend, FxRate, IngestRun, Provider, UsageLine
from ingest.services import usage_file_import, usage_upload_accept
from tests.conftest import reseed_reference_data
from tests.rollup_check import KEY, raw_groups, rollup_groups

pytestmark = pytest.mark.worker

ROOT = Path(__file__).resolve().parents[2]
CELERY = Path(sys.executable).with_name("celery")  # the venv's, beside the interpreter running the tests
VISIBILITY_TIMEOUT = 5

TOKEN_FIELDS = ("input_tokens", "cached_input_tokens", "cache_write_tokens", "output_tokens", "requests")
MEASURES = ("cost", "reporting_cost", *TOKEN_FIELDS)
HEADER = (
    "day,provider,model,input_tokens,cached_input_tokens,cache_write_tokens,output_tokens,requests,cost,currency,"
    "project,api_key,tags\n"
)
# The upload: a month, killed mid-transaction at the rollup's lock whatever its size (see above), so 3,000 lines
# (each import of it twice, killed and re-run, and a reference: 15,000 lines cost ~4 s of CPU more and prove the same).
BIG_DAYS = [dt.date(2025, 3, 1) + dt.timedelta(days=n) for n in range(30)]
BIG_ROWS_PER_DAY = 100
# The account's earlier data: three days before the big file's month and three days it restates.
SMALL_DAYS = [dt.date(2025, 2, 26) + dt.timedelta(days=n) for n in range(6)]
SMALL_ROWS_PER_DAY = 200

# What every test worker's environment adds: Celery's Django fixup runs Django's system checks when a worker starts
# (~1.5 s of CPU here, each worker), which are `manage.py check`'s business (tests/test_settings.py runs it),
# not a worker test's; the worker still sets Django up as in production.
WORKER_ENV = {"CELERY_SKIP_CHECKS": "1"}

# Redis keys of the broker (kombu's Redis transport): the queues, the unacked set and the bindings.
BROKER_KEYS = ("ingest*", "default*", "unacked*", "_kombu.binding*")


# --- the files ---


def write_usage_csv(path: Path, days: list[dt.date], rows_per_day: int, seed: int) -> None:
    """Billed USD and EUR lines, lines priced from the catalog (no cost) and unpriced ones (unknown model)."""
    rng = random.Random(seed)
    with path.open("w", newline="") as fh:
        fh.write(HEADER)
        for day in days:
            lines = []
            for _ in range(rows_per_day):
                kind = rng.random()
                cached = rng.randint(0, 200_000)
                cache_write = rng.randint(0, 50_000)
                all_input = cached + cache_write + rng.randint(0, 2_000_000)
                output, requests = rng.randint(0, 400_000), rng.randint(1, 3_000)
                project, key = f"proj_{rng.randint(1, 40)}", f"key_{rng.randint(1, 120)}"
                tags = f"env={rng.choice(('prod', 'staging'))};feature=f{rng.randint(1, 9)}"
                if kind < 0.6:
                    model, cost, currency = rng.choice(("gpt-4o-2024-08-06", "gpt-4.1")), _amount(rng), "USD"
                elif kind < 0.7:
                    model, cost, currency = "gpt-4o", _amount(rng), "EUR"
                elif kind < 0.95:
                    model, cost, currency = rng.choice(("gpt-4o-mini", "o4-mini")), "", ""  # estimated
                else:
                    model, cost, currency = "acme-distill-7b", "", ""  # no list price: unpriced, never $0
                lines.append(
                    f"{day},openai,{model},{all_input},{cached},{cache_write},{output},{requests},{cost},{currency},"
                    f"{project},{key},{tags}\n"
                )
            fh.writelines(lines)


def _amount(rng: random.Random) -> str:
    return f"{rng.randint(0, 99_999)}.{rng.randint(0, 999_999_999):09d}"


# --- what the database holds ---


def raw_by_day(account: Account) -> dict:
    rows = (
        UsageLine.objects.filter(account=account)
        .annotate(day=TruncDate("period_start"))
        .values("day")
        .annotate(**{m: Sum(m) for m in MEASURES}, line_count=Count("id"))
        .order_by("day")
    )
    return {row.pop("day"): row for row in rows}


def rollup_by_day(account: Account) -> dict:
    rows = (
        DailySpend.objects.filter(account=account)
        .values("day")
        .annotate(**{m: Sum(m) for m in MEASURES}, line_count=Sum("line_count"))
        .order_by("day")
    )
    return {row.pop("day"): row for row in rows}


def lines_differing(first: Account, second: Account) -> int:
    """Lines one account has and the other lacks (a multiset difference both ways), compared on every value
    an import writes: 0 means the two accounts hold the same lines, none lost, none twice."""
    columns = (
        "period_start, period_end, model, model_raw, provider_id, project_ref, api_key_ref, tag_set_id, cost, "
        "currency, reporting_cost, cost_basis, input_tokens, cached_input_tokens, cache_write_tokens, "
        "output_tokens, requests"
    )
    table = UsageLine._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT count(*) FROM ("
            f"(SELECT {columns} FROM {table} WHERE account_id = %(a)s EXCEPT ALL "
            f" SELECT {columns} FROM {table} WHERE account_id = %(b)s) UNION ALL "
            f"(SELECT {columns} FROM {table} WHERE account_id = %(b)s EXCEPT ALL "
            f" SELECT {columns} FROM {table} WHERE account_id = %(a)s)) d",
            {"a": first.id, "b": second.id},
        )
        return cursor.fetchone()[0]


def account_snapshot(account: Account) -> dict:
    return {
        "line_ids": sorted(UsageLine.objects.filter(account=account).values_list("id", flat=True)),
        "raw": raw_by_day(account),
        "rollup": rollup_by_day(account),
    }


WORKER_APPLICATION = "finops-test-worker"
DAILY_ROLLUP = DailySpend._meta.db_table
USAGE_LINES = UsageLine._meta.db_table


def other_backends() -> list[tuple[int, str, str]]:
    """The test workers' connections to the test database: (pid, state, last statement).

    Workers connect with their own application_name, so idle connections that earlier tests left behind
    (live-server threads) are never mistaken for a worker's.
    """
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid, state, query FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend' "
            "AND application_name = %s",
            [WORKER_APPLICATION],
        )
        return cursor.fetchall()


def rollup_locked() -> psycopg.Connection:
    """A connection of its own holding the daily rollup's table in EXCLUSIVE mode (reads go on, writes wait) until
    it commits: the pause point of the worker's import, whose rollup rebuild starts with a DELETE there."""
    db = connection.settings_dict
    lock = psycopg.connect(
        dbname=db["NAME"],
        user=db["USER"] or None,
        password=db["PASSWORD"] or None,
        host=db["HOST"] or None,
        port=db["PORT"] or None,
        application_name="finops-test-rollup-lock",
    )
    lock.execute(f'LOCK TABLE "{DAILY_ROLLUP}" IN EXCLUSIVE MODE')
    return lock


def paused_in_rollup() -> list[int]:
    """The workers' backends waiting for the rollup's lock in its DELETE, having written usage lines in their
    transaction (ROW EXCLUSIVE on the usage-line table, which the COPY takes; the rollup comes after every COPY)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT a.pid FROM pg_stat_activity a WHERE a.datname = current_database() AND a.application_name = %s "
            "AND a.wait_event_type = 'Lock' AND a.query LIKE %s AND EXISTS (SELECT 1 FROM pg_locks l "
            "WHERE l.pid = a.pid AND l.relation = %s::regclass AND l.mode = 'RowExclusiveLock' AND l.granted)",
            [WORKER_APPLICATION, f'DELETE FROM "{DAILY_ROLLUP}"%', USAGE_LINES],
        )
        return [pid for (pid,) in cursor.fetchall()]


# --- the workers and the broker ---


def database_url() -> str:
    db = connection.settings_dict
    credentials = quote(db["USER"] or "", safe="")
    if db["PASSWORD"]:
        credentials += ":" + quote(db["PASSWORD"], safe="")
    host = f"{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}"
    return f"postgres://{credentials}@{host}/{quote(db['NAME'], safe='')}?application_name={WORKER_APPLICATION}"


def purge_broker() -> None:
    client = redis.Redis.from_url(settings.REDIS_URL)
    try:
        for pattern in BROKER_KEYS:
            keys = list(client.scan_iter(match=pattern, count=1000))
            if keys:
                client.delete(*keys)
    finally:
        client.close()


def release_restore_lock() -> None:
    """Drop the lock workers take to put unacknowledged tasks back, in case the killed worker held it.

    A worker takes it for a moment every second; killed in that moment, it would keep the fresh worker
    from redelivering anything until the lock expires (5 minutes).
    """
    client = redis.Redis.from_url(settings.REDIS_URL)
    try:
        client.delete("unacked_mutex")
    finally:
        client.close()


def process_group_alive(pgid: int) -> bool:
    """Whether any process of the group is still running (zombies waiting to be reaped do not count)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":  # fields after the command: state, ppid, pgrp, …
            return True
    return False


class Worker:
    """`celery worker` in a process group of its own, so one signal reaches the main process and its pool child."""

    def __init__(self, name: str, env: dict, log_path: Path):
        self.name, self.log_path = name, log_path
        self.log = log_path.open("wb")
        self.process = subprocess.Popen(
            [
                str(CELERY),
                "-A",
                "finops",
                "worker",
                "-Q",
                "ingest,default",
                "--concurrency",
                "1",
                "--pool",
                "prefork",
                "--loglevel",
                "INFO",
                "-n",
                f"{name}@%h",
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
            ],
            cwd=ROOT,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")

    def kill(self) -> None:
        """SIGKILL the whole group: no warm shutdown, no ack, no rollback sent to Postgres."""
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait(timeout=10)
        wait_for(lambda: not process_group_alive(self.process.pid), 10, f"worker {self.name}'s pool to die", [self])

    def stop(self) -> None:
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGTERM)  # warm shutdown: it is idle by now
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                pass
        if process_group_alive(self.process.pid):
            self.kill()
        self.log.close()


def wait_for(predicate, timeout: float, what: str, workers=()):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            logs = "\n".join(f"--- worker {w.name} ---\n{w.output()[-6000:]}" for w in workers)
            pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}\n{logs}")
        time.sleep(0.1)


@pytest.fixture
def real_queue(settings):
    """This process sends tasks to Redis instead of running them inline, while the test runs."""
    purge_broker()
    eager = celery_app.conf.task_always_eager
    settings.CELERY_TASK_ALWAYS_EAGER = False
    celery_app.conf.task_always_eager = False
    yield
    celery_app.conf.task_always_eager = eager
    purge_broker()


@pytest.fixture
def start_worker(transactional_db, real_queue, settings, tmp_path):
    """start_worker(name) -> a running Worker on this test's database, queue and media folder.

    Every worker is stopped when the test ends, failed or not, before the database is flushed.
    """
    # Committed data (the workers read it) means a flush after each such test, seeded providers and catalog
    # prices included: seed them again (both are idempotent).
    reseed_reference_data()
    settings.MEDIA_ROOT = str(tmp_path / "media")  # uploads are kept here and read back by the worker
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "finops.settings_test",
        "DJANGO_READ_DOT_ENV_FILE": "0",
        "DATABASE_URL": database_url(),
        "REDIS_URL": settings.REDIS_URL,
        "CELERY_EAGER": "0",
        **WORKER_ENV,
        "CELERY_VISIBILITY_TIMEOUT": str(VISIBILITY_TIMEOUT),
        "FINOPS_MEDIA_ROOT": settings.MEDIA_ROOT,
        "PYTHONUNBUFFERED": "1",
    }
    workers: list[Worker] = []

    def start(name: str) -> Worker:
        worker = Worker(name, env, tmp_path / f"worker-{name}.log")
        workers.append(worker)
        return worker

    yield start
    for worker in workers:
        worker.stop()


def wait_until_ready(worker: Worker) -> None:
    started = lambda: worker.process.poll() is not None or " ready." in worker.output()  # noqa: E731
    wait_for(started, 60, f"{worker.name} to start", [worker])
    assert worker.process.poll() is None, f"worker {worker.name} exited:\n{worker.output()}"


# --- the test ---


def test_a_worker_killed_during_an_import_loses_nothing_and_the_rerun_counts_nothing_twice(start_worker, tmp_path):
    began = time.monotonic()
    FxRate.objects.create(day=dt.date(2025, 1, 1), currency="EUR", rate=Decimal("1.0815"))
    openai = Provider.objects.get(slug="openai")
    killed = Account.objects.create(name="openai-killed", provider=openai, connector="usage_csv")
    clean = Account.objects.create(name="openai-clean", provider=openai, connector="usage_csv")
    small, big = tmp_path / "february.csv", tmp_path / "march.csv"
    write_usage_csv(small, SMALL_DAYS, SMALL_ROWS_PER_DAY, seed=1)
    write_usage_csv(big, BIG_DAYS, BIG_ROWS_PER_DAY, seed=2)
    first = start_worker("first")  # starts while the earlier data is imported

    # The account's earlier data, imported inline into both accounts.
    for account in (killed, clean):
        with small.open("rb") as stream:
            run = usage_file_import(account=account, stream=stream, file_name=small.name)
        assert run.status == IngestRun.Status.SUCCEEDED, run.error
    before = account_snapshot(killed)
    assert len(before["line_ids"]) == len(SMALL_DAYS) * SMALL_ROWS_PER_DAY
    wait_until_ready(first)

    # The upload, queued for the worker as the Sources page does it, while the rollup's table is locked.
    lock = rollup_locked()
    try:
        with big.open("rb") as stream:
            run = usage_upload_accept(account=killed, upload=stream, file_name=big.name)

        # Killed in the middle of the run's transaction: the run has started, its lines are COPYed and its rollup
        # waits on the lock; SIGKILL for the main process and its pool.
        running = IngestRun.objects.filter(id=run.id, status=IngestRun.Status.RUNNING)
        wait_for(running.exists, 60, "the run to start", [first])
        wait_for(paused_in_rollup, 60, "the worker's import to write its lines and wait for the rollup", [first])
        worker_backends = {pid for pid, _, _ in other_backends()}
        first.kill()
        killed_after = time.monotonic() - began
        release_restore_lock()
        run.refresh_from_db()
        assert run.status == IngestRun.Status.RUNNING, f"the import ended before the kill ({run.status})"
    finally:
        lock.close()  # ends its transaction: the dead worker's DELETE goes on, and finds no client to answer
    # Postgres rolls the dead worker's transaction back once it sees the connection gone: when its statement ends.
    gone = lambda: not worker_backends & {pid for pid, _, _ in other_backends()}  # noqa: E731
    wait_for(gone, 60, "the dead worker's connection to close")

    # While the run is dead: the account's earlier data is exactly as it was, nothing of the run is visible.
    assert account_snapshot(killed) == before
    assert not UsageLine.objects.filter(ingest_run=run).exists()
    assert raw_groups(account=killed) == rollup_groups(account=killed)
    # The lease still names the run: only the redelivered task of this same run may take it back.
    killed.refresh_from_db()
    assert killed.lease_token == str(run.id)

    # A fresh worker gets the unacknowledged task back; meanwhile the reference import runs here.
    fresh = start_worker("fresh")
    reference_started = time.monotonic()
    with big.open("rb") as stream:
        reference = usage_file_import(account=clean, stream=stream, file_name=big.name)
    assert reference.status == IngestRun.Status.SUCCEEDED, reference.error
    reference_seconds = time.monotonic() - reference_started
    wait_for(
        lambda: IngestRun.objects.filter(id=run.id).exclude(status=IngestRun.Status.RUNNING).exists(),
        120,
        "the re-run to finish",
        [first, fresh],
    )
    run.refresh_from_db()
    assert run.status == IngestRun.Status.SUCCEEDED, f"{run.status}: {run.error}\n{fresh.output()[-6000:]}"
    assert "run_import[" in fresh.output(), "the fresh worker never received the task"

    # The re-run ends with what a clean run of the same files gives: every line once, every total equal.
    big_lines = len(BIG_DAYS) * BIG_ROWS_PER_DAY
    restated = len(set(SMALL_DAYS) & set(BIG_DAYS)) * SMALL_ROWS_PER_DAY
    assert (run.lines_read, run.lines_written, run.lines_replaced) == (big_lines, big_lines, restated)
    assert (run.lines_read, run.lines_written, run.lines_replaced) == (
        reference.lines_read,
        reference.lines_written,
        reference.lines_replaced,
    )
    assert lines_differing(killed, clean) == 0
    raw = raw_by_day(killed)
    assert raw == raw_by_day(clean)
    assert sum(day["line_count"] for day in raw.values()) == big_lines + len(before["line_ids"]) - restated
    assert set(raw) == set(SMALL_DAYS) | set(BIG_DAYS)
    for day in set(SMALL_DAYS) - set(BIG_DAYS):  # days the upload does not cover keep their earlier lines
        assert raw[day] == before["raw"][day]
    assert rollup_by_day(killed) == rollup_by_day(clean) == raw
    assert raw_groups(account=killed) == rollup_groups(account=killed)
    basis = KEY.index("cost_basis")
    assert {key[basis] for key in raw_groups(account=killed)} == {"billed", "estimated", "unpriced"}

    # One run for the upload, succeeded; the lease is released and the account shows no error.
    assert list(IngestRun.objects.filter(account=killed, file_name=big.name).values_list("status", flat=True)) == [
        IngestRun.Status.SUCCEEDED
    ]
    killed.refresh_from_db()
    assert (killed.lease_token, killed.lease_expires_at, killed.last_error) == ("", None, "")
    print(
        f"\nkilled {killed_after:.1f} s in; reference import {reference_seconds:.1f} s; "
        f"re-run succeeded {time.monotonic() - began:.1f} s in"
    )
