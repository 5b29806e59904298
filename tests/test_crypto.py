"""Provider keys at rest (finops/core/crypto.py, finops/sources/services/accounts.py): docs/architecture.md
invariant 10.

A provider admin key can read or run up a company's whole bill: it is stored encrypted, shown back only
as a short prefix, survives a key rotation, and never reaches a log, an error message or an export.
"""

import base64
import io
import logging
import traceback
from io import StringIO

import pytest
from cryptography.fernet import Fernet
from django.core.exceptions import ImproperlyConfigured
from django.core.management import CommandError, call_command
from django.test import override_settings

from finops.core import crypto
from finops.models import Account, IngestRun
from finops.sources.services.accounts import account_credentials, account_credentials_matches, account_set_credentials
from ingest.services import usage_file_import

SECRET = "sk-admin-9fQ2xLr7TbW4mZp1KcV8nHs3JdY6gUe0"
OLD_KEY = Fernet.generate_key().decode()
NEW_KEY = Fernet.generate_key().decode()


def stored(account: Account) -> Account:
    return Account.objects.get(pk=account.pk)


def test_the_stored_ciphertext_is_not_the_secret_and_does_not_contain_it(openai_account):
    account_set_credentials(account=openai_account, secret=SECRET)

    ciphertext = stored(openai_account).credentials_ciphertext
    assert ciphertext and ciphertext != SECRET
    assert SECRET not in ciphertext
    assert SECRET[9:] not in ciphertext  # not even the secret part after the well-known prefix
    assert base64.urlsafe_b64encode(SECRET.encode()).decode().rstrip("=") not in ciphertext


def test_a_secret_round_trips_through_the_database(openai_account):
    account_set_credentials(account=openai_account, secret=SECRET)

    account = stored(openai_account)
    assert account_credentials(account=account) == SECRET
    assert account_credentials_matches(account=account, secret=SECRET)
    assert not account_credentials_matches(account=account, secret=SECRET + "x")
    assert account.has_credentials


def test_encrypting_the_same_secret_twice_gives_different_ciphertexts():
    assert crypto.encrypt(SECRET) != crypto.encrypt(SECRET)


def test_an_empty_secret_clears_the_stored_credentials(openai_account):
    account_set_credentials(account=openai_account, secret=SECRET)

    account_set_credentials(account=openai_account, secret="")

    account = stored(openai_account)
    assert (account.credentials_ciphertext, account.credentials_hint) == ("", "")
    assert account_credentials(account=account) == ""
    assert account.credentials_display == "—"


@pytest.mark.parametrize("length", [0, 1, 2, 3, 5, 9, 12, 24, 25, 26, 40, 200])
def test_the_hint_is_a_prefix_of_at_most_eight_characters_and_a_third_of_the_secret(length):
    secret = ("sk-proj-" + "abcdefghij" * 20)[:length]

    hint = crypto.hint(secret)

    assert secret.startswith(hint)
    assert len(hint) <= 8
    assert len(hint) * 3 <= len(secret)


def test_the_account_shows_only_its_hint(openai_account):
    account_set_credentials(account=openai_account, secret=SECRET)

    account = stored(openai_account)
    assert account.credentials_hint == "sk-admin"
    assert account.credentials_display == "sk-admin…"
    assert SECRET not in account.credentials_display


def test_a_short_secret_shows_at_most_a_third_of_itself(openai_account):
    account_set_credentials(account=openai_account, secret="abcdefghi")

    assert stored(openai_account).credentials_hint == "abc"


# --- keys: rotation, wrong key, no key ---


def test_after_rotation_the_old_key_still_decrypts_and_the_new_key_encrypts(openai_account):
    with override_settings(FINOPS_ENCRYPTION_KEYS=[OLD_KEY]):
        account_set_credentials(account=openai_account, secret=SECRET)
    old_ciphertext = stored(openai_account).credentials_ciphertext

    with override_settings(FINOPS_ENCRYPTION_KEYS=[NEW_KEY, OLD_KEY]):
        assert account_credentials(account=stored(openai_account)) == SECRET
        account_set_credentials(account=openai_account, secret=SECRET)
    new_ciphertext = stored(openai_account).credentials_ciphertext

    with override_settings(FINOPS_ENCRYPTION_KEYS=[NEW_KEY]):
        assert crypto.decrypt(new_ciphertext) == SECRET
        with pytest.raises(crypto.CredentialError):
            crypto.decrypt(old_ciphertext)


