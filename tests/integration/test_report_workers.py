"""The monthly report is sent once however many beats and workers run: real `celery worker` processes (two of
them, two pool processes each, on the notify queue and the others) take four `send_reports` tasks at once — what two
beat processes each firing twice would queue — against the same test database, and a real SMTP server receives one
email per subscriber, from one published version.

The module's tests share one pair of workers and one SMTP server (started on demand, stopped when the module ends
or when a test stops them): a worker takes ~3 s of CPU to start and more than 20 s of wall time on a loaded 2-core
machine, and nothing a worker keeps between tasks is what these tests check — each test waits until the pair is idle
(every task it was handed finished, the queues empty) before its data is flushed, and reads only its own part of the
workers' logs.

Needs Postgres and Redis; give it a Redis database of its own (it deletes the broker's keys there):
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/finops_x REDIS_URL=redis://127.0.0.1:6379/N \
        .venv/bin/python -m pytest tests/integration/test_report_workers.py
"""

import re

import pytest
import redis
from django.conf import settings as django_settings
from django.utils import timezone

from finops.celery import app as celery_app
from finops.contracts.selectors import add_months
from finops.core.months import month_of
from finops.models import ReportDelivery, ReportSendAttempt, ReportSnapshot, ReportSubscription, User
from finops.reports.services.subscriptions import subscriptions_default_ensure
from tests.conftest import make_user, reseed_reference_data
from tests.fakes.smtp_server import FakeSmtpServer
from tests.integration.fault_helpers import process_env, purge, start_beat, start_worker, wait_ready
from tests.report_helpers import two_months_of_support_usage

from .test_worker_killed import wait_for

pytestmark = pytest.mark.worker

SENT = re.compile(r"Task finops\.tasks\.send_reports\[[0-9a-f-]+\] succeeded in [0-9.]+s: (\d+)")
RECEIVED = re.compile(r"Task \S+\[[0-9a-f-]+\] received")
# How celery's worker logs a task's end (celery/app/trace.py): succeeded, retried, failed or not run.
ENDED = re.compile(r"Task \S+\[[0-9a-f-]+\] (succeeded in|retry:|raised|INTERNAL ERROR|ignored|rejected)")
QUEUES = ("notify", "default", "ingest", "rollup")


class WorkerPair:
    """Two `celery worker` processes on every queue, two pool processes each, kept for the module's tests. Each test
    reads only what the workers logged since it began (`begin`, `output`)."""

    def __init__(self, tmp_path_factory, smtp: FakeSmtpServer):
        self.tmp_path_factory, self.smtp = tmp_path_factory, smtp
        self.processes: list = []
        self.marks: list[int] = []

    def running(self) -> list:
        if not self.processes:
            purge(django_settings.REDIS_URL)
            env = process_env(
                redis_url=django_settings.REDIS_URL, EMAIL_URL=self.smtp.url, SITE_URL="https://finops.example.com"
            )
            logs = self.tmp_path_factory.mktemp("report-workers")
            self.processes = [
                start_worker(name, env, logs, queues=",".join(QUEUES), concurrency=2) for name in ("one", "two")
            ]
        wait_ready(*self.processes)
        return self.processes

    def begin(self) -> None:
        self.marks = [len(p.output()) for p in self.running()]

    def output(self) -> str:
        return "".join(p.output()[mark:] for p, mark in zip(self.processes, self.marks, strict=True))

    def idle(self) -> bool:
        """Every task the workers were handed has ended and nothing waits in Redis for them."""
        client = redis.Redis.from_url(django_settings.REDIS_URL)
        try:
            waiting = sum(client.llen(queue) for queue in QUEUES) + client.hlen("unacked")
        finally:
            client.close()
        logs = "".join(p.output() for p in self.processes)
        return waiting == 0 and len(RECEIVED.findall(logs)) == len(ENDED.findall(logs))

    def stop(self) -> None:
        for process in self.processes:
            process.stop()
        self.processes = []
        purge(django_settings.REDIS_URL)


@pytest.fixture(scope="module")
def module_smtp():
    with FakeSmtpServer() as server:
        yield server


@pytest.fixture
def smtp(module_smtp):
    """The module's SMTP server, emptied for the test (its workers were started with its address)."""
    module_smtp.messages.clear()
    module_smtp.envelopes.clear()
    module_smtp.refuse.clear()
    return module_smtp


@pytest.fixture(scope="module")
def worker_pair(django_db_setup, tmp_path_factory, module_smtp):
    pair = WorkerPair(tmp_path_factory, module_smtp)
    yield pair
    pair.stop()


