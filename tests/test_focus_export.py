"""A month's usage as a FOCUS 1.2 CSV (issue 14, docs/focus-export.md): the page download, `manage.py export_focus`
and `GET /api/v1/focus`, on an organisation built through the real import paths (usage CSVs in USD and EUR, a
Groq export without costs, an AWS FOCUS export with a tax and a credit). The demo organisation's last full month:
tests/test_focus_export_demo.py."""

import datetime as dt
from decimal import Decimal
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.db.models import Sum
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from finops.models import Account, CostBasis, UsageLine
from finops.reports import usage_focus
from finops.selectors.spend_report import spend_rows
from finops.services.config import config_apply
from finops.views.period import today_utc
from ingest.services import usage_file_import
from tests.focus_helpers import VALIDATOR_RULES_IGNORED, money_sum, problems, read_csv, validator_failures

FIXTURES = Path(__file__).parent / "fixtures"
MONTH = "2026-03"
MARCH, APRIL = dt.date(2026, 3, 1), dt.date(2026, 4, 1)
CONFIG = """
teams:
  - {name: Support Platform, slug: support, cost_center: CC-410}
  - {name: Search, slug: search, cost_center: CC-520}
workloads:
  - {name: Support agent, slug: support-agent, team: support, latency_profile: realtime}
  - {name: Search ranker, slug: search-ranker, team: search, latency_profile: batch}
accounts:
  - {name: openai-prod, provider: openai, connector: usage_csv}
  - {name: openai-eu, provider: openai, connector: usage_csv}
  - {name: groq-batch, provider: groq, connector: usage_csv}
  - {name: aws-payer, provider: aws-bedrock, connector: focus_file}
prices:
  - {provider: groq, model: gpt-oss-120b, effective_from: 2025-03-01, input_per_mtok: 0.1, output_per_mtok: 0.5, cached_input_per_mtok: 0.05}
fx_rates:
  - {day: 2026-03-01, currency: EUR, rate: 1.08}
contracts:
  - {name: Groq batch, provider: groq, accounts: [groq-batch], start: 2026-01-01, end: 2027-01-01, commitment: "0", discount_pct: "10"}
rules:
  - {workload: support-agent, priority: 10, match: {tag: {team: support}}}
  - {workload: search-ranker, priority: 20, match: {tag: {team: search}}}
  - {workload: search-ranker, priority: 30, match: {tag: {user_team: search}}}
"""
IMPORTS = [
    ("openai-prod", "focus/openai_2026_03.csv"),
    ("openai-eu", "focus/openai_eu_2026_03.csv"),
    ("groq-batch", "focus/groq_2026_03.csv"),
    ("aws-payer", "focus_file/aws_bedrock_focus_1_0.csv"),
]


@pytest.fixture
def organisation(support_team, search_team):
    config_apply(path=Path("focus-test.yaml"), text=CONFIG, environ={})
    for account, fixture in IMPORTS:
        path = FIXTURES / fixture
        with path.open("rb") as stream:
            run = usage_file_import(account=Account.objects.get(name=account), stream=stream, file_name=path.name)
        assert run.status == "succeeded", run.error


def export(month: str = MONTH) -> tuple[list[str], list[dict], str]:
    out = StringIO()
    call_command("export_focus", "--month", month, stdout=out)
    header, rows = read_csv(out.getvalue())
    return header, rows, out.getvalue()


def month_spend() -> dict:
    (row,) = spend_rows(start=MARCH, end=APRIL, by="month")
    return row


def test_the_export_has_every_focus_1_2_column_with_the_types_and_values_the_specification_allows(organisation):
    header, rows, _ = export()
    assert problems(header, rows) == []
    assert header[:57] == usage_focus.FOCUS_COLUMNS and len(usage_focus.FOCUS_COLUMNS) == 57
    assert {row["ChargeCategory"] for row in rows} == {"Usage", "Tax", "Credit"}
    assert {row["x_CostBasis"] for row in rows} == {"billed", "estimated", "unpriced"}


def rows_of(rows: list[dict], line: UsageLine) -> list[dict]:
    return [row for row in rows if row["x_UsageLineId"] == str(line.id)]


def line_of(model: str, day: str) -> UsageLine:
    return UsageLine.objects.get(model=model, period_start=f"{day}T00:00:00Z")


