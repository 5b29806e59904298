"""Getting outcome counts in (issue 12): one service behind the API, the CSV command and the upload form;
all or nothing, corrections replace, idempotency keys apply a batch once, team isolation."""

import datetime as dt
import logging
import threading
import time

import pytest
from django.core.exceptions import PermissionDenied
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command, execute_from_command_line
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from finops.models import OutcomeBatch, OutcomeCount, Workload
from finops.performance.services.outcomes import OutcomesInvalid, outcomes_import_csv, outcomes_record
from tests.clock import holding
from tests.conftest import make_user

TODAY = dt.datetime.now(dt.UTC).date()
_held_on_today = holding(TODAY)
D1 = (TODAY - dt.timedelta(days=3)).isoformat()
D2 = (TODAY - dt.timedelta(days=2)).isoformat()
JSON = {"content_type": "application/json"}


def counts():
    return {
        (o.workload.slug, o.day.isoformat(), o.source): o.count for o in OutcomeCount.objects.select_related("workload")
    }


def test_a_batch_is_stored_one_row_per_workload_day_and_source(sam, support_agent):
    result = outcomes_record(
        by=sam,
        rows=[
            {"workload": "support-agent", "day": D1, "count": 40},
            {"workload": "support-agent", "day": D2, "count": "41", "source": "zendesk"},
        ],
    )
    assert (result.rows, result.created, result.replaced, result.unchanged, result.replay) == (2, 2, 0, 0, False)
    assert counts() == {("support-agent", D1, ""): 40, ("support-agent", D2, "zendesk"): 41}


def test_a_later_count_for_the_same_workload_day_and_source_replaces_the_earlier_one(sam, support_agent):
    outcomes_record(by=sam, rows=[{"workload": "support-agent", "day": D1, "count": 40, "source": "zendesk"}])
    result = outcomes_record(
        by=sam,
        rows=[
            {"workload": "support-agent", "day": D1, "count": 38, "source": "zendesk"},
            {"workload": "support-agent", "day": D2, "count": 5, "source": "zendesk"},
        ],
    )
    assert (result.created, result.replaced, result.unchanged) == (1, 1, 0)
    assert counts() == {("support-agent", D1, "zendesk"): 38, ("support-agent", D2, "zendesk"): 5}
    again = outcomes_record(by=sam, rows=[{"workload": "support-agent", "day": D1, "count": 38, "source": "zendesk"}])
    assert (again.created, again.replaced, again.unchanged) == (0, 0, 1)


def test_two_sources_for_the_same_day_are_separate_rows_that_add_up(sam, support_agent):
    outcomes_record(by=sam, rows=[{"workload": "support-agent", "day": D1, "count": 40, "source": "zendesk"}])
    outcomes_record(by=sam, rows=[{"workload": "support-agent", "day": D1, "count": 2, "source": "email"}])
    assert sum(OutcomeCount.objects.filter(day=D1).values_list("count", flat=True)) == 42
    assert OutcomeCount.objects.count() == 2


def test_the_same_idempotency_key_twice_applies_the_batch_once(sam, support_agent):
    rows = [{"workload": "support-agent", "day": D1, "count": 40}]
    first = outcomes_record(by=sam, rows=rows, idempotency_key="batch-1")
    outcomes_record(by=sam, rows=[{"workload": "support-agent", "day": D1, "count": 7}])  # a correction in between
    replay = outcomes_record(by=sam, rows=rows, idempotency_key="batch-1")
    assert first.replay is False and replay.replay is True
    assert (replay.rows, replay.created, replay.replaced) == (1, 0, 0)
    assert counts() == {("support-agent", D1, ""): 7}  # the replay did not undo the correction
    assert OutcomeBatch.objects.get().rows == 1


def test_the_same_key_posted_twice_at_once_is_applied_once_and_the_second_answered_as_a_replay(
    reseeded, ada, support_agent
):
    """Real concurrency (Postgres): the second post checks the key before the first commits, then waits on the key's
    unique index; when the first commits it answers a replay instead of applying its rows."""
    late = {}

    def post_again():
        try:
            late["result"] = outcomes_record(
                by=ada, rows=[{"workload": "support-agent", "day": D1, "count": 40}], idempotency_key="race"
            )
        finally:
            connection.close()

    with transaction.atomic():
        outcomes_record(by=ada, rows=[{"workload": "support-agent", "day": D1, "count": 40}], idempotency_key="race")
        thread = threading.Thread(target=post_again, daemon=True)
        thread.start()
        deadline = time.monotonic() + 30
        with connection.cursor() as cursor:  # wait until the second post is blocked on the key
            while True:
                cursor.execute("SELECT pg_stat_clear_snapshot()")  # else a transaction sees one snapshot
                cursor.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                    "AND wait_event_type = 'Lock'"
                )
                if cursor.fetchone()[0]:
                    break
                assert time.monotonic() < deadline, "the second post never waited on the key"
                time.sleep(0.02)
    thread.join(30)
    assert late["result"].replay is True and late["result"].rows == 1
    assert (late["result"].created, late["result"].unchanged) == (0, 0)  # answered from the batch, not re-applied
    assert counts() == {("support-agent", D1, ""): 40}
    assert OutcomeBatch.objects.count() == 1


