"""Shared parts of the fault tests (tests/integration/test_faults_*.py): real `celery worker` and `celery beat`
processes on the test database, a fake OpenAI Admin API that answers any window, and the figures compared.

Workers and beats run in process groups of their own (killed as a group), with settings_test's knobs in their
environment: CELERY_EAGER=0 (consume a real queue), CELERY_VISIBILITY_TIMEOUT, CELERY_BEAT_EVERY (every beat
entry every N seconds), CELERY_BEAT_ONLY (a beat's entries: start_beat's `only`), FINOPS_INGEST_REQUEUE_SECONDS,
EMAIL_URL (the test's SMTP server).
"""

import datetime as dt
import os
import subprocess
import time
from pathlib import Path

import pytest
import redis
from django.db.models import Count, Sum

from finops.models import Account, DailySpend, Provider, UsageLine
from finops.sources.services.accounts import account_set_credentials
from tests.fakes.provider_server import FakeProviderServer, Reply
from tests.ingest.test_openai_api import COMPLETIONS, COSTS, EMBEDDINGS, SECRET
from tests.integration.test_worker_killed import (
    BROKER_KEYS,
    CELERY,
    ROOT,
    WORKER_APPLICATION,
    database_url,
    process_group_alive,
    wait_for,
)

__all__ = ["WORKER_APPLICATION", "database_url", "wait_for"]