def test_each_line_whose_period_starts_in_the_month_is_a_row_per_token_class(organisation):
    _, rows, _ = export()
    lines = UsageLine.objects.filter(period_start__gte="2026-03-01T00:00:00Z", period_start__lt="2026-04-01T00:00:00Z")
    assert {int(row["x_UsageLineId"]) for row in rows} == set(lines.values_list("id", flat=True))
    for line in lines:
        classes = [line.input_tokens, line.cached_input_tokens, line.cache_write_tokens, line.output_tokens]
        assert len(rows_of(rows, line)) == max(1, sum(1 for n in classes if n)), line.model_raw
    assert UsageLine.objects.filter(period_start__date__in=[dt.date(2026, 2, 28), APRIL]).count() == 2  # left out
    starts = [row["ChargePeriodStart"] for row in rows]
    assert starts == sorted(starts) and all(s.startswith(MONTH) for s in starts)


def test_billed_cost_adds_up_to_the_months_billed_spend_and_effective_cost_to_its_total(organisation):
    _, rows, _ = export()
    spend = month_spend()
    assert money_sum(rows, "x_ReportingBilledCost") == spend["billed_cost"]
    assert money_sum(rows, "x_ReportingEffectiveCost") == spend["cost"] == spend["billed_cost"] + spend["estimated_cost"]
    month = UsageLine.objects.filter(period_start__date__gte=MARCH, period_start__date__lt=APRIL)
    for currency in ("USD", "EUR"):  # in each billing currency, BilledCost is exactly what the lines hold as billed
        billed = month.filter(currency=currency, cost_basis=CostBasis.BILLED).aggregate(s=Sum("cost"))["s"]
        assert money_sum(rows, "BilledCost", BillingCurrency=currency) == billed
    tokens = sum(int(row["ConsumedQuantity"]) for row in rows if row["ConsumedUnit"] == "Tokens")
    assert tokens == spend["priced_tokens"] + spend["unpriced_tokens"]
    assert sum(int(row["x_Requests"]) for row in rows) == spend["requests"]
    for name, column in [("input_tokens", "x_InputTokens"), ("cached_input_tokens", "x_CachedInputTokens"),
                         ("cache_write_tokens", "x_CacheWriteTokens"), ("output_tokens", "x_OutputTokens")]:
        assert sum(int(row[column]) for row in rows) == month.aggregate(s=Sum(name))["s"]


def test_a_line_mixing_token_classes_is_split_by_list_price_and_keeps_its_cost_exactly(organisation):
    _, rows, _ = export()
    line = line_of("gpt-4o", "2026-03-01")  # billed 5.50: 1.0M input, 0.2M cached input, 0.3M output
    parts = rows_of(rows, line)
    assert [(r["SkuMeter"], r["ConsumedQuantity"], r["PricingQuantity"]) for r in parts] == [
        ("Input Tokens", "1000000", "1"), ("Cache Read Input Tokens", "200000", "0.2"), ("Output Tokens", "300000", "0.3")]
    assert sum(Decimal(r["BilledCost"]) for r in parts) == Decimal("5.5") == line.cost
    assert {r["x_CostSplit"] for r in parts} == {"list-price"} and "share of the line's cost" in parts[0]["ChargeDescription"]
    # The catalog's rates: ListCost = ListUnitPrice × PricingQuantity, and the bill is shared in their proportion.
    list_costs = [Decimal(r["ListUnitPrice"]) * Decimal(r["PricingQuantity"]) for r in parts]
    assert [Decimal(r["ListCost"]) for r in parts] == list_costs and sum(list_costs) != line.cost
    for part, at_list in zip(parts, list_costs):
        assert abs(Decimal(part["BilledCost"]) - line.cost * at_list / sum(list_costs)) < Decimal("1e-17")
        assert part["BilledCost"] == part["EffectiveCost"] == part["ContractedCost"] == part["PricingCurrencyEffectiveCost"]
    assert [r["x_Requests"] for r in parts] == ["420", "0", "0"]  # counted once
    assert [(r["x_InputTokens"], r["x_CachedInputTokens"], r["x_OutputTokens"]) for r in parts] == [
        ("1000000", "0", "0"), ("0", "200000", "0"), ("0", "0", "300000")]
    row = parts[0]
    assert (row["ConsumedUnit"], row["PricingUnit"]) == ("Tokens", "1000000 Tokens")
    assert row["SkuId"] == "openai/gpt-4o" and row["x_ModelAsBilled"] == "gpt-4o-2024-08-06"
    assert (row["ProviderName"], row["PublisherName"], row["InvoiceIssuerName"], row["ServiceName"]) == ("OpenAI",) * 4
    assert (row["ServiceCategory"], row["ServiceSubcategory"]) == ("AI and Machine Learning", "Generative AI")
    assert (row["BillingAccountName"], row["SubAccountId"], row["ResourceId"]) == ("openai-prod", "proj_support", "key_support_bot")
    assert (row["BillingPeriodStart"], row["BillingPeriodEnd"]) == ("2026-03-01T00:00:00Z", "2026-04-01T00:00:00Z")
    assert (row["ChargePeriodStart"], row["ChargePeriodEnd"]) == ("2026-03-01T00:00:00Z", "2026-03-02T00:00:00Z")
    assert (row["ChargeFrequency"], row["PricingCategory"]) == ("Usage-Based", "Standard")