def test_a_bad_batch_is_rejected_whole_with_every_bad_row_named_and_nothing_applied(sam, support_agent):
    future = (TODAY + dt.timedelta(days=1)).isoformat()
    rows = [
        {"workload": "support-agent", "day": D1, "count": 40},
        {"workload": "nope", "day": D1, "count": 1},
        {"workload": "support-agent", "day": "2026-02-30", "count": 1},
        {"workload": "support-agent", "day": "03/11/2026", "count": 1},
        {"workload": "support-agent", "day": future, "count": 1},
        {"workload": "support-agent", "day": D2, "count": -1},
        {"workload": "support-agent", "day": D2, "count": 1.5},
        {"workload": "support-agent", "day": D1, "count": 3},
        {"workload": "support-agent", "day": D2, "count": 1, "cnt": 2},
    ]
    with pytest.raises(OutcomesInvalid) as rejected:
        outcomes_record(by=sam, rows=rows, idempotency_key="k")
    assert rejected.value.errors == [
        "row 2: unknown workload 'nope'",
        "row 3: bad date '2026-02-30' (no such day)",
        "row 4: bad date '03/11/2026' (expected YYYY-MM-DD)",
        f"row 5: day {future} is in the future (today is {TODAY.isoformat()}, UTC)",
        "row 6: count: -1 is negative",
        "row 7: count: 1.5 is not a whole number",
        f"row 8: repeats row 1 (workload 'support-agent', day {D1}, source ''): send one count per workload, day and "
        f"source",
        "row 9: unknown field 'cnt'",
    ]
    assert OutcomeCount.objects.count() == 0
    assert not OutcomeBatch.objects.exists()  # the key is not used up: the fixed batch may be sent with it


def test_a_member_cannot_write_another_teams_workload_which_is_not_even_confirmed_to_exist(
    sam, support_agent, search_ranker
):
    with pytest.raises(OutcomesInvalid) as rejected:
        outcomes_record(
            by=sam,
            rows=[
                {"workload": "support-agent", "day": D1, "count": 1},
                {"workload": "search-ranker", "day": D1, "count": 1},
            ],
        )
    assert rejected.value.errors == ["row 2: unknown workload 'search-ranker'"]
    assert OutcomeCount.objects.count() == 0


def test_a_team_member_who_is_not_its_lead_writes_their_teams_outcomes(support_team, support_agent):
    mo = make_user("mo", "member", team=support_team, team_role="member")
    assert outcomes_record(by=mo, rows=[{"workload": "support-agent", "day": D1, "count": 3}]).created == 1


def test_a_user_in_no_team_writes_no_outcomes(support_agent):
    with pytest.raises(PermissionDenied):
        outcomes_record(by=make_user("nemo", "member"), rows=[{"workload": "support-agent", "day": D1, "count": 3}])


def test_finance_reads_outcome_counts_but_writes_none(fiona, ada, support_agent, client_as):
    with pytest.raises(PermissionDenied):
        outcomes_record(by=fiona, rows=[{"workload": "support-agent", "day": D1, "count": 1}])
    outcomes_record(by=ada, rows=[{"workload": "support-agent", "day": D2, "count": 1}], idempotency_key="k")
    with pytest.raises(PermissionDenied):  # not even a replay of a key already applied
        outcomes_record(by=fiona, rows=[{"workload": "support-agent", "day": D2, "count": 1}], idempotency_key="k")
    response = client_as(fiona).post("/api/v1/outcomes", [{"workload": "support-agent", "day": D1, "count": 1}], **JSON)
    assert response.status_code == 403
    outcomes_record(by=ada, rows=[{"workload": "support-agent", "day": D1, "count": 9}])  # admins write any workload
    assert [r["count"] for r in client_as(fiona).get("/api/v1/outcomes").json()] == [9, 1]


# --- the API ---


