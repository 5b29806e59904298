"""A row a reader cannot read is a located error, never a row of zeros (issue 21).

A usage CSV with an unclosed quote, a short row (its token columns missing) or an empty token cell used to import
as "succeeded" with 0 tokens, replacing the stored day. Each now fails naming the line, and the stored day, its
lines and its rollups, stays exactly as it was: through the import service, the Sources page, the API and
`manage.py import_usage`; a FOCUS export's and a LiteLLM spend log's short rows, unclosed quotes and empty token
cells too. The write path refuses a day of rows of nothing replacing a day of tokens, whatever the
reader (ingest/writing.py, refuse_blank_days).
"""

import csv
import datetime as dt
import io
import re
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.db import transaction
from django.urls import reverse

from finops.models import Account, DailySpend, IngestRun, MonthlySpend, Provider, UsageLine
from ingest.connectors.base import UsageRow
from ingest.lines import IngestError
from ingest.services import usage_file_import
from ingest.writing import write_rows
from tests.sqlite_databases import manage, migrated_sqlite

HEADER = (
    "day,provider,model,input_tokens,cached_input_tokens,cache_write_tokens,output_tokens,requests,cost,currency,"
    "project,api_key,tags\n"
)
GOOD = (
    HEADER
    + "2026-03-01,openai,gpt-4o,1200000,200000,0,300000,420,5.5,USD,proj_support,key_bot,team=support\n"
    + "2026-03-02,openai,gpt-4o,800000,0,0,100000,210,3.0,USD,proj_support,key_bot,team=support\n"
)
# The same two days restated, each broken in one way on line 3 (the 2026-03-02 row).
BROKEN = {
    "unclosed quote": (
        HEADER
        + "2026-03-01,openai,gpt-4o,1200000,200000,0,300000,420,5.5,USD,proj_support,key_bot,team=support\n"
        + '2026-03-02,openai,"gpt-4o,800000,0,0,100000,210,3.0,USD,proj_support,key_bot,team=support\n'
        + "2026-03-01,openai,gpt-4o-mini,10,0,0,5,1,0.01,USD,proj_support,key_bot,team=support\n",
        "line 3: a quoted field opened on this line is not closed",
    ),
    "token columns missing": (
        HEADER
        + "2026-03-01,openai,gpt-4o,1200000,200000,0,300000,420,5.5,USD,proj_support,key_bot,team=support\n"
        + "2026-03-02,openai,gpt-4o\n",
        "line 3: 3 fields where the header has 13 columns: input_tokens, cached_input_tokens",
    ),
    "short row": (
        HEADER
        + "2026-03-01,openai,gpt-4o,1200000,200000,0,300000,420,5.5,USD,proj_support,key_bot,team=support\n"
        + "2026-03-02,openai,gpt-4o,800000,0,0,100000,210,3.0\n",
        "line 3: 9 fields where the header has 13 columns: currency, project, api_key, tags missing",
    ),
    "empty token cells": (
        HEADER
        + "2026-03-01,openai,gpt-4o,1200000,200000,0,300000,420,5.5,USD,proj_support,key_bot,team=support\n"
        + "2026-03-02,openai,gpt-4o,,0,0,,210,3.0,USD,proj_support,key_bot,team=support\n",
        "line 3: input_tokens is empty (write 0 when there were none)",
    ),
}


def stored_days() -> tuple[list, list, list]:
    """Everything an import may change, in a comparable form: the lines, the daily and the monthly rollups."""
    lines = list(
        UsageLine.objects.order_by("id").values_list(
            "id",
            "period_start",
            "model_raw",
            "input_tokens",
            "cached_input_tokens",
            "output_tokens",
            "requests",
            "cost",
        )
    )
    daily = list(DailySpend.objects.order_by("day", "id").values())
    monthly = list(MonthlySpend.objects.order_by("id").values())
    return lines, daily, monthly


@pytest.fixture
def stored(openai_account):
    run = usage_file_import(account=openai_account, stream=io.BytesIO(GOOD.encode()), file_name="good.csv")
    assert run.status == "succeeded" and run.lines_written == 2
    before = stored_days()
    assert sum(line[3] + line[4] + line[5] for line in before[0]) == 2_400_000 and before[1]
    return before