def test_a_line_of_one_token_class_is_one_row_with_its_cost_as_billed(organisation):
    _, rows, _ = export()
    (row,) = rows_of(rows, line_of("text-embedding-3-small", "2026-03-31"))
    assert (row["SkuMeter"], row["ConsumedQuantity"], row["BilledCost"], row["x_CostSplit"]) == ("Input Tokens", "5000000", "0.1", "")


def test_a_euro_line_is_billed_in_euros_with_its_reporting_amount_beside_it(organisation):
    _, rows, _ = export()
    parts = rows_of(rows, line_of("gpt-4o", "2026-03-10"))  # 100 EUR: 4M input, 1M output
    assert {r["BillingCurrency"] for r in parts} == {r["PricingCurrency"] for r in parts} == {"EUR"}
    assert sum(Decimal(r["BilledCost"]) for r in parts) == 100
    assert sum(Decimal(r["x_ReportingEffectiveCost"]) for r in parts) == Decimal("108")  # at 1.08 USD per EUR
    # Shared by the catalog's USD prices (their proportion is what counts); no EUR list price, so none is claimed.
    assert [r["x_CostSplit"] for r in parts] == ["list-price"] * 2 and [r["ListUnitPrice"] for r in parts] == ["", ""]
    # gpt-4o lists input at $2.50 and output at $10 per 1M: 4M input and 1M output cost alike (by tokens: 80 / 20).
    assert [r["BilledCost"] for r in parts] == ["50", "50"]
    assert {row["x_ReportingCurrency"] for row in rows} == {"USD"}


def test_estimated_and_unpriced_usage_cost_nothing_billed_and_say_why(organisation):
    _, rows, _ = export()
    line = line_of("gpt-oss-120b", "2026-03-05")
    estimated = rows_of(rows, line)
    assert {r["x_CostBasis"] for r in estimated} == {"estimated"} and len(estimated) == 3
    assert {r["BilledCost"] for r in estimated} == {"0"}
    assert sum(Decimal(r["EffectiveCost"]) for r in estimated) == line.cost > 0
    # Estimated at the catalog price less the Groq contract's 10 %: ListCost is the catalog's, the discount shows.
    assert sum(Decimal(r["ListCost"]) for r in estimated) * Decimal("0.9") == line.cost == Decimal("0.1935")
    for row in estimated:
        assert Decimal(row["ListCost"]) == Decimal(row["ListUnitPrice"]) * Decimal(row["PricingQuantity"])
        assert Decimal(row["ListCost"]) * Decimal("0.9") == Decimal(row["EffectiveCost"]) == Decimal(row["ContractedCost"])
        assert "estimated" in row["ChargeDescription"]
    unpriced = rows_of(rows, line_of("acme-finetune-7b", "2026-03-06"))
    assert [(r["ConsumedQuantity"], r["x_CostSplit"]) for r in unpriced] == [("50000", "tokens"), ("10000", "tokens")]
    for row in unpriced:
        assert (row["BilledCost"], row["EffectiveCost"], row["ListCost"], row["x_ReportingEffectiveCost"]) == ("0", "0", "0", "")
        assert row["x_CostBasis"] == "unpriced" and "no known price" in row["ChargeDescription"]


