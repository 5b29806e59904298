"""Size limits on every batch write (issue 26): a byte limit answered 413 before the body is read, and a row limit
answered 400 before any row is validated, the same on the page and the API; the command takes larger batches.
Rows follow the shapes the metrics and evals tests post; the byte limit is also proved over a real socket."""

import datetime as dt
import io
import socket

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command

from finops.models import EvalScore, OutcomeCount, ReportedPerformance
from finops.org.services.api_tokens import api_token_create
from tests.clock import holding
from tests.test_evals_api import score
from tests.test_metrics_api import row as metric_row

TODAY = dt.datetime.now(dt.UTC).date()
_held_on_today = holding(TODAY)
JSON = {"content_type": "application/json"}


def outcome(day_offset: int) -> dict:
    return {"workload": "support-agent", "day": (TODAY - dt.timedelta(days=day_offset)).isoformat(), "count": 1}


def csv_of(days: int) -> bytes:
    lines = ["day,count"] + [f"{(TODAY - dt.timedelta(days=d + 1)).isoformat()},{d}" for d in range(days)]
    return ("\n".join(lines) + "\n").encode()


def nothing_stored():
    return not (OutcomeCount.objects.exists() or ReportedPerformance.objects.exists() or EvalScore.objects.exists())


@pytest.fixture
def small(settings):
    settings.FINOPS_MAX_BATCH_BYTES = 2_000
    settings.FINOPS_MAX_BATCH_ROWS = 3


def test_batches_over_the_byte_limit_are_413_on_every_api_endpoint_and_the_page(small, ada, support_agent, client_as):
    client = client_as(ada)
    big = {
        "/api/v1/outcomes": [outcome(d + 1) for d in range(40)],
        "/api/v1/metrics": [metric_row(dt.datetime(2026, 10, 5, h, tzinfo=dt.UTC)) for h in range(20)],
        "/api/v1/evals": [score(name=f"eval-{n}") for n in range(20)],
    }
    for url, rows in big.items():
        answer = client.post(url, rows, **JSON)
        assert answer.status_code == 413, (url, answer.content[:200])
        assert "FINOPS_MAX_BATCH_BYTES" in answer.json()["detail"] and "import_outcomes" in answer.json()["detail"]
    page = client.post("/workloads/support-agent/outcomes/", {"file": SimpleUploadedFile("o.csv", csv_of(200))})
    assert page.status_code == 413 and "FINOPS_MAX_BATCH_BYTES" in page.content.decode()
    assert nothing_stored()


def test_batches_over_the_row_limit_are_400_naming_the_limit_on_the_api_and_the_page(
    small, ada, support_agent, client_as
):
    client = client_as(ada)
    for url, rows in {
        "/api/v1/outcomes": [outcome(d + 1) for d in range(4)],
        "/api/v1/metrics": [metric_row(dt.datetime(2026, 10, 5, h, tzinfo=dt.UTC)) for h in range(4)],
        "/api/v1/evals": [score(name=f"e{n}") for n in range(4)],
    }.items():
        answer = client.post(url, rows, **JSON)
        assert answer.status_code == 400, (url, answer.content[:300])
        assert answer.json()["errors"] == [
            "the batch has 4 rows; one request takes at most 3 (FINOPS_MAX_BATCH_ROWS). Send larger batches in "
            "several requests, or load outcome counts with `manage.py import_outcomes` on the server."
        ]
    page = client.post(
        "/workloads/support-agent/outcomes/", {"file": SimpleUploadedFile("o.csv", csv_of(4))}, follow=True
    )
    assert any("at most 3 (FINOPS_MAX_BATCH_ROWS)" in str(m) for m in page.context["messages"])
    assert nothing_stored()
    # Within the limits the same endpoints write.
    assert client.post("/api/v1/outcomes", [outcome(1), outcome(2), outcome(3)], **JSON).status_code == 201


def test_the_command_takes_a_batch_larger_than_a_request_may(small, support_agent, tmp_path):
    path = tmp_path / "outcomes.csv"
    path.write_text(
        "workload,day,count\n" + "".join(f"support-agent,{(TODAY - dt.timedelta(days=d + 1))},{d}\n" for d in range(50))
    )
    call_command("import_outcomes", str(path), stdout=io.StringIO())
    assert OutcomeCount.objects.count() == 50


def test_over_http_the_413_comes_before_the_body_is_sent(reseeded, live_server, settings, support_agent):
    """A client announcing 50 MB and sending nothing more gets its 413 at once: no byte of the body was waited for."""
    from tests.conftest import make_user

    settings.FINOPS_MAX_BATCH_BYTES = 1_000_000
    _, secret = api_token_create(user=make_user("ada", "admin"), name="loader", scope="write")
    host, port = live_server.thread.host, live_server.thread.port
    with socket.create_connection((host, port), timeout=10) as conn:
        conn.sendall(
            (
                f"POST /api/v1/outcomes HTTP/1.1\r\nHost: {host}\r\nAuthorization: Token {secret}\r\n"
                "Content-Type: application/json\r\nContent-Length: 50000000\r\n\r\n["
            ).encode()
        )
        status_line = conn.makefile("rb").readline().decode()
    assert status_line.split()[1] == "413", status_line
    assert not OutcomeCount.objects.exists()
