"""Files and requests that cannot hurt (issue 15): each attack a careless user or admin could make gets a clear,
located error, writes nothing, leaves the data already there as it was, and holds memory flat.

Every test first imports a good file, then the attack, then checks the good file's totals are still there.
"""

import gzip
import io
import json
import tracemalloc
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.db.models import Sum

from finops.core.reporting_period import BOUNDS_ERROR
from finops.models import Account, IngestRun, Provider, UsageLine
from ingest.connectors.text_input import MAX_LINE_CHARS
from ingest.services import usage_file_import

FOCUS = Path(__file__).resolve().parent.parent / "fixtures" / "focus_file"
GOOD_CSV = b"day,model,input_tokens,output_tokens,cost\n2026-11-02,gpt-5-mini,1000,100,1.25\n"


def totals() -> tuple:
    found = UsageLine.objects.aggregate(cost=Sum("cost"), tokens=Sum("input_tokens"), lines=Sum("requests"))
    return found["cost"], found["tokens"], UsageLine.objects.count()


def imported(account, content: bytes, name: str) -> IngestRun:
    return usage_file_import(account=account, stream=io.BytesIO(content), file_name=name)


@pytest.fixture
def csv_account(db):
    account = Account.objects.create(
        name="openai-files", provider=Provider.objects.get(slug="openai"), connector="usage_csv"
    )
    assert imported(account, GOOD_CSV, "good.csv").status == "succeeded"
    return account


@pytest.fixture
def focus_account(db):
    account = Account.objects.create(
        name="bedrock-focus",
        provider=Provider.objects.get(slug="aws-bedrock"),
        connector="focus_file",
    )
    with (FOCUS / "aws_bedrock_focus_1_0.csv").open("rb") as stream:
        assert usage_file_import(account=account, stream=stream, file_name="good.csv").status == "succeeded"
    return account


@pytest.fixture
def gateway_account(db):
    account = Account.objects.create(
        name="gateway", provider=Provider.objects.get(slug="groq"), connector="gateway_log"
    )
    record = {
        "created": 1781427600,
        "model": "llama-3.3-70b-versatile",
        "usage": {"prompt_tokens": 10, "completion_tokens": 5},
    }
    assert imported(account, json.dumps(record).encode(), "good.jsonl").status == "succeeded"
    return account


def refused(account, content: bytes, name: str) -> str:
    before = totals()
    run = imported(account, content, name)
    assert run.status == "failed"
    account.refresh_from_db()
    assert account.last_error and run.error in account.last_error or run.error == account.last_error
    assert totals() == before
    return run.error


def test_a_csv_of_one_endless_line_is_refused_at_the_line_bound_with_flat_memory(csv_account):
    endless = b"day,model,input_tokens,output_tokens\n2026-11-03," + b"x" * (3 * MAX_LINE_CHARS)
    tracemalloc.start()
    error = refused(csv_account, endless, "endless.csv")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert error.startswith(f"endless.csv line 2: longer than {MAX_LINE_CHARS:,} characters")
    assert peak < 6 * MAX_LINE_CHARS  # a line's worth of text (4 bytes a character at worst), never the file


def test_a_quoted_field_past_the_csv_limit_fails_the_run_naming_the_line(csv_account):
    huge = b'day,model,input_tokens,output_tokens\n2026-11-03,"' + b"m" * 2_000_000 + b'",1,1\n'
    assert refused(csv_account, huge, "quoted.csv") == "quoted.csv line 2: field larger than field limit (131072)"


def test_the_import_command_says_the_same_instead_of_a_traceback(csv_account, tmp_path):
    path = tmp_path / "quoted.csv"
    path.write_bytes(b'day,model,input_tokens,output_tokens\n2026-11-03,"' + b"m" * 200_000 + b'",1,1\n')
    stderr = io.StringIO()
    with pytest.raises(CommandError, match="1 of 1 file"):
        call_command("import_usage", str(path), account=csv_account.name, stdout=io.StringIO(), stderr=stderr)
    assert "quoted.csv line 2: field larger than field limit (131072)" in stderr.getvalue()
    assert IngestRun.objects.filter(account=csv_account, status="running").count() == 0


@pytest.mark.parametrize(
    "content",
    [
        b"day,model,input_tokens,output_tokens\n2026-11-03,gpt\x00-5,1,1\n",
        b"day,model,input_tokens,output_tokens\n2026-11-03,gpt-5,1,1\x00\n",
    ],
)
def test_a_nul_byte_in_a_usage_csv_is_refused_with_its_line(csv_account, content):
    assert (
        refused(csv_account, content, "nul.csv")
        == "nul.csv line 2: holds a NUL byte (a binary file, or a damaged export)"
    )


def test_a_nul_in_a_gateway_logs_model_name_is_refused_naming_the_record(gateway_account):
    record = {
        "created": 1781427600,
        "model": "llama\u0000-evil",
        "usage": {"prompt_tokens": 10, "completion_tokens": 5},
    }
    error = refused(gateway_account, (json.dumps(record) + "\n").encode(), "nul.jsonl")
    assert error == "nul.jsonl line 1: model holds a NUL byte"


def test_a_nul_in_a_gateway_logs_tag_is_refused(gateway_account):
    record = {
        "created": 1781427600,
        "model": "llama-3.3-70b-versatile",
        "tags": {"team": "a\u0000b"},
        "usage": {"prompt_tokens": 10, "completion_tokens": 5},
    }
    assert (
        refused(gateway_account, json.dumps(record).encode(), "tag.jsonl") == "tag.jsonl line 1: a tag holds a NUL byte"
    )


