"""The monthly report is sent once however many beats and workers run: real `celery worker` processes on the
`notify` queue (two of them, two pool processes each) take four `send_reports` tasks at once — what two beat
processes each firing twice would queue — against the same test database, and a real SMTP server receives one
email per subscriber, from one published version.

Needs Postgres and Redis; give it a Redis database of its own (it deletes the broker's keys there):
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/finops_x REDIS_URL=redis://127.0.0.1:6379/N \
        .venv/bin/python -m pytest tests/integration/test_report_workers.py
"""

import os
import re
import signal
import subprocess
from pathlib import Path

import pytest
import redis
from django.conf import settings
from django.utils import timezone

from finops.celery import app as celery_app
from finops.contracts.selectors import add_months
from finops.core.months import month_of
from finops.models import ReportDelivery, ReportSendAttempt, ReportSnapshot, ReportSubscription, User
from finops.reports.services.subscriptions import subscriptions_default_ensure
from tests.conftest import make_user, reseed_reference_data
from tests.fakes.smtp_server import FakeSmtpServer
from tests.report_helpers import two_months_of_support_usage

from .test_worker_killed import CELERY, ROOT, database_url, process_group_alive, wait_for

pytestmark = pytest.mark.worker

SENT = re.compile(r"Task finops\.tasks\.send_reports\[[0-9a-f-]+\] succeeded in [0-9.]+s: (\d+)")
NOTIFY_KEYS = ("notify*", "unacked*", "_kombu.binding*")


def purge_notify() -> None:
    client = redis.Redis.from_url(settings.REDIS_URL)
    try:
        for pattern in NOTIFY_KEYS:
            keys = list(client.scan_iter(match=pattern, count=1000))
            if keys:
                client.delete(*keys)
    finally:
        client.close()


class NotifyWorker:
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
                "notify",
                "--concurrency",
                "2",
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

    def stop(self) -> None:
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGTERM)
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)
        wait_for(lambda: not process_group_alive(self.process.pid), 15, f"worker {self.name} to stop", [self])
        self.log.close()


@pytest.fixture
def smtp():
    with FakeSmtpServer() as server:
        yield server


@pytest.fixture
def notify_workers(transactional_db, settings, smtp, tmp_path):
    reseed_reference_data()
    purge_notify()
    eager = celery_app.conf.task_always_eager
    settings.CELERY_TASK_ALWAYS_EAGER = celery_app.conf.task_always_eager = False
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "finops.settings_test",
        "DJANGO_READ_DOT_ENV_FILE": "0",
        "DATABASE_URL": database_url(),
        "REDIS_URL": settings.REDIS_URL,
        "CELERY_EAGER": "0",
        "EMAIL_URL": smtp.url,
        "SITE_URL": "https://finops.example.com",
        "PYTHONUNBUFFERED": "1",
    }
    workers = [NotifyWorker(name, env, tmp_path / f"worker-{name}.log") for name in ("one", "two")]
    yield workers
    for worker in workers:
        worker.stop()
    celery_app.conf.task_always_eager = eager
    purge_notify()


def four_send_tasks_on(notify_workers) -> int:
    """Once both workers are ready, queue four send_reports tasks (two beats' worth, twice over) and wait for all
    four to finish: how many emails they sent between them."""
    from finops.tasks import send_reports

    for worker in notify_workers:
        wait_for(
            lambda w=worker: w.process.poll() is not None or " ready." in w.output(),
            60,
            f"{worker.name} to start",
            notify_workers,
        )
        assert worker.process.poll() is None, worker.output()
    for _ in range(4):
        send_reports.apply_async(expires=3540)
    finished = lambda: len(SENT.findall("".join(w.output() for w in notify_workers))) >= 4  # noqa: E731
    wait_for(finished, 240, "the four tasks to finish", notify_workers)
    logs = "".join(w.output() for w in notify_workers)
    sent = [int(n) for n in SENT.findall(logs)]
    assert len(sent) == 4 and "Traceback" not in logs, logs[-4000:]
    return sum(sent)


def test_four_send_tasks_on_two_real_workers_publish_one_version_and_send_each_subscriber_once(
    notify_workers, smtp, openai_account, support_agent
):
    # The workers read the real clock: the report is last month's, every subscription's day (the 1st) has come.
    month = add_months(month_of(timezone.now().date()), -1)
    two_months_of_support_usage(openai_account, support_agent, month=month)
    for name in ("fiona", "fred"):
        make_user(name, User.Role.FINANCE)
    subscriptions_default_ensure()
    ReportSubscription.objects.create(email="cfo@example.com")
    ReportSubscription.objects.update(day_of_month=1)
    assert four_send_tasks_on(notify_workers) == 3  # 3 emails, whoever sent them
    assert ReportSnapshot.objects.filter(month=month).count() == 1 == ReportSnapshot.objects.count()
    assert sorted(r for rcpts in smtp.envelopes for r in rcpts) == [
        "cfo@example.com",
        "fiona@example.com",
        "fred@example.com",
    ]
    assert {m["X-FinOps-Report"] for m in smtp.messages} == {f"{month:%Y-%m} v1"}
    assert ReportDelivery.objects.filter(state=ReportDelivery.State.SENT).count() == 3
    assert ReportSendAttempt.objects.count() == 3