def test_tags_carry_the_team_the_workload_and_the_lines_own_tags(organisation):
    import json

    _, rows, _ = export()
    row = rows_of(rows, line_of("gpt-4o", "2026-03-01"))[0]
    assert json.loads(row["Tags"]) == {"team": "support", "workload": "support-agent", "cost_center": "CC-410",
                                       "line:team": "support", "env": "prod"}
    tax = next(r for r in rows if r["ChargeCategory"] == "Tax")
    # Unattributed, said so; AWS's own tag on the line is kept.
    assert json.loads(tax["Tags"]) == {"team": None, "workload": None, "x_ServiceCode": "AmazonBedrock"}


def test_taxes_and_credits_are_their_own_charge_categories_without_quantities(organisation):
    _, rows, _ = export()
    tax = next(r for r in rows if r["ChargeCategory"] == "Tax")
    credit = next(r for r in rows if r["ChargeCategory"] == "Credit")
    assert (tax["BilledCost"], credit["BilledCost"], credit["EffectiveCost"]) == ("1.23", "-5", "-5")
    for row in (tax, credit):
        assert row["ConsumedQuantity"] == row["PricingQuantity"] == row["PricingUnit"] == row["SkuId"] == ""
        assert row["ChargeFrequency"] == "One-Time"
        assert row["ProviderName"] == "AWS Bedrock"
    # A usage line without tokens (the AWS export's EC2 meter) counts its requests, not tokens of no kind.
    (ec2,) = [r for r in rows if r["x_ModelAsBilled"] == "USE1-BoxUsage:m5.large"]
    assert (ec2["ConsumedQuantity"], ec2["ConsumedUnit"], ec2["PricingUnit"], ec2["SkuMeter"]) == ("0", "Requests", "Requests", "")


def test_cells_a_spreadsheet_would_run_as_formulas_are_neutralised(organisation):
    _, rows, text = export()
    (row,) = [r for r in rows if r["x_Model"] == "text-embedding-3-small"]
    assert row["SubAccountId"] == "'-proj_labs" and row["ResourceId"].startswith("'=HYPERLINK(")
    assert "\n=" not in text and ",=" not in text and ",-proj" not in text


def test_a_month_without_usage_is_the_header_alone_and_a_month_not_begun_is_refused(organisation, tmp_path):
    header, rows, text = export("2025-06")
    assert (header, rows) == (usage_focus.HEADER, [])
    assert text == ",".join(usage_focus.HEADER) + "\n"
    following = (today_utc().replace(day=1) + dt.timedelta(days=32)).strftime("%Y-%m")
    with pytest.raises(CommandError, match=f"{following} has not begun yet"):
        call_command("export_focus", "--month", following)
    with pytest.raises(CommandError, match="is not a month: give it as YYYY-MM"):
        call_command("export_focus", "--month", "2026-13")
    call_command("export_focus", "--month", today_utc().strftime("%Y-%m"), stdout=StringIO())  # the month so far


def test_the_command_writes_the_same_file_to_output_as_to_stdout(organisation, tmp_path):
    target, err = tmp_path / "march.csv", StringIO()
    call_command("export_focus", "--month", MONTH, "--output", str(target), stderr=err)
    assert target.read_text() == export()[2]
    lines = UsageLine.objects.filter(period_start__date__gte=MARCH, period_start__date__lt=APRIL).count()
    assert f"{lines} usage lines of 2026-03 written to {target}" in err.getvalue()


def _body(response) -> str:
    assert response.streaming, "the export is streamed, never built in memory"
    return b"".join(response.streaming_content).decode()


def test_admins_and_finance_download_the_month_from_the_reports_page_members_get_404(organisation, ada, fiona, sam, client_as):
    url = reverse("report-focus", args=[MONTH])
    assert url == f"/reports/{MONTH}/focus.csv"
    for user in (ada, fiona):
        response = client_as(user).get(url)
        assert response.status_code == 200 and response["Content-Type"] == "text/csv; charset=utf-8"
        assert response["Content-Disposition"] == 'attachment; filename="usage-2026-03-focus-1.2.csv"'
        assert _body(response) == export()[2]
    assert client_as(sam).get(url).status_code == 404
    anonymous = Client().get(url)
    assert anonymous.status_code == 302 and anonymous["Location"].startswith(reverse("login"))
    assert client_as(sam).get(reverse("report-focus", args=["2099-01"])).status_code == 404  # not even the error
    following = (today_utc().replace(day=1) + dt.timedelta(days=32)).strftime("%Y-%m")
    refused = client_as(fiona).get(reverse("report-focus", args=[following]))
    assert refused.status_code == 400 and b"has not begun yet" in refused.content
    assert client_as(fiona).get(reverse("report-focus", args=["march"])).status_code == 400


