"""`manage.py rotate_encryption_key` (finops.org.services.encryption): every stored secret — provider keys and webhook
signing secrets — is re-encrypted under the first key of FINOPS_ENCRYPTION_KEY in one transaction; interrupted, it
changes nothing and a rerun completes; afterwards the old key is no longer needed."""

import io

import pytest
from cryptography.fernet import Fernet
from django.apps import apps
from django.core.management import CommandError, call_command
from django.test import override_settings

from finops.alerts.services.caps import cap_create
from finops.core import crypto
from finops.models import Account, AuditEntry, Cap, Provider
from finops.org.services.encryption import ENCRYPTED_FIELDS, encryption_key_rotate
from finops.sources.services.accounts import account_create, account_credentials

OLD_KEY, NEW_KEY, OTHER_KEY = (Fernet.generate_key().decode() for _ in range(3))
ACCOUNT_SECRETS = {f"openai-{n}": f"sk-admin-{n}-9fQ2xLr7TbW4mZp1KcV8nHs3" for n in range(4)}
WEBHOOK_SECRETS = {f"cap-{n}": f"whsec-{n}-Jd7Y6gUe0aB1cD2eF3" for n in range(2)}


@pytest.fixture
def secrets_under_old_key(db):
    """Four provider keys and two webhook secrets, all encrypted under OLD_KEY."""
    openai = Provider.objects.get(slug="openai")
    with override_settings(FINOPS_ENCRYPTION_KEYS=[OLD_KEY]):
        for name, secret in ACCOUNT_SECRETS.items():
            account_create(name=name, connector="openai_api", provider=openai, secret=secret)
        for name, secret in WEBHOOK_SECRETS.items():
            cap_create(
                by=None,
                name=name,
                scope="org",
                amount="100",
                recipients=["ops@example.com"],
                webhook_url="https://hooks.example.com/finops",
                webhook_secret=secret,
            )


def ciphertexts() -> dict:
    return {
        **dict(Account.objects.values_list("name", "credentials_ciphertext")),
        **dict(Cap.objects.values_list("name", "webhook_secret_ciphertext")),
    }


def plain_secrets() -> dict:
    return {
        **{a.name: account_credentials(account=a) for a in Account.objects.all()},
        **{c.name: crypto.decrypt(c.webhook_secret_ciphertext) for c in Cap.objects.all()},
    }


def rotate(*args) -> str:
    out = io.StringIO()
    call_command("rotate_encryption_key", *args, stdout=out)
    return out.getvalue()


def test_rotation_re_encrypts_every_secret_so_the_old_key_is_no_longer_needed(secrets_under_old_key):
    with override_settings(FINOPS_ENCRYPTION_KEYS=[NEW_KEY, OLD_KEY]):
        before = ciphertexts()
        output = rotate()
        assert "Account.credentials_ciphertext: 4 re-encrypted" in output
        assert "Cap.webhook_secret_ciphertext: 2 re-encrypted" in output
        # The caps' webhooks are their own channels too (issue 25): URL and secret, encrypted, rotated with the rest.
        assert (
            "Channel.url_ciphertext: 2 re-encrypted" in output and "Channel.secret_ciphertext: 2 re-encrypted" in output
        )
        after = ciphertexts()
    assert all(after[name] != before[name] for name in before)
    with override_settings(FINOPS_ENCRYPTION_KEYS=[NEW_KEY]):  # the old key is gone: everything still decrypts
        assert plain_secrets() == {**ACCOUNT_SECRETS, **WEBHOOK_SECRETS}
    entry = AuditEntry.objects.get(entity_type="encryption_key")
    assert entry.action == "rotated" and entry.source == "cli"
    assert entry.after == {
        "re-encrypted": {
            "Account.credentials_ciphertext": 4,
            "Cap.webhook_secret_ciphertext": 2,
            "Channel.url_ciphertext": 2,
            "Channel.secret_ciphertext": 2,
        }
    }
    assert not any(secret in str(entry.after) for secret in {**ACCOUNT_SECRETS, **WEBHOOK_SECRETS}.values())


def test_an_interrupted_rotation_changes_nothing_and_a_rerun_completes(secrets_under_old_key):
    def fail_half_way(done: int):
        if done == 3:
            raise ConnectionError("the database went away half-way")

    with override_settings(FINOPS_ENCRYPTION_KEYS=[NEW_KEY, OLD_KEY]):
        before = ciphertexts()
        with pytest.raises(ConnectionError):
            encryption_key_rotate(after_row=fail_half_way)
        assert ciphertexts() == before  # the three rows re-encrypted before the failure rolled back with it
        assert plain_secrets() == {**ACCOUNT_SECRETS, **WEBHOOK_SECRETS}  # pages and syncs kept working
        assert not AuditEntry.objects.filter(entity_type="encryption_key").exists()
        assert "4 re-encrypted" in rotate()
    with override_settings(FINOPS_ENCRYPTION_KEYS=[NEW_KEY]):
        assert plain_secrets() == {**ACCOUNT_SECRETS, **WEBHOOK_SECRETS}