def test_the_api_answers_201_with_the_counts_then_200_for_a_replay_by_header_or_body_key(sam, support_agent, client_as):
    client = client_as(sam)
    rows = [
        {"workload": "support-agent", "day": D1, "count": 40},
        {"workload": "support-agent", "day": D2, "count": 41},
    ]
    first = client.post("/api/v1/outcomes", rows, HTTP_IDEMPOTENCY_KEY="nightly-1", **JSON)
    assert first.status_code == 201
    assert first.json() == {"rows": 2, "created": 2, "replaced": 0, "unchanged": 0, "replay": False}
    replay = client.post("/api/v1/outcomes", {"rows": rows, "idempotency_key": "nightly-1"}, **JSON)
    assert replay.status_code == 200 and replay.json()["replay"] is True
    assert OutcomeCount.objects.count() == 2
    conflicting = client.post(
        "/api/v1/outcomes", {"rows": rows, "idempotency_key": "a"}, HTTP_IDEMPOTENCY_KEY="b", **JSON
    )
    assert conflicting.status_code == 400


def test_the_api_rejects_a_bad_batch_with_400_and_row_errors(sam, support_agent, client_as):
    response = client_as(sam).post(
        "/api/v1/outcomes",
        [{"workload": "support-agent", "day": D1, "count": 1}, {"workload": "support-agent", "day": D1}],
        **JSON,
    )
    assert response.status_code == 400
    assert response.json() == {"errors": ["row 2: missing count"]}
    assert client_as(sam).post("/api/v1/outcomes", {"workload": "support-agent"}, **JSON).status_code == 400
    assert OutcomeCount.objects.count() == 0


def test_the_api_lists_only_the_counts_of_the_users_teams_and_404s_another_teams_workload(
    ada, sam, support_agent, search_ranker, client_as
):
    outcomes_record(
        by=ada,
        rows=[
            {"workload": "support-agent", "day": D1, "count": 40},
            {"workload": "support-agent", "day": D2, "count": 41},
            {"workload": "search-ranker", "day": D1, "count": 7},
        ],
    )
    client = client_as(sam)
    assert [(r["workload"], r["day"], r["count"]) for r in client.get("/api/v1/outcomes").json()] == [
        ("support-agent", D1, 40),
        ("support-agent", D2, 41),
    ]
    assert [
        r["day"] for r in client.get("/api/v1/outcomes", {"workload": "support-agent", "start": D1, "end": D2}).json()
    ] == [D1]
    assert client.get("/api/v1/outcomes", {"workload": "search-ranker"}).status_code == 404
    assert client.get("/api/v1/outcomes", {"start": "yesterday"}).status_code == 400
    assert len(client_as(ada).get("/api/v1/outcomes").json()) == 3


def test_the_outcomes_api_is_in_the_openapi_schema(ada, client_as):
    schema = client_as(ada).get("/api/schema/", {"format": "json"})
    assert schema.status_code == 200, schema.status_code
    assert b"/api/v1/outcomes" in schema.content and b"Idempotency-Key" in schema.content


# --- the command ---


def test_import_outcomes_records_a_good_file_and_says_what_it_did(support_agent, tmp_path, capsys):
    path = tmp_path / "outcomes.csv"
    path.write_text(f"workload,day,count\nsupport-agent,{D1},40\nsupport-agent,{D2},41\n")
    call_command("import_outcomes", str(path), "--source", "zendesk")
    assert "2 rows: 2 created, 0 replaced, 0 unchanged" in capsys.readouterr().out
    path.write_text(f"workload,day,count,source\nsupport-agent,{D1},39,\nsupport-agent,{D1},3,email\n")
    call_command("import_outcomes", str(path), "--source", "zendesk")
    assert "2 rows: 1 created, 1 replaced, 0 unchanged" in capsys.readouterr().out
    assert counts() == {
        ("support-agent", D1, "zendesk"): 39,
        ("support-agent", D2, "zendesk"): 41,
        ("support-agent", D1, "email"): 3,
    }


def test_import_outcomes_refuses_a_bad_file_naming_its_lines_and_applies_nothing(support_agent, tmp_path):
    path = tmp_path / "outcomes.csv"
    path.write_text(f"workload,day,count\nsupport-agent,{D1},40\nsupport-agent,{D2},lots\nghost,{D2},1\n")
    with pytest.raises(CommandError) as failed:
        call_command("import_outcomes", str(path))
    assert "row 3: count: 'lots' is not a whole number" in str(failed.value)
    assert "row 4: unknown workload 'ghost'" in str(failed.value)
    assert OutcomeCount.objects.count() == 0
    path.write_text(f"workload,when,count\nsupport-agent,{D1},40\n")
    with pytest.raises(CommandError, match="row 1 \\(the header\\): unknown column 'when'; missing column day"):
        call_command("import_outcomes", str(path))