def test_the_api_streams_the_same_csv_to_admins_and_finance_and_hides_it_from_members(organisation, ada, fiona, sam):
    client = APIClient()
    for user in (ada, fiona):
        client.force_authenticate(user)
        response = client.get("/api/v1/focus", {"month": MONTH}, HTTP_ACCEPT="text/csv")
        assert response.status_code == 200 and response["Content-Type"] == "text/csv; charset=utf-8"
        assert _body(response) == export()[2]
    as_format = client.get("/api/v1/focus", {"month": MONTH, "format": "csv"})
    assert as_format.status_code == 200 and _body(as_format) == export()[2]
    client.force_authenticate(sam)
    assert client.get("/api/v1/focus", {"month": MONTH}).status_code == 404
    client.force_authenticate(None)
    assert client.get("/api/v1/focus", {"month": MONTH}).status_code == 401


def test_the_api_refuses_a_month_not_begun_a_bad_month_and_unknown_parameters_in_json(organisation, fiona):
    client = APIClient()
    client.force_authenticate(fiona)
    following = (today_utc().replace(day=1) + dt.timedelta(days=32)).strftime("%Y-%m")
    for query, field, words in [({"month": following}, "month", "has not begun yet"), ({"month": "2026-3"}, "month", "YYYY-MM"),
                                ({}, "month", "required"), ({"month": MONTH, "team": "search"}, "team", "Unknown parameter"),
                                ({"month": MONTH, "format": "xlsx"}, "format", "Unknown format"),
                                ({"month": [MONTH, "2026-02"]}, "month", "Give one month")]:
        response = client.get("/api/v1/focus", query, HTTP_ACCEPT="text/csv")
        assert response.status_code == 400 and response["Content-Type"] == "application/json"
        assert words in response.json()[field][0]


def test_the_openapi_schema_documents_the_export(organisation, ada):
    client = APIClient()
    client.force_authenticate(ada)
    schema = client.get("/api/schema/", {"format": "json"}).json()
    operation = schema["paths"]["/api/v1/focus"]["get"]
    assert operation["operationId"] == "v1_focus_csv"
    assert "text/csv" in operation["responses"]["200"]["content"]
    assert {p["name"] for p in operation["parameters"]} == {"month", "format"} and "400" in operation["responses"]
    assert "BilledCost" in operation["description"] and "x_CostBasis" in operation["description"]


def test_the_finops_foundations_validator_finds_nothing_but_its_pre_1_2_rules(organisation, tmp_path):
    target = tmp_path / "march.csv"
    call_command("export_focus", "--month", MONTH, "--output", str(target), stderr=StringIO())
    failures = validator_failures(target, tmp_path)
    assert set(failures) <= set(VALIDATOR_RULES_IGNORED), failures


def test_a_focus_reader_imports_the_export_back_with_every_billed_amount_and_token(organisation, tmp_path):
    """This product's own FOCUS importer (built to read AWS, Azure and GCP exports) reads the file as one more
    provider export: the rows' billed amounts and tokens, by class, come back exactly."""
    target = tmp_path / "march.csv"
    call_command("export_focus", "--month", MONTH, "--output", str(target), stderr=StringIO())
    _, rows = read_csv(target.read_text())
    reader = Account.objects.create(name="focus-reader", provider=Account.objects.get(name="openai-prod").provider,
                                    connector="focus_file")
    with target.open("rb") as stream:
        run = usage_file_import(account=reader, stream=stream, file_name=target.name)
    assert run.status == "succeeded", run.error
    imported = UsageLine.objects.filter(account=reader)
    assert imported.count() == len(rows)
    for currency in ("USD", "EUR"):
        assert imported.filter(currency=currency).aggregate(s=Sum("cost"))["s"] == money_sum(rows, "BilledCost", BillingCurrency=currency)
    month = UsageLine.objects.filter(period_start__date__gte=MARCH, period_start__date__lt=APRIL).exclude(account=reader)
    for name in ("input_tokens", "cached_input_tokens", "cache_write_tokens", "output_tokens"):
        assert imported.aggregate(s=Sum(name))["s"] == month.aggregate(s=Sum(name))["s"], name
    assert set(imported.values_list("charge_category", flat=True)) == {"usage", "tax", "credit"}
