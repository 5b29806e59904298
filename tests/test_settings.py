"""Production settings: `check --deploy` is clean, and a missing secret key is refused, not defaulted."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

ROOT = Path(__file__).resolve().parent.parent


def manage(*args, **env):
    # Only what a production host would set: nothing from the test settings or a developer's .env leaks in.
    base = {k: os.environ[k] for k in ("PATH", "HOME", "LANG") if k in os.environ}
    base.update({"DJANGO_SETTINGS_MODULE": "finops.settings", "DJANGO_READ_DOT_ENV_FILE": "0", **env})
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=base, capture_output=True, text=True)


PRODUCTION = {
    "DEBUG": "0",
    "SECRET_KEY": "p" * 20 + "-production-secret-key-with-enough-entropy-" + "Zq8x",
    "ALLOWED_HOSTS": "finops.example.com",
    "FINOPS_ENCRYPTION_KEY": Fernet.generate_key().decode(),
    "DATABASE_URL": os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/finops"),
}


@pytest.mark.slow  # left out of make test-fast (tests/conftest.py says why)
def test_check_deploy_reports_no_warnings_with_production_settings():
    result = manage("check", "--deploy", "--fail-level", "WARNING", **PRODUCTION)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues (0 silenced)" in result.stdout


@pytest.mark.slow  # left out of make test-fast (tests/conftest.py says why)
def test_production_refuses_to_start_without_a_secret_key():
    result = manage("check", **{**PRODUCTION, "SECRET_KEY": ""})
    assert result.returncode != 0
    assert "SECRET_KEY must be set" in result.stderr