def test_a_restated_month_reaches_each_subscriber_once_from_four_tasks_on_two_real_workers(
    notify_workers, smtp, settings, openai_account, support_agent
):
    """Last month was emailed as version 1; a day of it is re-imported; two beats' worth of send_reports tasks (four)
    on two workers publish one version 2 and send each subscriber one restated email."""
    from decimal import Decimal

    from tests.report_helpers import import_usage, month_rows

    month = _last_month_emailed_as_version_1(settings, smtp, openai_account, support_agent)
    restated_day = f"{month:%Y-%m}-14"
    import_usage(
        openai_account,
        [r for r in month_rows(month, cost=Decimal("20.00"), tokens=2_400_000) if r.startswith(restated_day)],
        "corrected.csv",
    )
    assert four_send_tasks_on(notify_workers) == 2
    assert list(ReportSnapshot.objects.filter(month=month).order_by("version").values_list("version", flat=True)) == [
        1,
        2,
    ]
    restated = [m for m in smtp.messages if "RESTATED" in m["Subject"]]
    assert sorted(
        r for m, rcpts in zip(smtp.messages, smtp.envelopes) if "RESTATED" in m["Subject"] for r in rcpts
    ) == ["cfo@example.com", "fiona@example.com"]
    assert {m["X-FinOps-Report"] for m in restated} == {f"{month:%Y-%m} v2 restates v1"}
    assert (
        ReportSendAttempt.objects.count() == 4
        and ReportDelivery.objects.filter(state=ReportDelivery.State.SENT).count() == 4
    )


def test_two_real_beats_and_two_workers_send_a_restated_month_once_to_each_subscriber(
    transactional_db, settings, tmp_path, openai_account, support_agent
):
    """Two `celery beat` processes started by mistake, each firing send-reports every second
    (CELERY_BEAT_EVERY=1), and two workers taking every copy: last month was emailed as version 1 and a day of it
    re-imported; each subscriber receives exactly one restated email, however many ticks follow."""
    import time
    from decimal import Decimal

    from tests.integration.fault_helpers import process_env, purge, start_beat, start_worker, wait_ready
    from tests.report_helpers import import_usage, month_rows

    reseed_reference_data()
    purge(settings.REDIS_URL)
    smtp = FakeSmtpServer().start()
    processes = []
    try:
        month = _last_month_emailed_as_version_1(settings, smtp, openai_account, support_agent)
        import_usage(
            openai_account,
            [
                r
                for r in month_rows(month, cost=Decimal("20.00"), tokens=2_400_000)
                if r.startswith(f"{month:%Y-%m}-14")
            ],
            "corrected.csv",
        )
        env = process_env(
            redis_url=settings.REDIS_URL,
            CELERY_BEAT_EVERY=1,
            EMAIL_URL=smtp.url,
            SITE_URL="https://finops.example.com",
        )
        processes = [
            start_worker("w1", env, tmp_path, queues="notify,default,ingest,rollup", concurrency=2),
            start_worker("w2", env, tmp_path, queues="notify,default,ingest,rollup", concurrency=2),
            start_beat("beat1", env, tmp_path),
            start_beat("beat2", env, tmp_path),
        ]
        wait_ready(*processes[:2])
        restated = lambda: [m for m in smtp.messages if "RESTATED" in m["Subject"]]  # noqa: E731
        wait_for(lambda: len(restated()) >= 2, 90, "the restated emails", processes)
        time.sleep(5)  # both beats keep firing send-reports every second
        ticks = [p.output().count("Sending due task send-reports") for p in processes[2:]]
        errors = [line for p in processes for line in p.output().splitlines() if "Traceback" in line]
    finally:
        for process in processes:
            process.stop()
        smtp.stop()
        purge(settings.REDIS_URL)

    assert min(ticks) >= 5, ticks  # both beats really fired, many times each
    assert errors == []
    recipients = sorted(
        r for m, rcpts in zip(smtp.messages, smtp.envelopes) if "RESTATED" in m["Subject"] for r in rcpts
    )
    assert recipients == ["cfo@example.com", "fiona@example.com"]
    assert {m["X-FinOps-Report"] for m in restated()} == {f"{month:%Y-%m} v2 restates v1"}
    assert list(ReportSnapshot.objects.filter(month=month).values_list("version", flat=True).order_by("version")) == [
        1,
        2,
    ]
    assert ReportSendAttempt.objects.count() == 4  # two first emails, two restated: no attempt repeated


def _last_month_emailed_as_version_1(settings, smtp, openai_account, support_agent):
    """Last month of support usage, finance and the CFO subscribed, version 1 sent in this process (the test's own
    settings point at the sink): what both restatement tests start from."""
    from finops.notify.report_deliveries import reports_send

    smtp.use(settings)
    month = add_months(month_of(timezone.now().date()), -1)
    two_months_of_support_usage(openai_account, support_agent, month=month)
    make_user("fiona", User.Role.FINANCE)
    subscriptions_default_ensure()
    ReportSubscription.objects.create(email="cfo@example.com")
    ReportSubscription.objects.update(day_of_month=1)
    assert len(reports_send()) == 2
    return month