@pytest.fixture
def workers(transactional_db, smtp, worker_pair):
    """The module's workers, ready, on this test's (flushed and reseeded) database. The test's data is flushed only
    once they are idle again, so no task of this test writes after the flush."""
    reseed_reference_data()
    worker_pair.begin()
    yield worker_pair
    if worker_pair.processes:
        wait_for(worker_pair.idle, 120, "the workers to be idle", worker_pair.processes)


@pytest.fixture
def notify_workers(workers, settings):
    """The workers, and this process queueing its tasks for them rather than running them inline."""
    eager = celery_app.conf.task_always_eager
    settings.CELERY_TASK_ALWAYS_EAGER = celery_app.conf.task_always_eager = False
    yield workers
    celery_app.conf.task_always_eager = eager


def four_send_tasks_on(pair: WorkerPair) -> int:
    """Queue four send_reports tasks (two beats' worth, twice over) for the ready workers and wait for all four to
    finish: how many emails they sent between them."""
    from finops.tasks import send_reports

    for _ in range(4):
        send_reports.apply_async(expires=3540)
    finished = lambda: len(SENT.findall(pair.output())) >= 4  # noqa: E731
    wait_for(finished, 240, "the four tasks to finish", pair.processes)
    logs = pair.output()
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
    workers, smtp, settings, tmp_path, openai_account, support_agent
):
    """Two `celery beat` processes started by mistake, each firing send-reports every second
    (CELERY_BEAT_EVERY=1), and two workers taking every copy: last month was emailed as version 1 and a day of it
    re-imported; each subscriber receives exactly one restated email, however many ticks follow."""
    from decimal import Decimal

    from tests.report_helpers import import_usage, month_rows

    month = _last_month_emailed_as_version_1(settings, smtp, openai_account, support_agent)
    import_usage(
        openai_account,
        [r for r in month_rows(month, cost=Decimal("20.00"), tokens=2_400_000) if r.startswith(f"{month:%Y-%m}-14")],
        "corrected.csv",
    )
    env = process_env(redis_url=settings.REDIS_URL, CELERY_BEAT_EVERY=1)
    # send-reports only: the schedule's other entries, a task a second per beat too, are the fault tests' business
    # (tests/integration/test_faults_two_beats.py) and would keep the pair busy with work this test never reads.
    beats = [start_beat(name, env, tmp_path, only=("send-reports",)) for name in ("beat1", "beat2")]
    try:
        restated = lambda: [m for m in smtp.messages if "RESTATED" in m["Subject"]]  # noqa: E731
        wait_for(lambda: len(restated()) >= 2, 90, "the restated emails", [*workers.processes, *beats])
        # Both beats keep firing send-reports every second. Rather than sleep for some seconds (which on a loaded
        # machine may see no task finish), wait until the workers have run FOLLOWING send_reports tasks to the end,
        # each received after the restated emails were out, and both beats have fired many times.
        since = [len(p.output()) for p in workers.processes]
        wait_for(
            lambda: len(_sends_received_since(workers, since)) >= FOLLOWING and min(_ticks(beats)) >= 5,
            120,
            "later send_reports tasks to finish",
            [*workers.processes, *beats],
        )
        later = _sends_received_since(workers, since)
        ticks = _ticks(beats)
        errors = [line for p in beats for line in p.output().splitlines() if "Traceback" in line]
        errors += [line for line in workers.output().splitlines() if "Traceback" in line]
    finally:
        for beat in beats:
            beat.stop()
        # Whatever the beats queued last must not run into the flush after the test: the workers finish their tasks
        # and stop (the next test to ask for them starts a new pair).
        workers.stop()

    assert min(ticks) >= 5, ticks  # both beats really fired, many times each
    assert errors == []
    assert len(later) >= FOLLOWING and set(later) == {0}, later  # the later ticks' tasks ran and sent nothing
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


FOLLOWING = 4  # send_reports tasks run to the end after the restated emails: one for each of the pair's pool processes
SEND_RECEIVED = re.compile(r"Task finops\.tasks\.send_reports\[([0-9a-f-]+)\] received")
SEND_SUCCEEDED = re.compile(r"Task finops\.tasks\.send_reports\[([0-9a-f-]+)\] succeeded in [0-9.]+s: (\d+)")


def _sends_received_since(pair: WorkerPair, since: list[int]) -> list[int]:
    """How many emails each send_reports task sent that a worker received after the log positions `since` and has
    finished (a task received before them may still be running: it is not counted)."""
    received, sent = set(), {}
    for process, mark in zip(pair.processes, since, strict=True):
        log = process.output()
        received.update(SEND_RECEIVED.findall(log[mark:]))
        sent.update(SEND_SUCCEEDED.findall(log))
    return [int(sent[task]) for task in received if task in sent]


def _ticks(beats) -> list[int]:
    return [beat.output().count("Sending due task send-reports") for beat in beats]


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