def test_a_nul_byte_in_a_focus_export_is_refused_with_its_line(focus_account):
    lines = (FOCUS / "aws_bedrock_focus_1_0.csv").read_bytes().split(b"\n")
    lines[2] = lines[2].replace(b"USD", b"US\x00D", 1)
    assert refused(focus_account, b"\n".join(lines), "nul.csv") == (
        "nul.csv line 3: holds a NUL byte (a binary file, or a damaged export)"
    )


def gzipped(head: bytes, body: bytes, times: int) -> bytes:
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", compresslevel=9) as bomb:
        bomb.write(head)
        for _ in range(times):
            bomb.write(body)
    return buffer.getvalue()


def test_a_gzip_bomb_is_refused_as_one_before_it_expands(focus_account):
    header, row = (FOCUS / "aws_bedrock_focus_1_0.csv").read_bytes().split(b"\n")[:2]
    # A valid row, then 300 MB of empty lines (which a CSV reader skips: only the bound stops it), ~300 kB gzipped
    bomb = gzipped(header + b"\n" + row + b"\n", b"\n" * (1 << 20), 300)
    assert len(bomb) < 1 << 20
    error = refused(focus_account, bomb, "bomb.csv.gz")
    assert error.startswith("bomb.csv.gz: ") and error.endswith("refused as a decompression bomb")


def test_a_gzip_of_one_endless_line_is_refused_at_the_line_bound(focus_account):
    header = (FOCUS / "aws_bedrock_focus_1_0.csv").read_bytes().split(b"\n")[0] + b"\n"
    error = refused(focus_account, gzipped(header, b"a" * (1 << 20), 300), "line.csv.gz")
    assert error.startswith(f"line.csv.gz line 2: longer than {MAX_LINE_CHARS:,} characters")


def test_a_gateway_json_record_without_end_is_refused_at_the_bound(gateway_account):
    endless = b'[{"model": "' + b"x" * (2 * MAX_LINE_CHARS)
    error = refused(gateway_account, endless, "endless.json")
    assert error.startswith("endless.json line 1: a record longer than")


# --- sync windows ---


@pytest.fixture
def api_account(db):
    return Account.objects.create(
        name="openai-api",
        provider=Provider.objects.get(slug="openai"),
        connector="openai_api",
        credentials_env="OPENAI_ADMIN_KEY",
    )


def test_a_sync_of_thousands_of_years_is_refused_and_creates_no_run(client_as, ada, api_account):
    answer = client_as(ada).post(
        f"/api/v1/accounts/{api_account.pk}/syncs",
        {"start": "0001-01-01", "end": "9999-12-31"},
        content_type="application/json",
    )
    assert answer.status_code == 400
    assert answer.json() == {"start": [BOUNDS_ERROR], "end": [BOUNDS_ERROR]}  # days outside 2000–2099, named
    assert not IngestRun.objects.filter(account=api_account).exists()
    future = client_as(ada).post(
        f"/api/v1/accounts/{api_account.pk}/syncs",
        {"start": "2026-01-01", "end": "2099-12-31"},
        content_type="application/json",
    )
    assert future.status_code == 400 and "in the future" in future.json()["detail"]
    assert not IngestRun.objects.filter(account=api_account).exists()


def test_a_sync_of_years_in_the_past_is_refused_and_creates_no_run(client_as, ada, api_account):
    answer = client_as(ada).post(
        f"/api/v1/accounts/{api_account.pk}/syncs",
        {"start": "2000-01-01", "end": "2026-11-01"},
        content_type="application/json",
    )
    assert answer.status_code == 400
    assert answer.json()["detail"] == (
        "Sync refused: the window is 9,801 days long; one sync reads at most 400 days — split it"
    )
    assert not IngestRun.objects.exists()


def test_a_sync_ending_in_the_future_is_refused(client_as, ada, api_account):
    answer = client_as(ada).post(
        f"/api/v1/accounts/{api_account.pk}/syncs",
        {"start": "2026-11-01", "end": "2027-02-01"},
        content_type="application/json",
    )
    assert answer.status_code == 400 and "in the future" in answer.json()["detail"]
    assert not IngestRun.objects.exists()


def test_the_sync_command_refuses_days_before_2000_with_the_apis_bound_and_creates_no_run(api_account):
    """Issue 26: `sync --start 0001-01-01 --end 0001-01-02` ran where the API refused it; one check now
    (window_check)."""
    with pytest.raises(CommandError, match="the earliest day is 2000-01-01"):
        call_command(
            "sync", "--account", api_account.name, "--start", "0001-01-01", "--end", "0001-01-02", stdout=io.StringIO()
        )
    with pytest.raises(CommandError, match="in the future"):
        call_command(
            "sync", "--account", api_account.name, "--start", "2099-01-01", "--end", "2099-01-02", stdout=io.StringIO()
        )
    assert not IngestRun.objects.exists()


def test_the_sync_command_refuses_a_window_too_long(api_account):
    with pytest.raises(CommandError, match="at most 400 days"):
        call_command(
            "sync", "--account", api_account.name, "--start", "2020-01-01", "--end", "2026-01-01", stdout=io.StringIO()
        )
    assert not IngestRun.objects.exists()
