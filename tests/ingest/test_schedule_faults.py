"""The dispatcher's repairs after faults (ingest/schedule.py): runs whose task message was lost are queued again,
and a run that lost its database before it could release its lease is failed once the lease has expired."""

import datetime as dt

import pytest

from finops.models import Account, IngestRun, Provider
from ingest.schedule import runs_abandoned_fail, runs_lost, schedule_dispatch

NOW = dt.datetime(2026, 6, 20, 10, tzinfo=dt.UTC)


@pytest.fixture
def account(db):
    return Account.objects.create(
        name="openai-prod", provider=Provider.objects.get(slug="openai"), connector="openai_api"
    )


def run_at(account, created: dt.datetime, time_machine, **fields) -> IngestRun:
    time_machine.move_to(created)
    return IngestRun.objects.create(account=account, **{"trigger": "schedule", **fields})


def test_runs_queued_for_longer_than_the_requeue_delay_are_queued_again(account, settings, time_machine):
    settings.FINOPS_INGEST_REQUEUE_SECONDS = 20 * 60
    lost = run_at(account, NOW - dt.timedelta(minutes=25), time_machine)
    run_at(account, NOW - dt.timedelta(minutes=5), time_machine)  # queued lately: its message may still come
    run_at(account, NOW - dt.timedelta(hours=1), time_machine, started_at=NOW - dt.timedelta(minutes=3))  # retrying
    retried_long_ago = run_at(
        account, NOW - dt.timedelta(hours=1), time_machine, started_at=NOW - dt.timedelta(minutes=30)
    )
    run_at(account, NOW - dt.timedelta(hours=1), time_machine, trigger="upload")  # its file is gone: nothing to run
    run_at(account, NOW - dt.timedelta(hours=1), time_machine, status="succeeded")
    time_machine.move_to(NOW)

    assert [run.id for run in runs_lost()] == [lost.id, retried_long_ago.id]


def test_the_dispatch_runs_the_lost_runs_again(account, settings, time_machine, django_capture_on_commit_callbacks):
    settings.FINOPS_INGEST_REQUEUE_SECONDS = 60
    Account.objects.filter(id=account.id).update(enabled=False)  # not due, and its run fails at once when it runs
    lost = run_at(account, NOW - dt.timedelta(minutes=5), time_machine)
    time_machine.move_to(NOW)
    with django_capture_on_commit_callbacks(execute=True):
        new, again = schedule_dispatch()
    assert (new, [run.id for run in again]) == ([], [lost.id])
    lost.refresh_from_db()
    assert lost.status == "failed" and "disabled" in lost.error  # it ran (inline here), no longer stuck queued


def test_a_running_run_whose_own_lease_expired_is_failed(account, time_machine):
    time_machine.move_to(NOW)
    stuck = IngestRun.objects.create(
        account=account, trigger="schedule", status="running", started_at=NOW - dt.timedelta(minutes=45)
    )
    Account.objects.filter(id=account.id).update(
        lease_token=str(stuck.id), lease_expires_at=NOW - dt.timedelta(minutes=15)
    )
    assert runs_abandoned_fail() == 1
    stuck.refresh_from_db()
    assert stuck.status == "failed" and "cut off from the database" in stuck.error


def test_a_running_run_that_still_holds_a_live_lease_is_left_running(account, time_machine):
    time_machine.move_to(NOW)
    long_run = IngestRun.objects.create(
        account=account, trigger="schedule", status="running", started_at=NOW - dt.timedelta(minutes=45)
    )
    Account.objects.filter(id=account.id).update(
        lease_token=str(long_run.id), lease_expires_at=NOW + dt.timedelta(minutes=5)
    )
    assert runs_abandoned_fail() == 0
    long_run.refresh_from_db()
    assert long_run.status == "running"