class Process:
    """A celery command in a process group of its own, its output in a log file."""

    def __init__(self, name: str, args: list[str], env: dict, log_path: Path):
        self.name, self.log_path = name, log_path
        self.log = log_path.open("wb")
        self.process = subprocess.Popen(
            [str(CELERY), "-A", "finops", *args],
            cwd=ROOT,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        import signal

        if self.process.poll() is None:
            try:  # warm shutdown: the main process lets a running task finish (its pool child is not signalled)
                os.kill(self.process.pid, signal.SIGTERM)
                self.process.wait(timeout=20)
            except (subprocess.TimeoutExpired, ProcessLookupError):
                pass
        if process_group_alive(self.process.pid):
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.process.wait(timeout=10)
        self.log.close()


def start_worker(
    name: str, env: dict, tmp_path: Path, *, queues: str = "ingest,default,notify,rollup", concurrency: int = 1
) -> Process:
    return Process(
        name,
        [
            "worker",
            "-Q",
            queues,
            "--concurrency",
            str(concurrency),
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
        env,
        tmp_path / f"worker-{name}.log",
    )


def start_beat(name: str, env: dict, tmp_path: Path, *, only: tuple[str, ...] = ()) -> Process:
    """`celery beat`; with `only`, it schedules those entries of CELERY_BEAT_SCHEDULE and no other (settings_test's
    CELERY_BEAT_ONLY): under CELERY_BEAT_EVERY every entry is a task a second, which the workers run while the test
    waits, so a test names the entries it is about."""
    return Process(
        name,
        ["beat", "--loglevel", "INFO", "--schedule", str(tmp_path / f"beat-{name}.db")],
        {**env, "CELERY_BEAT_ONLY": ",".join(only)} if only else env,
        tmp_path / f"beat-{name}.log",
    )


def wait_ready(*workers: Process) -> None:
    for worker in workers:
        wait_for(
            lambda worker=worker: worker.process.poll() is not None or " ready." in worker.output(),
            60,
            f"{worker.name} to start",
            workers,
        )
        assert worker.process.poll() is None, f"{worker.name} exited:\n{worker.output()}"


def process_env(*, redis_url: str, db_url: str | None = None, **extra) -> dict:
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "finops.settings_test",
        "DJANGO_READ_DOT_ENV_FILE": "0",
        "DATABASE_URL": db_url or database_url(),
        "REDIS_URL": redis_url,
        "CELERY_EAGER": "0",
        "CELERY_SKIP_CHECKS": "1",  # see test_worker_killed.WORKER_ENV
        "PYTHONUNBUFFERED": "1",
        **{key: str(value) for key, value in extra.items()},
    }


def purge(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    try:
        for pattern in (*BROKER_KEYS, "notify*", "rollup*", "unacked_mutex"):
            keys = list(client.scan_iter(match=pattern, count=1000))
            if keys:
                client.delete(*keys)
    finally:
        client.close()


def logs(*processes: Process) -> str:
    return "\n".join(f"--- {p.name} ---\n{p.output()[-5000:]}" for p in processes)


# --- a fake OpenAI Admin API answering any window ---


def _days(query: dict) -> list[dt.datetime]:
    start = dt.datetime.fromtimestamp(int(query["start_time"][0]), dt.UTC)
    end = dt.datetime.fromtimestamp(int(query["end_time"][0]), dt.UTC)
    days, day = [], start
    while day < end:
        days.append(day)
        day += dt.timedelta(days=1)
    return days


def _bucket(day: dt.datetime, results: list[dict]) -> dict:
    return {
        "object": "bucket",
        "start_time": int(day.timestamp()),
        "end_time": int((day + dt.timedelta(days=1)).timestamp()),
        "results": results,
    }


def window_routes(server: FakeProviderServer, *, delay: float = 0.0) -> None:
    """Each day of the window asked: a billed cost and the usage of two projects (figures from the day's date,
    so two pulls of a day agree). `delay` seconds before every answer makes a pull last."""

    def page(results_of):
        def serve(query: dict) -> Reply:
            time.sleep(delay)
            return Reply(
                200,
                {
                    "object": "page",
                    "data": [_bucket(day, results_of(day)) for day in _days(query)],
                    "has_more": False,
                    "next_page": None,
                },
            )

        return serve

    def costs(day):
        n = day.toordinal() % 17
        return [
            {
                "object": "organization.costs.result",
                "amount": {"value": f"{3 + n}.{n:02d}", "currency": "usd"},
                "line_item": "gpt-4o-mini-2024-07-18, input",
                "project_id": "proj_support",
            }
        ]

    def completions(day):
        n = day.toordinal() % 17
        return [
            {
                "object": "organization.usage.completions.result",
                "input_tokens": 100_000 + n,
                "output_tokens": 5_000,
                "num_model_requests": 40 + n,
                "project_id": project,
                "api_key_id": f"key_{project}",
                "model": "gpt-4o-mini-2024-07-18",
                "batch": False,
                "service_tier": "default",
                "input_cached_tokens": 0,
            }
            for project in ("proj_support", "proj_search")
        ]

    server.route(COSTS, page(costs))
    server.route(COMPLETIONS, page(completions))
    server.route(EMBEDDINGS, page(lambda day: []))


def api_account(name: str, server: FakeProviderServer, **fields) -> Account:
    account = Account.objects.create(
        name=name,
        provider=Provider.objects.get(slug="openai"),
        connector="openai_api",
        base_url=server.url + "/v1",
        **fields,
    )
    account_set_credentials(account=account, secret=SECRET)
    return account


def pulls_of(server: FakeProviderServer, path: str = COSTS) -> list[tuple[str, str]]:
    """The windows the provider was asked for on `path`, in order."""
    return [(r.query["start_time"][0], r.query["end_time"][0]) for r in server.requests if r.path == path]


def figures(account: Account) -> dict:
    """The account's lines and rollup, by day (what a clean pull of the same windows must equal)."""
    measures = ("cost", "reporting_cost", "input_tokens", "output_tokens", "requests")
    raw = (
        UsageLine.objects.filter(account=account)
        .values("period_start")
        .annotate(**{m: Sum(m) for m in measures}, lines=Count("id"))
        .order_by("period_start")
    )
    rollup = (
        DailySpend.objects.filter(account=account)
        .values("day")
        .annotate(**{m: Sum(m) for m in measures}, lines=Sum("line_count"))
        .order_by("day")
    )
    return {
        "raw": [tuple(r.values())[1:] for r in raw],
        "rollup": [tuple(r.values())[1:] for r in rollup],
        "days": [r["day"] for r in rollup],
    }


@pytest.fixture
def fake_provider():
    with FakeProviderServer() as server:
        window_routes(server)
        yield server


# --- alerts and their emails ---


def cap_event(cap, *, threshold: int):
    """A cap alert raised as the evaluation raises it (a pending event; the beat's delivery sends it)."""
    from tests.test_alert_delivery import raise_cap_event

    return raise_cap_event(cap, threshold=threshold, title=f"Support Platform at {threshold}% of its cap")


def emails_by_event(smtp) -> dict[tuple[str, str], int]:
    """(subject, recipient) -> how many emails the SMTP server received: every value must be 1."""
    counts: dict[tuple[str, str], int] = {}
    for message, recipients in zip(smtp.messages, smtp.envelopes):
        for recipient in recipients:
            key = (str(message["Subject"]), recipient)
            counts[key] = counts.get(key, 0) + 1
    return counts


def told(smtp, event) -> set[str]:
    """Who received an email about `event` (its title is in the subject)."""
    return {to for (subject, to) in emails_by_event(smtp) if event.title in subject}
