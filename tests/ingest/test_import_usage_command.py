"""`manage.py import_usage`: what it prints, its exit status on a bad file, and the accounts it may create."""

import datetime as dt
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from finops.models import Account, IngestRun, UsageLine

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "usage_csv"


def run_command(*args) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("import_usage", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_import_usage_prints_read_written_replaced_and_rejected(openai_account):
    path = str(FIXTURES / "openai_daily.csv")

    first, _ = run_command(path, "--account", "openai-prod")
    second, _ = run_command(path, "--account", "openai-prod")

    assert first.strip() == "openai_daily.csv: read 4, written 4, replaced 0, rejected 0"
    assert second.strip() == "openai_daily.csv: read 4, written 4, replaced 4, rejected 0"
    assert IngestRun.objects.filter(trigger=IngestRun.Trigger.COMMAND, status=IngestRun.Status.SUCCEEDED).count() == 2


def test_import_usage_exits_non_zero_on_a_bad_file_and_names_it(openai_account):
    out, err = StringIO(), StringIO()

    with pytest.raises(CommandError, match="1 of 2 file"):
        call_command(
            "import_usage",
            str(FIXTURES / "openai_next_day.csv"),
            str(FIXTURES / "bad_date.csv"),
            "--account",
            "openai-prod",
            stdout=out,
            stderr=err,
        )

    assert "openai_next_day.csv: read 1, written 1" in out.getvalue()
    assert "bad_date.csv: FAILED, nothing written" in err.getvalue()
    assert "bad_date.csv line 3" in err.getvalue()
    assert list(UsageLine.objects.values_list("period_start__date", flat=True)) == [dt.date(2025, 1, 16)]


def test_import_usage_refuses_a_file_that_does_not_exist(openai_account, tmp_path):
    with pytest.raises(CommandError, match="nowhere.csv: no such file"):
        run_command(str(tmp_path / "nowhere.csv"), "--account", "openai-prod")


def test_import_usage_creates_the_account_with_connector_and_provider(db):
    out, _ = run_command(
        str(FIXTURES / "groq_no_cost.csv"), "--account", "groq-batch", "--connector", "usage_csv", "--provider", "groq"
    )

    account = Account.objects.get(name="groq-batch")
    assert (account.provider.slug, account.connector) == ("groq", "usage_csv")
    assert "groq_no_cost.csv: read 3, written 3" in out
    assert UsageLine.objects.filter(account=account).count() == 3


def test_import_usage_refuses_an_unknown_account_without_connector_and_provider(db):
    with pytest.raises(CommandError, match="No account named 'nobody'; pass --connector and --provider"):
        run_command(str(FIXTURES / "openai_daily.csv"), "--account", "nobody", "--provider", "openai")

    assert not Account.objects.exists()
    assert not UsageLine.objects.exists()


def test_import_usage_refuses_an_unknown_provider(db):
    with pytest.raises(CommandError, match="Unknown provider 'opneai'"):
        run_command(
            str(FIXTURES / "openai_daily.csv"), "--account", "new", "--connector", "usage_csv", "--provider", "opneai"
        )

    assert not Account.objects.exists()
