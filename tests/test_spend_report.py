"""`manage.py spend` and GET /api/v1/spend (issue 9): what they refuse, what a month read from its rollup
gives on its own data, the CSV's no-model row, and the schema. October's figures: tests/test_spend_report_october.py;
Explore's filters and the scopes per role: tests/test_spend_report_filters.py."""

import csv
import datetime as dt
import io
from decimal import Decimal
from pathlib import Path

import pytest
from django.core.management import CommandError

from finops.models import Account, Provider
from finops.spend.selectors.spend_report import spend_rows
from ingest.services import usage_file_import
from tests.spend_report_helpers import (
    api,
    edge_import,
    spend,
)

FOCUS_GCP = Path(__file__).parent / "fixtures" / "focus_file" / "gcp_vertex_focus_1_3.csv"


def test_spend_rejects_an_empty_or_reversed_period(db):
    with pytest.raises(CommandError, match="exclusive"):
        spend("--start", "2026-10-01", "--end", "2026-10-01", "--by", "day")


@pytest.fixture
def priced_outside_unpriced_inside(db):
    """One account with a billed line on 1 October and an unpriced one on 15 October."""
    edge_import()


def test_a_month_minus_its_outside_days_does_not_turn_an_unknown_cost_into_zero(priced_outside_unpriced_inside):
    # October 2–Nov 1 is read as October's monthly row minus 1 October: the $4 nets to 0, yet nothing is priced.
    (row,) = spend_rows(start=dt.date(2026, 10, 2), end=dt.date(2026, 11, 1), by="account", today=dt.date(2026, 11, 20))
    assert (
        row["cost"] is None
        and row["billed_cost"] is None
        and row["unpriced_tokens"] == 220
        and row["priced_tokens"] == 0
    )


def test_the_api_explains_a_bad_query(client_as, fiona):
    response = api(client_as(fiona), start="2026-10-01", group_by="colour")
    assert response.status_code == 400
    assert set(response.json()) == {"end", "group_by"}


def test_csv_names_the_no_model_row_and_leaves_an_unknown_cost_empty(db, client_as, fiona):
    gcp = Account.objects.create(name="gcp", provider=Provider.objects.get(slug="gcp-vertex"), connector="focus_file")
    with FOCUS_GCP.open("rb") as stream:
        assert usage_file_import(account=gcp, stream=stream, file_name=FOCUS_GCP.name).status == "succeeded"
    groq = Account.objects.create(name="groq", provider=Provider.objects.get(slug="groq"), connector="usage_csv")
    text = "day,model,input_tokens,output_tokens\n2026-08-05,my-private-model,10,1\n"
    assert usage_file_import(account=groq, stream=io.BytesIO(text.encode()), file_name="g.csv").status == "succeeded"
    response = api(client_as(fiona), start="2026-08-01", end="2026-09-01", group_by="model", format="csv")
    rows = {r["label"]: r for r in csv.DictReader(io.StringIO(response.content.decode()))}
    assert rows["(no model: taxes, credits, fees)"]["group"] == ""
    # the sales tax ($0.12) and the context cache storage ($0.001), a charge that names no model (issue 21)
    assert Decimal(rows["(no model: taxes, credits, fees)"]["cost"]) == Decimal("0.121")
    assert rows["my-private-model"]["cost"] == "" and rows["my-private-model"]["usd_per_mtok"] == ""


def test_an_error_is_json_even_when_csv_was_asked_for(client_as, fiona):
    response = api(client_as(fiona), start="2026-10-01", end="2026-11-01", group_by="provider", format="csv", teams="x")
    assert response.status_code == 400 and response["Content-Type"] == "application/json"
    assert "teams" in response.json()


# --- the schema ---


def test_the_openapi_schema_documents_every_parameter_and_both_formats(client_as, fiona):
    schema = client_as(fiona).get("/api/schema/", {"format": "json"}).json()
    operation = schema["paths"]["/api/v1/spend"]["get"]
    parameters = {p["name"]: p for p in operation["parameters"]}
    assert set(parameters) == {
        "start",
        "end",
        "group_by",
        "format",
        "team",
        "workload",
        "provider",
        "account",
        "model",
        "basis",
    }
    assert "month" in parameters["group_by"]["schema"]["enum"] and set(parameters["format"]["schema"]["enum"]) == {
        "json",
        "csv",
    }
    assert set(operation["responses"]["200"]["content"]) == {"application/json", "text/csv"}
    row = schema["components"]["schemas"]["SpendRow"]["properties"]
    assert row["cost"]["type"] == "string" and row["cost"]["format"] == "decimal" and row["cost"]["nullable"] is True
