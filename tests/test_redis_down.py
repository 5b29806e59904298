"""Redis lost (issue 26): a real redis-server is started for this module and stopped, so the cache and the broker
point at a port where nothing listens any more. The API answers a JSON 503 with Retry-After (never an HTML 500),
"Sync now" says the queue is down and leaves no run queued, and a command ends with one line and a non-zero exit.

Each check runs the product in its own process (a server, a command) pointed at the lost Redis, as an operator
would meet it: pointing this test process's Celery app at a dead broker would leave its connection pools broken
for every later test in the process."""

import os
import secrets
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests
from django.db import connection
from django.test import Client

from finops.models import Account, IngestRun, Provider
from finops.org.services.api_tokens import api_token_create

ROOT = Path(__file__).resolve().parent.parent

# The server and the command read what this test commits.
pytestmark = pytest.mark.django_db(transaction=True)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for_port(port: int, process: subprocess.Popen, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            assert process.poll() is None, f"the process on port {port} ended with {process.returncode}"
            assert time.monotonic() < deadline, f"nothing answered on port {port} within {seconds} s"
            time.sleep(0.05)


@pytest.fixture(scope="module")
def lost_redis():
    """A redis-server that answered once and was then stopped: its URL, with nothing listening behind it."""
    port = free_port()
    server = subprocess.Popen(
        ["redis-server", "--port", str(port), "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, server, seconds=20)
    finally:
        server.terminate()
        server.wait(20)
    return f"redis://127.0.0.1:{port}/0"


def _database_url() -> str:
    s = connection.settings_dict
    return f"postgres://{s['USER']}@{s['HOST']}:{s['PORT']}/{s['NAME']}"


@pytest.fixture(scope="module")
def lost_redis_environment(lost_redis, django_db_setup) -> dict:
    """The environment of a product process whose cache and broker are the lost Redis (tasks queued, not inline),
    on the test database."""
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "finops.settings_test",
        "REDIS_URL": lost_redis,
        "CELERY_EAGER": "0",
        "DATABASE_URL": _database_url(),
    }


@pytest.fixture
def redis_down_environment(lost_redis_environment, transactional_db) -> dict:
    """The same, for a test whose data the process reads (committed)."""
    return lost_redis_environment


@pytest.fixture(scope="module")
def module_server(lost_redis_environment, tmp_path_factory):
    """The product served by `manage.py runserver` with Redis lost, one for the module's tests (a server costs
    ~2 s of CPU to start, and it keeps nothing between requests that these tests check: sessions and data are in
    the database each test writes). --skip-checks: Django's system checks are `manage.py check`'s business
    (tests/test_settings.py), not what a lost Redis changes."""
    port = free_port()
    # Its log in a file, not a pipe nobody reads: the module's requests (each logged, some with a traceback) could
    # fill a pipe's buffer and stall the server.
    log = (tmp_path_factory.mktemp("redis-down") / "runserver.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload", "--skip-checks"],
        cwd=ROOT,
        env=lost_redis_environment,
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    try:
        wait_for_port(port, process)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(20)
        log.close()


@pytest.fixture
def server(module_server, redis_down_environment):
    """The module's server, on this test's (committed, flushed when it ends) data: its base URL."""
    return module_server


def signed_in(user, base_url: str) -> requests.Session:
    """A browser's session for the user: the session cookie (sessions live in the database) and a CSRF token."""
    client = Client()
    client.force_login(user)
    browser = requests.Session()
    browser.cookies.set("sessionid", client.cookies["sessionid"].value)
    token = secrets.token_hex(16)  # 32 characters: a valid unmasked CSRF secret
    browser.cookies.set("csrftoken", token)
    browser.headers.update({"X-CSRFToken": token, "Referer": base_url + "/"})
    return browser


@pytest.fixture
def api_account(reseeded):
    return Account.objects.create(
        name="openai-api",
        provider=Provider.objects.get(slug="openai"),
        connector="openai_api",
        credentials_env="OPENAI_ADMIN_KEY",
    )


def test_api_calls_with_a_token_answer_json_503_with_retry_after(server, fiona):
    _, secret = api_token_create(user=fiona, name="dashboards", scope="read")
    answer = requests.get(f"{server}/api/v1/teams", headers={"Authorization": f"Token {secret}"}, timeout=60)
    assert answer.status_code == 503, answer.text[:300]
    assert answer.headers["Content-Type"].startswith("application/json") and int(answer.headers["Retry-After"]) > 0
    assert "Redis" in answer.json()["detail"]


def test_sync_now_says_the_queue_is_down_and_leaves_no_run_queued(server, ada, api_account):
    browser = signed_in(ada, server)
    answer = browser.post(f"{server}/sources/{api_account.pk}/sync/", timeout=60)
    assert answer.status_code == 200 and answer.history and answer.history[0].status_code == 302, answer.text[:300]
    assert "task queue (Redis) cannot be reached, so nothing was queued" in answer.text
    assert not IngestRun.objects.exists()
    api = browser.post(f"{server}/api/v1/accounts/{api_account.pk}/syncs", json={}, timeout=60)
    assert api.status_code == 503 and int(api.headers["Retry-After"]) > 0 and "Redis" in api.json()["detail"]
    assert not IngestRun.objects.exists()


def test_evaluate_alerts_exits_non_zero_with_one_line(redis_down_environment):
    done = subprocess.run(
        [sys.executable, "manage.py", "evaluate_alerts"],
        cwd=ROOT,
        env=redis_down_environment,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("evaluate_alerts: Redis"), done.stderr
    assert "Traceback" not in done.stderr