@pytest.mark.parametrize("fault", BROKEN)
def test_a_broken_usage_csv_fails_naming_the_line_and_the_stored_days_stay(openai_account, stored, fault):
    text, message = BROKEN[fault]
    run = usage_file_import(account=openai_account, stream=io.BytesIO(text.encode()), file_name="restated.csv")
    assert run.status == IngestRun.Status.FAILED
    assert run.error.startswith("restated.csv " + message), run.error
    assert stored_days() == stored


@pytest.mark.parametrize("fault", BROKEN)
def test_the_upload_page_and_the_api_fail_the_run_alike(
    client_as, ada, openai_account, stored, fault, settings, tmp_path, django_capture_on_commit_callbacks
):
    settings.MEDIA_ROOT = tmp_path
    text, message = BROKEN[fault]
    client = client_as(ada)
    with django_capture_on_commit_callbacks(execute=True):
        page = client.post(
            reverse("source-upload"),
            {"file": SimpleUploadedFile("restated.csv", text.encode()), "account": openai_account.pk},
            HTTP_ACCEPT="application/json",
        )
        api = client.post(
            reverse("api-account-imports", args=[openai_account.pk]),
            {"file": SimpleUploadedFile("restated.csv", text.encode())},
        )
    for run in (IngestRun.objects.get(pk=page.json()["run"]), IngestRun.objects.get(pk=api.json()["id"])):
        assert run.status == IngestRun.Status.FAILED and run.error.startswith("restated.csv " + message), run.error
    # A refused file is the uploader's error: its message is in the account's runs, the account's state is untouched.
    assert message in client.get(reverse("source-detail", args=[openai_account.pk])).content.decode()
    assert message not in client.get(reverse("source-list")).content.decode()
    assert stored_days() == stored


@pytest.mark.parametrize("fault", BROKEN)
def test_import_usage_exits_non_zero_with_one_clear_line(openai_account, stored, fault, tmp_path):
    text, message = BROKEN[fault]
    path = tmp_path / "restated.csv"
    path.write_text(text)
    err = io.StringIO()
    with pytest.raises(CommandError, match="1 of 1 file"):
        call_command("import_usage", str(path), "--account", "openai-prod", stdout=io.StringIO(), stderr=err)
    failed = [line for line in err.getvalue().splitlines() if line.strip()]
    assert len(failed) == 1 and "restated.csv: FAILED, nothing written" in failed[0] and message in failed[0], failed
    assert stored_days() == stored


@pytest.mark.slow  # left out of make test-fast (tests/conftest.py says why)
def test_manage_py_import_usage_exits_1_on_an_unclosed_quote(tmp_path, tmp_path_factory):
    """The command as a user runs it: its own process, its exit status, what it prints (a migrated SQLite)."""
    text, message = BROKEN["unclosed quote"]
    path = tmp_path / "restated.csv"
    path.write_text(text)
    database = migrated_sqlite(tmp_path_factory, tmp_path / "db.sqlite3")
    args = ["import_usage", str(path), "--account", "openai-prod", "--connector", "usage_csv", "--provider", "openai"]
    done = manage(database, *args, check=False, timeout=300)
    assert done.returncode == 1 and done.stdout == ""
    # Past the log's own record of the run (timestamped): the file's failure on one line, then the command's count.
    failure, summary = [line for line in done.stderr.splitlines() if not re.match(r"\d{4}-\d\d-\d\d ", line)]
    assert failure.startswith("restated.csv: FAILED, nothing written: restated.csv " + message), failure
    assert summary == "CommandError: 1 of 1 file(s) failed"