@pytest.fixture
def root_handlers_kept():
    """`execute_from_command_line` runs django.setup() again, whose LOGGING points the root logger at the sys.stderr
    of that moment — capsys's, closed when the test ends: every later log line of the process would fail to
    write ("--- Logging error ---"). The handlers the process had are put back."""
    handlers = logging.root.handlers[:]
    yield
    logging.root.handlers[:] = handlers


def test_a_bad_file_makes_the_command_exit_non_zero(support_agent, tmp_path, capsys, root_handlers_kept):
    path = tmp_path / "outcomes.csv"
    path.write_text(f"workload,day,count\nghost,{D1},1\n")
    with pytest.raises(SystemExit) as exited:  # as from a shell: run_from_argv turns the CommandError into exit 1
        execute_from_command_line(["manage.py", "import_outcomes", str(path)])
    assert exited.value.code != 0
    assert "row 2: unknown workload 'ghost'" in capsys.readouterr().err


# --- the upload form ---


def test_the_upload_form_shows_on_the_workload_page_only_to_those_who_may_write(sam, fiona, support_agent, client_as):
    assert b'data-testid="outcome-upload"' in client_as(sam).get("/workloads/support-agent/").content
    assert b'data-testid="outcome-upload"' not in client_as(fiona).get("/workloads/support-agent/").content


def test_the_upload_form_records_a_file_and_says_so(sam, support_agent, client_as):
    upload = SimpleUploadedFile("o.csv", f"\ufeffday,count,source\n{D1},40,zendesk\n".encode())
    response = client_as(sam).post("/workloads/support-agent/outcomes/", {"file": upload}, follow=True)
    assert response.redirect_chain[-1][0] == "/workloads/support-agent/"
    assert "o.csv: 1 outcome counts recorded (1 new, 0 replaced, 0 unchanged)." in response.content.decode()
    assert counts() == {("support-agent", D1, "zendesk"): 40}


def test_the_upload_form_refuses_a_bad_file_with_its_row_errors(sam, support_agent, search_ranker, client_as):
    upload = SimpleUploadedFile("o.csv", f"workload,day,count\nsupport-agent,{D1},40\nsearch-ranker,{D1},1\n".encode())
    response = client_as(sam).post("/workloads/support-agent/outcomes/", {"file": upload}, follow=True)
    page = response.content.decode()
    assert (
        "Outcomes upload refused, nothing applied: row 3: workload &#x27;search-ranker&#x27;: this form takes "
        "&#x27;support-agent&#x27; only" in page
    )
    assert OutcomeCount.objects.count() == 0


def test_the_upload_answers_404_for_another_teams_workload_and_403_for_finance(
    sam, fiona, search_ranker, support_agent, client_as
):
    upload = SimpleUploadedFile("o.csv", f"day,count\n{D1},1\n".encode())
    assert client_as(sam).post("/workloads/search-ranker/outcomes/", {"file": upload}).status_code == 404
    assert client_as(fiona).post("/workloads/support-agent/outcomes/", {"file": upload}).status_code == 403
    assert OutcomeCount.objects.count() == 0


# --- size ---


def test_a_10k_row_csv_is_applied_in_one_go(ada, support_team, tmp_path):
    workloads = Workload.objects.bulk_create(
        [Workload(team=support_team, name=f"W{i}", slug=f"w{i}", latency_profile="batch") for i in range(10)]
    )
    lines = ["workload,day,count,source"] + [
        f"{w.slug},{(TODAY - dt.timedelta(days=d)).isoformat()},{d},{s}"
        for w in workloads
        for d in range(1, 501)
        for s in ("a", "b")
    ]
    path = tmp_path / "big.csv"
    path.write_text("\n".join(lines) + "\n")
    started = time.perf_counter()
    with open(path, newline="") as stream, CaptureQueriesContext(connection) as queries:
        result = outcomes_import_csv(by=ada, stream=stream)
    elapsed = time.perf_counter() - started
    assert (result.rows, result.created) == (10_000, 10_000)
    assert OutcomeCount.objects.count() == 10_000
    assert len(queries) < 100, len(queries)  # batched (SQLite's batches are smaller), not a query per row
    assert elapsed < 10, elapsed
    lines[1] = lines[1].rsplit(",", 2)[0] + ",999,a"  # one correction among 10k restated rows
    path.write_text("\n".join(lines) + "\n")
    with open(path, newline="") as stream:
        again = outcomes_import_csv(by=ada, stream=stream)
    assert (again.created, again.replaced, again.unchanged) == (0, 1, 9_999)
