"""/healthz for monitoring (issue 16): the database, the real broker and the age of each enabled API account's last
successful sync; 503 when any is down or late. Against the real Postgres and Redis of this machine."""

import datetime as dt

import pytest
from django.utils import timezone

from finops.models import Account, Provider


@pytest.fixture
def api_account(db):
    return Account.objects.create(
        name="openai-api",
        provider=Provider.objects.get(slug="openai"),
        connector="openai_api",
        credentials_env="OPENAI_ADMIN_KEY",
        last_success_at=timezone.now() - dt.timedelta(hours=2),
    )


def test_healthy_when_the_database_and_redis_answer_and_syncs_are_recent(client, api_account, openai_account):
    answer = client.get("/healthz")
    body = answer.json()
    assert answer.status_code == 200 and (body["status"], body["database"], body["broker"]) == ("ok", "ok", "ok")
    # monitoring does not sign in: accounts by id; file accounts have no schedule to miss
    assert [(s["account"], s["stale"]) for s in body["syncs"]] == [(api_account.id, False)]
    assert 1.9 <= body["syncs"][0]["age_hours"] <= 2.1


def test_an_api_account_without_a_successful_sync_for_a_day_makes_it_unhealthy(client_as, fiona, api_account):
    Account.objects.filter(id=api_account.id).update(last_success_at=timezone.now() - dt.timedelta(hours=30))
    answer = client_as(fiona).get("/healthz")
    assert answer.status_code == 503 and answer.json()["stale_accounts"] == 1
    assert answer.json()["syncs"][0]["account"] == "openai-api"  # finance reads the names


def test_a_broker_that_does_not_answer_makes_it_unhealthy(client, settings, db):
    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens on port 1
    answer = client.get("/healthz")
    assert answer.status_code == 503 and answer.json()["broker"].startswith("error: ")
    assert client.get("/health/").status_code == 200  # liveness only asks the database


def test_a_disabled_account_is_not_waited_for(client, api_account):
    Account.objects.filter(id=api_account.id).update(
        enabled=False, last_success_at=timezone.now() - dt.timedelta(days=9)
    )
    assert client.get("/healthz").status_code == 200
