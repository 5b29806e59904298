"""The demo's files and commands without a loaded demo: the generator is deterministic and window-stable,
`load_demo` refuses a real installation, `demo_env` writes a development .env once."""

import csv
import datetime as dt
import os
import uuid

import environ
import pytest
from cryptography.fernet import Fernet
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandError

from demo.generate import generate
from finops.models import UsageLine, User
from tests.demo_helpers import TODAY, demo_files

MONTHS = [dt.date(2026, 7, 1), dt.date(2026, 8, 1), dt.date(2026, 9, 1), dt.date(2026, 10, 1)]
BEDROCK = "bedrock-us-east-1"


def test_the_generator_writes_the_same_files_for_the_same_day(tmp_path, tmp_path_factory):
    # The first generation is the run's demo files (tests/demo_helpers.py: generated once per run, perhaps by another
    # process, so with another hash seed), the second this test's own.
    first = demo_files(tmp_path_factory)
    second = generate(today=TODAY, out_dir=tmp_path / "b")
    assert first.keys() == second.keys() and len(first) == 7
    assert len(first[BEDROCK]) == len(MONTHS)
    for name in first:
        assert [p.name for p in first[name]] == [p.name for p in second[name]], name
        for a, b in zip(first[name], second[name], strict=True):
            assert a.read_bytes() == b.read_bytes(), a.name
    # One account's files alone (what the demo's restatement and the tests generate) are the same bytes.
    for name in ("cerebras-prod", BEDROCK, "openai-prod"):
        alone = generate(today=TODAY, out_dir=tmp_path / name, accounts={name})
        assert list(alone) == [name]
        assert [p.read_bytes() for p in alone[name]] == [p.read_bytes() for p in first[name]], name
    # A gateway log's request ids are version-4 UUIDs as LiteLLM writes them (demo/exports.py spells their text
    # without the UUID object): each reads back as itself, RFC 4122 variant; a cache hit's carries its suffix.
    for name in ("cerebras-prod", "moonshot-gateway"):
        with first[name][0].open(newline="") as fh:
            ids = [row["request_id"].partition("_cache_hit")[0] for row in csv.DictReader(fh)]
        assert len(ids) > 1000 and len(set(ids)) == len(ids), name
        for request_id in ids:
            parsed = uuid.UUID(request_id)
            assert (str(parsed), parsed.version, parsed.variant) == (request_id, 4, uuid.RFC_4122), request_id


def test_a_day_of_gateway_log_covers_the_same_hours_whichever_window_it_is_generated_in(tmp_path, tmp_path_factory):
    """So loading the demo on a later day replaces every hour an earlier load wrote for the days both cover."""

    def hours(today):
        if today == TODAY:  # the run's demo files (tests/demo_helpers.py), generated for TODAY
            path = demo_files(tmp_path_factory, {"cerebras-prod"})["cerebras-prod"][0]
        else:
            path = generate(today=today, out_dir=tmp_path / today.isoformat(), accounts={"cerebras-prod"})[
                "cerebras-prod"
            ][0]
        with path.open(newline="") as fh:
            return {
                (row["api_key"], row["model"], row["startTime"][:13])
                for row in csv.DictReader(fh)
                if row["startTime"].startswith("2026-10-2")
            }

    assert hours(TODAY) == hours(TODAY + dt.timedelta(days=3))


def test_load_demo_refuses_a_database_with_debug_off_unless_forced(db):
    assert not settings.DEBUG
    lines, users = UsageLine.objects.count(), User.objects.count()
    with pytest.raises(CommandError, match="--force"):
        call_command("load_demo", "--today", TODAY.isoformat())
    assert (UsageLine.objects.count(), User.objects.count()) == (lines, users)


def test_demo_env_writes_debug_and_fresh_keys_once_and_then_leaves_the_file_alone(tmp_path, capsys):
    path = tmp_path / ".env"
    call_command("demo_env", "--path", str(path))
    written = path.read_text()
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert not any(line.startswith(("DATABASE_URL", "REDIS_URL")) for line in written.splitlines())
    values = {}
    environ.Env.ENVIRON = values
    try:
        environ.Env.read_env(path)
        env = environ.Env()
        assert env.bool("DEBUG") is True
        assert len(env.str("SECRET_KEY")) >= 50
        Fernet(env.str("FINOPS_ENCRYPTION_KEY").encode())
    finally:
        environ.Env.ENVIRON = os.environ
    call_command("demo_env", "--path", str(path))
    assert path.read_text() == written
    assert "left as it is" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, url",
    [
        (["manage.py", "runserver", "127.0.0.1:18200"], "http://127.0.0.1:18200"),  # make demo PORT=18200
        (["manage.py", "runserver", "18200"], "http://127.0.0.1:18200"),
        (["manage.py", "runserver", "0.0.0.0:9000"], "http://127.0.0.1:9000"),
        (["manage.py", "runserver", "--noreload", "localhost:8001"], "http://localhost:8001"),
        (["manage.py", "runserver", "-6", "::1:8002"], "http://[::1]:8002"),
        (["manage.py", "runserver"], "http://127.0.0.1:8000"),
        (["manage.py", "migrate"], None),
        (["celery", "-A", "finops", "worker"], None),
    ],
)
def test_the_served_demo_links_its_emails_to_the_address_runserver_serves(argv, url):
    from finops.settings import served_site_url

    assert served_site_url(argv) == url


def test_the_served_demo_without_site_url_takes_the_address_it_is_served_at(tmp_path):
    """Settings read in a `runserver 127.0.0.1:18200` process (the demo's, DEBUG, no SITE_URL) link there; an
    operator's SITE_URL wins."""
    import subprocess
    import sys

    script = (
        "import sys; sys.argv = ['manage.py', 'runserver', '127.0.0.1:18200']; "
        "from finops import settings; print(settings.SITE_URL)"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "SITE_URL"))}
    env.update(DEBUG="1", DJANGO_READ_DOT_ENV_FILE="0")

    def run(**extra):
        completed = subprocess.run(
            [sys.executable, "-c", script], cwd=settings.BASE_DIR, env={**env, **extra}, capture_output=True, text=True
        )
        assert completed.returncode == 0, completed.stderr
        return completed.stdout.strip()

    assert run() == "http://127.0.0.1:18200"
    assert run(SITE_URL="https://finops.example.com") == "https://finops.example.com"
