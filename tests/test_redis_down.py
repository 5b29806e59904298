"""Redis lost (issue 26): a real redis-server is started for this module and stopped, so the cache and the broker
point at a port where nothing listens any more. The API answers a JSON 503 with Retry-After (never an HTML 500),
"Sync now" says the queue is down and leaves no run queued, and a command ends with one line and a non-zero exit."""

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.db import connection
from django.test import Client

from finops.celery import app as celery_app
from finops.models import Account, IngestRun, Provider
from finops.services.api_tokens import api_token_create

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# Transactional, so pytest-django runs it after the real-worker tests (tests/integration/): it points this process's
# Celery app at a stopped Redis, and the app's connection pools would outlive the test's restore of its settings.
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def lost_redis():
    """A redis-server that answered once and was then stopped: its URL, with nothing listening behind it."""
    port = free_port()
    server = subprocess.Popen(["redis-server", "--port", str(port), "--save", "", "--appendonly", "no"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "redis-server did not start"
                time.sleep(0.05)
    finally:
        server.terminate()
        server.wait(20)
    return f"redis://127.0.0.1:{port}/0"


@pytest.fixture
def redis_down(lost_redis, settings):
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": lost_redis,
                                   "OPTIONS": {"socket_connect_timeout": 2, "socket_timeout": 2}}}
    # The app reads Django's settings under the CELERY_ namespace: its keys carry the prefix.
    names = ("CELERY_TASK_ALWAYS_EAGER", "CELERY_BROKER_URL", "CELERY_BROKER_READ_URL", "CELERY_BROKER_WRITE_URL")
    before = {name: celery_app.conf.get(name) for name in names}
    celery_app.conf.update(dict(zip(names, (False, lost_redis, lost_redis, lost_redis), strict=True)))
    assert not celery_app.conf.task_always_eager and celery_app.conf.broker_write_url == lost_redis
    _fresh_broker_connections()
    yield lost_redis
    celery_app.conf.update(before)
    _fresh_broker_connections()


def _fresh_broker_connections() -> None:
    """Celery keeps its connection and producer pools for the process: after pointing the broker elsewhere and
    back, drop them, or later tests in this process would publish to the stopped server (and lose the messages)."""
    if celery_app._pool is not None:
        celery_app._pool.force_close_all()
        celery_app._pool = None
    celery_app.amqp._producer_pool = None


@pytest.fixture
def api_account(reseeded):
    return Account.objects.create(name="openai-api", provider=Provider.objects.get(slug="openai"),
                                  connector="openai_api", credentials_env="OPENAI_ADMIN_KEY")


def test_api_calls_with_a_token_answer_json_503_with_retry_after(redis_down, fiona):
    _, secret = api_token_create(user=fiona, name="dashboards", scope="read")
    answer = Client(HTTP_AUTHORIZATION=f"Token {secret}").get("/api/v1/teams")
    assert answer.status_code == 503, answer.content[:300]
    assert answer["Content-Type"].startswith("application/json") and int(answer["Retry-After"]) > 0
    assert "Redis" in answer.json()["detail"]


def test_sync_now_says_the_queue_is_down_and_leaves_no_run_queued(redis_down, ada, api_account, client_as):
    client = client_as(ada)
    answer = client.post(f"/sources/{api_account.pk}/sync/", follow=True)
    assert answer.status_code == 200
    shown = [str(m) for m in answer.context["messages"]]
    assert any("task queue (Redis) cannot be reached, so nothing was queued" in m for m in shown), shown
    assert not IngestRun.objects.exists()
    api = client.post(f"/api/v1/accounts/{api_account.pk}/syncs", {}, content_type="application/json")
    assert api.status_code == 503 and int(api["Retry-After"]) > 0 and "Redis" in api.json()["detail"]
    assert not IngestRun.objects.exists()


def test_evaluate_alerts_exits_non_zero_with_one_line(redis_down, db):
    environment = {**os.environ, "DJANGO_SETTINGS_MODULE": "finops.settings_test", "REDIS_URL": redis_down,
                   "CELERY_EAGER": "0", "DATABASE_URL": _database_url()}
    done = subprocess.run([sys.executable, "manage.py", "evaluate_alerts"], cwd=ROOT, env=environment,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("evaluate_alerts: Redis"), done.stderr
    assert "Traceback" not in done.stderr


def _database_url() -> str:
    s = connection.settings_dict
    return f"postgres://{s['USER']}@{s['HOST']}:{s['PORT']}/{s['NAME']}"
