"""CSV and formula injection (issue 16): names that come from provider files and users never reach a spreadsheet as
a formula, in any CSV download; numbers, negative ones included, are written as they are."""

import csv
import io

import pytest
from django.core.management import call_command
from django.urls import reverse

from finops.models import Account, AttributionRule, Provider, Team, Workload
from finops.reports.cells import spreadsheet_safe
from ingest.services import usage_file_import

EVIL_MODEL = "=SUM(1+2)*cmd|'calc'!A0"  # no slash: a model id keeps what follows its last slash
EVIL_WORKLOAD = "=1+2"
EVIL_TEAM = "@SUM(A1:A9)"
EVIL_PROJECT = "+cmd|' /C calc'!A0"
DAY = "2026-10-14"
PERIOD = {"period": "2026-10"}


@pytest.fixture
def hostile(db):
    team = Team.objects.create(name=EVIL_TEAM, slug="evil-team")
    workload = Workload.objects.create(team=team, name=EVIL_WORKLOAD, slug="evil-workload")
    account = Account.objects.create(name="files", provider=Provider.objects.get(slug="openai"), connector="usage_csv")
    AttributionRule.objects.create(workload=workload, priority=1, account=account)
    body = io.StringIO()
    csv.writer(body).writerows(
        [
            ["day", "model", "input_tokens", "output_tokens", "cost", "project"],
            [DAY, EVIL_MODEL, "1000", "100", "-2.50", EVIL_PROJECT],  # a credit-like negative amount stays a number
            [DAY, "gpt-5-mini", "1000", "100", "4.00", "proj"],
        ]
    )
    run = usage_file_import(account=account, stream=io.BytesIO(body.getvalue().encode()), file_name="evil.csv")
    assert run.status == "succeeded", run.error
    return workload


def cells(text: str) -> list[str]:
    return [cell for row in csv.reader(io.StringIO(text)) for cell in row]


def assert_safe(text: str, *expected_names: str):
    found = cells(text)
    assert not [c for c in found if c[:1] in ("=", "+", "@", "\t", "\r") or (c[:1] == "-" and not _number(c))], found
    for name in expected_names:
        assert "'" + name in found, (name, found)


def _number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize(
    "cell, safe",
    [
        ("=1+2", "'=1+2"),
        ("+1+2", "'+1+2"),
        ("-1+2", "'-1+2"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\t=1", "'\t=1"),
        ("\r=1", "'\r=1"),
        ("-12.50", "-12.50"),
        ("+3", "+3"),
        ("-1e-5", "-1e-5"),
        ("gpt-5", "gpt-5"),
        ("", ""),
        (12, 12),
        (None, None),
    ],
)
def test_a_cell_a_spreadsheet_would_run_is_quoted_and_a_number_is_not(cell, safe):
    assert spreadsheet_safe(cell) == safe


def test_every_page_csv_quotes_names_that_would_run_as_formulas(client_as, fiona, hostile):
    client = client_as(fiona)
    downloads = {
        "overview by model": client.get(reverse("overview"), {**PERIOD, "csv": "by_model"}),
        "overview top workloads": client.get(reverse("overview"), {**PERIOD, "csv": "top_workloads"}),
        "teams": client.get(reverse("team-list"), {**PERIOD, "csv": "teams"}),
        "workloads": client.get(reverse("workload-list"), {**PERIOD, "csv": "workloads"}),
        "workload by model": client.get(reverse("workload-detail", args=[hostile.slug]), {**PERIOD, "csv": "by_model"}),
        "provider by model": client.get(reverse("provider-detail", args=["openai"]), {**PERIOD, "csv": "by_model"}),
        "explore by model": client.get(
            reverse("explore"), {"start": "2026-10-01", "end": "2026-11-01", "group_by": "model", "csv": "1"}
        ),
    }
    for name, response in downloads.items():
        assert response.status_code == 200 and response["Content-Type"].startswith("text/csv"), name
        assert_safe(response.content.decode())
    assert_safe(downloads["overview by model"].content.decode(), EVIL_MODEL.lower())
    assert_safe(downloads["teams"].content.decode(), EVIL_TEAM)
    assert_safe(downloads["workloads"].content.decode(), EVIL_WORKLOAD)


def test_the_spend_command_and_api_csv_quote_them_and_keep_negative_amounts_as_numbers(client_as, fiona, hostile):
    out = io.StringIO()
    call_command(
        "spend", "--start", "2026-10-01", "--end", "2026-11-01", "--by", "model", "--format", "csv", stdout=out
    )
    assert_safe(out.getvalue(), EVIL_MODEL.lower())
    assert "-2.500000" in cells(out.getvalue())  # the money cell, unquoted
    api = client_as(fiona).get(
        "/api/v1/spend", {"start": "2026-10-01", "end": "2026-11-01", "group_by": "workload", "format": "csv"}
    )
    assert api.status_code == 200, api.content
    assert_safe(api.content.decode())  # workloads are labelled by slug there
    by_model = client_as(fiona).get(
        "/api/v1/spend", {"start": "2026-10-01", "end": "2026-11-01", "group_by": "model", "format": "csv"}
    )
    assert_safe(by_model.content.decode(), EVIL_MODEL.lower())


def test_the_scorecard_xlsx_stores_a_hostile_workload_name_as_text_not_a_formula(client_as, fiona, hostile):
    from openpyxl import load_workbook

    response = client_as(fiona).get("/scorecard/", {"quarter": "2026Q4", "xlsx": "scorecard"})
    assert response.status_code == 200
    sheet = load_workbook(io.BytesIO(response.content)).active
    values = [cell.value for row in sheet.iter_rows() for cell in row]
    assert "'" + EVIL_WORKLOAD in values
    assert not any(cell.data_type == "f" for row in sheet.iter_rows() for cell in row)