def test_the_write_path_refuses_blank_rows_replacing_a_day_of_tokens(openai_account, stored):
    """Whatever the reader: rows of nothing (no token, request or cost) for a stored day fail the run."""
    run = IngestRun.objects.create(account=openai_account, trigger=IngestRun.Trigger.UPLOAD, file_name="x.csv")
    day = dt.datetime(2026, 3, 2, tzinfo=dt.UTC)
    blank = UsageRow(
        period_start=day, period_end=day + dt.timedelta(days=1), model_raw="gpt-4o", source_ref="x.csv line 7"
    )
    with pytest.raises(
        IngestError,
        match=r"x.csv line 7: a row with no tokens, requests or cost would replace 900,000 "
        r"stored tokens of 2026-03-02; nothing was imported",
    ):
        with transaction.atomic():
            write_rows(account=openai_account, run=run, rows=[blank])
    assert stored_days() == stored
    # A day the account has nothing stored for takes such a row (a provider's zero-usage day is not refused).
    other = UsageRow(period_start=day + dt.timedelta(days=5), period_end=day + dt.timedelta(days=6), model_raw="gpt-4o")
    with transaction.atomic():
        assert write_rows(account=openai_account, run=run, rows=[other]).written == 1


# --- the other file readers: a FOCUS export and a LiteLLM spend log, each broken on its line 3 ---

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def _lines(fixture: str) -> tuple[str, list[str]]:
    header, *rows = (FIXTURES / fixture).read_text().splitlines()
    return header, [row for row in rows if row]


def _cut(row: str, fields: int) -> str:
    return ",".join(next(csv.reader([row]))[:fields])


def _emptied(header: str, row: str, column: str) -> str:
    cells = next(csv.reader([row]))
    cells[next(csv.reader([header])).index(column)] = ""
    out = io.StringIO()
    csv.writer(out, lineterminator="").writerow(cells)
    return out.getvalue()


FOCUS_HEADER, FOCUS_ROWS = _lines("focus_file/aws_bedrock_focus_1_0.csv")
LOG_HEADER, LOG_ROWS = _lines("gateway_log/litellm_spend_logs.csv")
OTHER_READERS = {  # (connector, provider, good text, broken text, message on line 3)
    "FOCUS short row": (
        "focus_file",
        "aws-bedrock",
        FOCUS_ROWS,
        [FOCUS_ROWS[0], _cut(FOCUS_ROWS[1], 20), *FOCUS_ROWS[2:]],
        "line 3: 20 fields but the header has 48 columns (a short row",
    ),
    "FOCUS unclosed quote": (
        "focus_file",
        "aws-bedrock",
        FOCUS_ROWS,
        [FOCUS_ROWS[0], FOCUS_ROWS[1].replace(",Usage,", ',"Usage,', 1), *FOCUS_ROWS[2:]],
        "line 3: ",
    ),
    "spend log short row": (
        "gateway_log",
        "cerebras",
        LOG_ROWS,
        [LOG_ROWS[0], _cut(LOG_ROWS[1], 5), *LOG_ROWS[2:]],
        "line 3: 5 fields but the header has 14 columns (a short row",
    ),
    "spend log empty prompt_tokens": (
        "gateway_log",
        "cerebras",
        LOG_ROWS,
        [LOG_ROWS[0], _emptied(LOG_HEADER, LOG_ROWS[1], "prompt_tokens"), *LOG_ROWS[2:]],
        "line 3: prompt_tokens is empty",
    ),
}


@pytest.mark.parametrize("fault", OTHER_READERS)
def test_every_file_reader_fails_a_broken_row_naming_its_line_and_keeps_the_stored_data(db, fault):
    connector, provider, good, broken, message = OTHER_READERS[fault]
    header = FOCUS_HEADER if connector == "focus_file" else LOG_HEADER
    account = Account.objects.create(name="files", provider=Provider.objects.get(slug=provider), connector=connector)
    run = usage_file_import(
        account=account, stream=io.BytesIO("\n".join([header, *good, ""]).encode()), file_name="good.csv"
    )
    assert run.status == "succeeded", run.error
    before = stored_days()
    assert sum(line[3] + line[4] + line[5] for line in before[0]) > 0
    run = usage_file_import(
        account=account, stream=io.BytesIO("\n".join([header, *broken, ""]).encode()), file_name="restated.csv"
    )
    assert run.status == IngestRun.Status.FAILED and run.error.startswith("restated.csv " + message), run.error
    assert stored_days() == before