def test_a_rerun_after_a_completed_rotation_changes_nothing(secrets_under_old_key):
    with override_settings(FINOPS_ENCRYPTION_KEYS=[NEW_KEY, OLD_KEY]):
        rotate()
        rotated = ciphertexts()
        output = rotate()
    assert "Account.credentials_ciphertext: 0 re-encrypted" in output and "10 already under the current key" in output
    assert ciphertexts() == rotated
    assert AuditEntry.objects.filter(entity_type="encryption_key").count() == 1


def test_a_dry_run_counts_and_changes_nothing(secrets_under_old_key):
    with override_settings(FINOPS_ENCRYPTION_KEYS=[NEW_KEY, OLD_KEY]):
        before = ciphertexts()
        assert "Account.credentials_ciphertext: 4 would be re-encrypted" in rotate("--dry-run")
        assert ciphertexts() == before


def test_a_secret_no_key_decrypts_stops_the_rotation_naming_it_and_nothing_changes(secrets_under_old_key):
    with override_settings(FINOPS_ENCRYPTION_KEYS=[OTHER_KEY]):
        account_create(
            name="stray",
            connector="openai_api",
            provider=Provider.objects.get(slug="openai"),
            secret="sk-stray-0123456789",
        )
    with override_settings(FINOPS_ENCRYPTION_KEYS=[NEW_KEY, OLD_KEY]):
        before = ciphertexts()
        with pytest.raises(CommandError, match="provider account 'stray'|account 'stray'") as raised:
            rotate()
        assert "Nothing was changed" in str(raised.value) and "sk-stray" not in str(raised.value)
        assert ciphertexts() == before


def test_every_encrypted_column_is_rotated():
    """A model that gains a *_ciphertext field must be listed in ENCRYPTED_FIELDS, or its secrets would be left
    under the old key."""
    declared = {
        (m, f.name)
        for m in apps.get_app_config("finops").get_models()
        for f in m._meta.fields
        if f.name.endswith("_ciphertext")
    }
    assert declared == {(model, name) for model, name, _ in ENCRYPTED_FIELDS}


@pytest.mark.slow  # left out of make test-fast (tests/conftest.py says why)
def test_a_rotation_killed_mid_transaction_changes_nothing_and_a_rerun_completes(transactional_db):
    """A real interruption: the command runs in its own process, is held on a locked cap row after re-encrypting
    the accounts (inside its transaction), and is killed with SIGKILL; Postgres rolls its work back."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from django.conf import settings
    from django.db import connection, transaction

    from tests.conftest import reseed_reference_data

    reseed_reference_data()
    openai = Provider.objects.get(slug="openai")
    with override_settings(FINOPS_ENCRYPTION_KEYS=[OLD_KEY]):
        for name, secret in ACCOUNT_SECRETS.items():
            account_create(name=name, connector="openai_api", provider=openai, secret=secret)
        cap_create(
            by=None,
            name="cap-0",
            scope="org",
            amount="100",
            recipients=["ops@example.com"],
            webhook_url="https://hooks.example.com/finops",
            webhook_secret=WEBHOOK_SECRETS["cap-0"],
        )
    before = ciphertexts()
    db = settings.DATABASES["default"]
    env = {
        **os.environ,
        "FINOPS_ENCRYPTION_KEY": f"{NEW_KEY},{OLD_KEY}",
        "DJANGO_SETTINGS_MODULE": "finops.settings_test",
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}",
    }
    with transaction.atomic():
        Cap.objects.select_for_update().get(name="cap-0")  # the rotation will wait here, accounts already re-encrypted
        process = subprocess.Popen(
            [sys.executable, "manage.py", "rotate_encryption_key"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 60
        with connection.cursor() as cursor:
            while True:
                # pg_stat_activity is a snapshot for the whole transaction unless cleared: clear it each time.
                cursor.execute("SELECT pg_stat_clear_snapshot()")
                cursor.execute(
                    "SELECT query FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND pid <> pg_backend_pid()"
                )
                waiting = [row[0] for row in cursor.fetchall()]
                if waiting:
                    assert "finops_cap" in waiting[0]  # held on the caps: the accounts' rows are rewritten, uncommitted
                    break
                if process.poll() is not None or time.monotonic() > deadline:
                    process.kill()
                    pytest.fail(
                        f"the rotation never waited on the locked cap: {process.stderr.read().decode()[-2000:]}"
                    )
                time.sleep(0.1)
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
    assert ciphertexts() == before
    with override_settings(FINOPS_ENCRYPTION_KEYS=[NEW_KEY, OLD_KEY]):
        assert plain_secrets() == {**ACCOUNT_SECRETS, "cap-0": WEBHOOK_SECRETS["cap-0"]}
        assert "Account.credentials_ciphertext: 4 re-encrypted" in rotate()
    with override_settings(FINOPS_ENCRYPTION_KEYS=[NEW_KEY]):
        assert plain_secrets() == {**ACCOUNT_SECRETS, "cap-0": WEBHOOK_SECRETS["cap-0"]}
