"""Settings for the test suite: the production settings, on the local Postgres and Redis, with test-only keys.

Values already in the environment win (CI or a developer can point at other servers).
"""

import os

# Never the developer's .env: `make demo` writes one (DEBUG, the demo's Slack stand-in, loopback allowed through the
# egress policy) that would change what the tests check, in the clone where `make test` runs next.
os.environ.setdefault("DJANGO_READ_DOT_ENV_FILE", "0")
os.environ.setdefault("DEBUG", "0")
os.environ.setdefault("SECRET_KEY", "test-only-secret-key-0123456789-abcdefghijklmnopqrstuvwxyz-ABCDEFG")
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/finops")
os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/15")
# pytest-xdist: each worker gets its own database (pytest-django suffixes the test database with the worker id)
# and its own Redis database, counting down from the one given (gw0 → 15, gw1 → 14, …), so one worker's Celery
# queues, locks and cache never meet another's. Processes a test starts inherit the shifted URL and the marker, so
# they are not shifted twice.
_xdist_worker = os.environ.get("PYTEST_XDIST_WORKER", "")
if _xdist_worker.startswith("gw") and os.environ.get("FINOPS_TEST_REDIS_SHIFTED") != _xdist_worker:
    _base, _, _db = os.environ["REDIS_URL"].rpartition("/")
    if _db.isdigit():
        os.environ["REDIS_URL"] = f"{_base}/{(int(_db) - int(_xdist_worker[2:])) % 16}"
    os.environ["FINOPS_TEST_REDIS_SHIFTED"] = _xdist_worker
# A fixed, test-only Fernet key: tests assert the stored value is not the secret.
os.environ.setdefault("FINOPS_ENCRYPTION_KEY", "dGVzdC1vbmx5LWtleS1kby1ub3QtdXNlLTMyYnl0ZXM=")
os.environ.setdefault("ALLOWED_HOSTS", "testserver,localhost,127.0.0.1")
os.environ.setdefault("SECURE_SSL_REDIRECT", "0")
os.environ.setdefault("SESSION_COOKIE_SECURE", "0")
os.environ.setdefault("CSRF_COOKIE_SECURE", "0")
os.environ.setdefault("SECURE_HSTS_SECONDS", "0")
# Playwright's sync API runs an event loop in the test thread; the ORM calls it makes there are still synchronous.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

from .settings import *  # noqa: E402,F403
from .settings import STORAGES  # noqa: E402

# Templates resolve {% static %} without a collectstatic run.
STORAGES = {**STORAGES, "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}}
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # speed only; production keeps PBKDF2
# Speed only: a test's commit need not wait for the disk (a crash of the test server loses nothing anyone keeps).
# Transactional tests commit and flush often, and on a machine with slow fsync every commit would wait for it.
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":  # noqa: F405
    _options = DATABASES["default"].setdefault("OPTIONS", {})  # noqa: F405
    _options["options"] = f"{_options.get('options', '')} -c synchronous_commit=off".strip()
# Tasks run inline unless a test starts a real worker and switches this off. That worker (and only it) is
# started with CELERY_EAGER=0, so it consumes a real Redis queue (tests/integration/test_worker_killed.py).
CELERY_TASK_ALWAYS_EAGER = os.environ.get("CELERY_EAGER", "1") != "0"
# CELERY_VISIBILITY_TIMEOUT=<seconds>: Redis hands a task that was delivered but never acknowledged (its worker
# was killed) to another worker after that many seconds instead of kombu's hour, and workers look for such
# tasks every second (kombu's default sweep is every 10 s, scanning on one sweep in 10). Test workers only.
if os.environ.get("CELERY_VISIBILITY_TIMEOUT"):
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "visibility_timeout": int(os.environ["CELERY_VISIBILITY_TIMEOUT"]),
        "unacked_restore_interval": 1,
        "unacked_restore_throttle": 1,
    }

# The whole suite signs in and calls the API as a handful of users from one address; the throttle tests set their
# own small rates (tests/test_throttling.py). Per second, not per hour: DRF keeps each caller's request times for the
# whole window in one cached list, read and written back on every call, and over an hour the API fuzz's ~5,000
# calls by two users grew it to thousands of entries; a second's window holds a few.
REST_FRAMEWORK = {**REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {"user": "1000000/second", "anon": "1000000/second"}}  # noqa: F405

# CELERY_BEAT_ONLY=<name>,<name>: a test's `celery beat` schedules only the entries named (the ones its test is
# about), not every entry of the schedule. Under CELERY_BEAT_EVERY each entry is a task a second per beat, which the
# test's workers run while the test waits: the report's send_reports ~0.3 s of CPU each (it publishes and compares
# months), the evaluations ~0.1 s; a test about pulls or reports that runs them all keeps its workers busy with
# work it never looks at (tests/integration/: the Redis fault test and the report workers' two beats). A name that
# is not in the schedule is refused, so a renamed entry cannot leave a test's beat with nothing to send.
if os.environ.get("CELERY_BEAT_ONLY"):
    _only = [name.strip() for name in os.environ["CELERY_BEAT_ONLY"].split(",") if name.strip()]
    _unknown = sorted(set(_only) - set(CELERY_BEAT_SCHEDULE))  # noqa: F405
    if not _only or _unknown:
        raise ValueError(f"CELERY_BEAT_ONLY must name entries of CELERY_BEAT_SCHEDULE, not {_unknown or _only}")
    CELERY_BEAT_SCHEDULE = {name: CELERY_BEAT_SCHEDULE[name] for name in _only}  # noqa: F405
# CELERY_BEAT_EVERY=<seconds>: every beat entry runs that often (expiring just before the next), so a fault test's
# `celery beat` dispatches pulls and alert deliveries within seconds (tests/integration/test_faults_*.py).
if os.environ.get("CELERY_BEAT_EVERY"):
    _every = float(os.environ["CELERY_BEAT_EVERY"])
    CELERY_BEAT_SCHEDULE = {  # noqa: F405
        name: {**entry, "schedule": _every, "options": {**entry.get("options", {}), "expires": _every * 0.9}}
        for name, entry in CELERY_BEAT_SCHEDULE.items()  # noqa: F405
    }