def test_a_wrong_key_gives_a_credential_error_that_reveals_nothing(openai_account):
    with override_settings(FINOPS_ENCRYPTION_KEYS=[OLD_KEY]):
        account_set_credentials(account=openai_account, secret=SECRET)
    account = stored(openai_account)

    with override_settings(FINOPS_ENCRYPTION_KEYS=[NEW_KEY]):
        with pytest.raises(crypto.CredentialError) as excinfo:
            account_credentials(account=account)

    message = str(excinfo.value)
    assert "FINOPS_ENCRYPTION_KEY" in message
    shown = "".join(traceback.format_exception(excinfo.value))
    for revealing in (SECRET, account.credentials_ciphertext, OLD_KEY, NEW_KEY):
        assert revealing not in message
        assert revealing not in shown


def test_a_missing_key_says_how_to_generate_one():
    with override_settings(FINOPS_ENCRYPTION_KEYS=[]):
        with pytest.raises(ImproperlyConfigured) as excinfo:
            crypto.encrypt(SECRET)

    assert "FINOPS_ENCRYPTION_KEY is not set" in str(excinfo.value)
    assert "manage.py generate_encryption_key" in str(excinfo.value)


def test_a_key_that_is_not_a_fernet_key_is_refused_without_echoing_it():
    with override_settings(FINOPS_ENCRYPTION_KEYS=["hunter2-not-a-key"]):
        with pytest.raises(ImproperlyConfigured) as excinfo:
            crypto.encrypt(SECRET)

    assert "not a valid Fernet key" in str(excinfo.value)
    assert "hunter2" not in str(excinfo.value)


def test_generate_encryption_key_prints_a_working_fernet_key():
    out = StringIO()
    call_command("generate_encryption_key", stdout=out)
    key = out.getvalue().strip()

    assert len(base64.urlsafe_b64decode(key)) == 32
    with override_settings(FINOPS_ENCRYPTION_KEYS=[key]):
        assert crypto.decrypt(crypto.encrypt(SECRET)) == SECRET

    again = StringIO()
    call_command("generate_encryption_key", stdout=again)
    assert again.getvalue().strip() != key


# --- nothing logs the secret ---


@pytest.fixture
def every_log(caplog, settings):
    """Every logger at DEBUG, SQL included (Django logs statements with their parameters when DEBUG is on)."""
    settings.DEBUG = True
    caplog.set_level(logging.DEBUG)
    for name in list(logging.root.manager.loggerDict):
        caplog.set_level(logging.DEBUG, logger=name)
    return caplog


def assert_never_logged(caplog, secret: str) -> None:
    assert caplog.records, "nothing was logged: the test would prove nothing"
    for record in caplog.records:
        assert secret not in record.getMessage()
        assert secret not in repr(record.args)
        assert secret not in (record.exc_text or "")
    assert secret not in caplog.text


def test_applying_a_config_with_a_credentials_secret_never_logs_it(db, every_log, tmp_path, monkeypatch):
    text = (
        "accounts:\n"
        "  - {name: openai-prod, provider: openai, connector: openai_api, credentials_env: FINOPS_TEST_KEY}\n"
    )
    path = tmp_path / "finops.yaml"
    path.write_text(text)
    monkeypatch.setenv("FINOPS_TEST_KEY", SECRET)

    call_command("apply_config", str(path), stdout=StringIO())
    monkeypatch.setenv("FINOPS_TEST_KEY", SECRET[::-1])
    call_command("apply_config", str(path), stdout=StringIO())
    bad = tmp_path / "bad.yaml"
    bad.write_text(text + "teams:\n  - {name: Billing, slug: billing, cost_centre: CC-700}\n")
    with pytest.raises(CommandError) as excinfo:
        call_command("apply_config", str(bad), stdout=StringIO())
    assert SECRET[::-1] not in str(excinfo.value)

    assert any(r.name == "django.db.backends" and "finops_account" in r.getMessage() for r in every_log.records)
    assert_never_logged(every_log, SECRET)
    assert_never_logged(every_log, SECRET[::-1])


def test_a_failing_file_import_never_logs_the_accounts_secret(openai_account, every_log):
    account_set_credentials(account=openai_account, secret=SECRET)
    account = stored(openai_account)
    csv = "day,model,input_tokens,output_tokens,cost\n2025-01-14,gpt-4o,10,5,1\n2025-01-14,gpt-4o,10,5,lots\n"

    run = usage_file_import(account=account, stream=io.BytesIO(csv.encode()), file_name="usage.csv")

    assert run.status == IngestRun.Status.FAILED
    assert any(r.levelno == logging.WARNING and "usage.csv line 3" in r.getMessage() for r in every_log.records)
    assert_never_logged(every_log, SECRET)
