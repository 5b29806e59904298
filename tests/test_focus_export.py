"""A month's usage as a FOCUS 1.2 CSV (issue 14, docs/focus-export.md): the page download, `manage.py export_focus`
and `GET /api/v1/focus`, on an organisation built through the real import paths (usage CSVs in USD and EUR, a
Groq export without costs, an AWS FOCUS export with a tax and a credit). The demo organisation's last full month:
tests/test_focus_export_demo.py."""

import csv
import datetime as dt
import io
from decimal import Decimal
from io import StringIO
from pathlib import Path
from types import SimpleNamespace

import pandas
import pytest
from django.core.management import CommandError, call_command
from django.db.models import Sum
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from finops.config import config_apply
from finops.models import Account, CostBasis, Provider, UsageLine, User
from finops.prices.selectors import PriceBook, class_rates
from finops.reports import usage_focus
from finops.reports.cells import spreadsheet_safe
from finops.spend.selectors.spend_report import spend_rows
from finops.web.period import today_utc
from ingest.services import usage_file_import
from tests.conftest import make_search_team, make_support_team, make_user
from tests.data_once import built_once, world_rows
from tests.focus_helpers import (
    RULES_THAT_MUST_PASS,
    money_sum,
    problems,
    read_csv,
    validator_failures,
    validator_results,
)

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
  - {name: aws-payer, provider: aws-bedrock, connector: focus_file, focus_services_include: [Amazon Elastic Compute
  Cloud]}
prices:
  - {provider: groq, model: gpt-oss-120b, effective_from: 2025-03-01, input_per_mtok: 0.1, output_per_mtok: 0.5,
  cached_input_per_mtok: 0.05}
fx_rates:
  - {day: 2026-03-01, currency: EUR, rate: 1.08}
contracts:
  - {name: Groq batch, provider: groq, accounts: [groq-batch], start: 2026-01-01, end: 2027-01-01, commitment: "0",
  discount_pct: "10"}
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


def _build_organisation():
    config_apply(path=Path("focus-test.yaml"), text=CONFIG, environ={})
    for account, fixture in IMPORTS:
        path = FIXTURES / fixture
        with path.open("rb") as stream:
            run = usage_file_import(account=Account.objects.get(name=account), stream=stream, file_name=path.name)
        assert run.status == "succeeded", run.error


@pytest.fixture(scope="module")
def world(django_db_setup, django_db_blocker):
    """The organisation and its imported month, built once for the module (tests/data_once.py): every test that
    names `organisation` reads it, and what a test imports on top is rolled back after it."""
    with built_once(django_db_blocker):
        support_team = make_support_team()
        make_search_team()
        built = SimpleNamespace(
            ada=make_user("ada", User.Role.ADMIN),
            fiona=make_user("fiona", User.Role.FINANCE),
            sam=make_user("sam", User.Role.MEMBER, team=support_team),
        )
        _build_organisation()
        yield built


@pytest.fixture
def organisation(world, db):
    """The module's organisation is there (built once by `world`)."""


ada, fiona, sam = world_rows("ada", "fiona", "sam")


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


def test_each_line_whose_period_starts_in_the_month_is_one_row(organisation):
    _, rows, _ = export()
    lines = UsageLine.objects.filter(period_start__gte="2026-03-01T00:00:00Z", period_start__lt="2026-04-01T00:00:00Z")
    assert len(rows) == lines.count() > 10
    assert sorted(int(row["x_UsageLineId"]) for row in rows) == sorted(lines.values_list("id", flat=True))
    assert UsageLine.objects.filter(period_start__date__in=[dt.date(2026, 2, 28), APRIL]).count() == 2  # left out
    starts = [row["ChargePeriodStart"] for row in rows]
    assert starts == sorted(starts) and all(s.startswith(MONTH) for s in starts)


def test_billed_cost_adds_up_to_the_months_billed_spend_and_effective_cost_to_its_total(organisation):
    _, rows, _ = export()
    spend = month_spend()
    assert money_sum(rows, "x_ReportingBilledCost") == spend["billed_cost"]
    assert (
        money_sum(rows, "x_ReportingEffectiveCost") == spend["cost"] == spend["billed_cost"] + spend["estimated_cost"]
    )
    month = UsageLine.objects.filter(period_start__date__gte=MARCH, period_start__date__lt=APRIL)
    for currency in ("USD", "EUR"):  # in each billing currency, BilledCost is exactly what the lines hold as billed
        billed = month.filter(currency=currency, cost_basis=CostBasis.BILLED).aggregate(s=Sum("cost"))["s"]
        assert money_sum(rows, "BilledCost", BillingCurrency=currency) == billed
    tokens = sum(int(row["ConsumedQuantity"]) for row in rows if row["ConsumedUnit"] == "Tokens")
    assert tokens == spend["priced_tokens"] + spend["unpriced_tokens"]
    assert sum(int(row["x_Requests"]) for row in rows) == spend["requests"]
    for name, column in [
        ("input_tokens", "x_InputTokens"),
        ("cached_input_tokens", "x_CachedInputTokens"),
        ("cache_write_tokens", "x_CacheWriteTokens"),
        ("output_tokens", "x_OutputTokens"),
    ]:
        assert sum(int(row[column]) for row in rows) == month.aggregate(s=Sum(name))["s"]


def catalog_rates(provider: str, model: str, day: str) -> dict:
    price = PriceBook.for_provider(Provider.objects.get(slug=provider)).price_on(model, dt.date.fromisoformat(day))
    return class_rates(price)


def test_a_line_mixing_token_classes_is_one_row_with_its_cost_as_billed_and_its_classes_beside_it(organisation):
    _, rows, _ = export()
    line = line_of("gpt-4o", "2026-03-01")  # billed 5.50: 1.0M input, 0.2M cached input, 0.3M output
    (row,) = rows_of(rows, line)
    assert (row["ConsumedQuantity"], row["ConsumedUnit"], row["PricingQuantity"], row["PricingUnit"]) == (
        "1500000",
        "Tokens",
        "1.5",
        "1000000 Tokens",
    )
    assert row["SkuMeter"] == "Tokens"  # several classes: the one meter naming the mix
    assert (row["x_InputTokens"], row["x_CachedInputTokens"], row["x_CacheWriteTokens"], row["x_OutputTokens"]) == (
        "1000000",
        "200000",
        "0",
        "300000",
    )
    # The cost exactly as the provider billed it, in every cost column: never apportioned.
    assert Decimal(row["BilledCost"]) == line.cost == Decimal("5.5")
    assert (
        row["BilledCost"]
        == row["EffectiveCost"]
        == row["ContractedCost"]
        == row["PricingCurrencyEffectiveCost"]
        == "5.5"
    )
    assert row["x_ReportingBilledCost"] == row["x_ReportingEffectiveCost"] == "5.5"
    # ListCost: each class at its catalog rate; no one rate prices a mix, so ListUnitPrice is null.
    rates = catalog_rates("openai", "gpt-4o", "2026-03-01")
    at_list = (1_000_000 * rates["input"] + 200_000 * rates["cached_input"] + 300_000 * rates["output"]) / 1_000_000
    assert Decimal(row["ListCost"]) == at_list != line.cost
    assert row["ListUnitPrice"] == row["PricingCurrencyListUnitPrice"] == ""
    assert row["x_Requests"] == "420"
    assert row["ChargeDescription"] == (
        "gpt-4o-2024-08-06: 1,500,000 tokens (1,000,000 input, 200,000 cache read input, "
        "300,000 output), billed by OpenAI"
    )
    assert row["SkuId"] == "openai/gpt-4o" and row["x_ModelAsBilled"] == "gpt-4o-2024-08-06"
    assert (row["ProviderName"], row["PublisherName"], row["InvoiceIssuerName"], row["ServiceName"]) == ("OpenAI",) * 4
    assert (row["ServiceCategory"], row["ServiceSubcategory"]) == ("AI and Machine Learning", "Generative AI")
    assert (row["BillingAccountName"], row["SubAccountId"], row["ResourceId"]) == (
        "openai-prod",
        "proj_support",
        "key_support_bot",
    )
    assert (row["BillingPeriodStart"], row["BillingPeriodEnd"]) == ("2026-03-01T00:00:00Z", "2026-04-01T00:00:00Z")
    assert (row["ChargePeriodStart"], row["ChargePeriodEnd"]) == ("2026-03-01T00:00:00Z", "2026-03-02T00:00:00Z")
    assert (row["ChargeFrequency"], row["PricingCategory"]) == ("Usage-Based", "Standard")


def test_list_unit_price_is_given_only_where_list_cost_is_it_times_the_pricing_quantity(organisation):
    _, rows, _ = export()
    (row,) = rows_of(rows, line_of("text-embedding-3-small", "2026-03-31"))  # one class: input
    assert (row["SkuMeter"], row["ConsumedQuantity"], row["BilledCost"]) == ("Input Tokens", "5000000", "0.1")
    assert Decimal(row["ListUnitPrice"]) == catalog_rates("openai", "text-embedding-3-small", "2026-03-31")["input"]
    priced = [r for r in rows if r["ListUnitPrice"]]
    assert row in priced
    for each in priced:
        assert Decimal(each["ListCost"]) == Decimal(each["ListUnitPrice"]) * Decimal(each["PricingQuantity"])
        assert each["SkuMeter"] != "Tokens" and each["PricingCurrencyListUnitPrice"] == each["ListUnitPrice"]


def test_a_euro_line_is_billed_in_euros_with_its_reporting_amount_beside_it(organisation):
    _, rows, _ = export()
    (row,) = rows_of(rows, line_of("gpt-4o", "2026-03-10"))  # 100 EUR: 4M input, 1M output
    assert row["BillingCurrency"] == row["PricingCurrency"] == "EUR"
    assert (row["BilledCost"], row["x_ReportingEffectiveCost"]) == ("100", "108")  # at 1.08 USD per EUR
    # The catalog prices gpt-4o in USD only: no EUR list price is claimed, ListCost is the cost as charged.
    assert (row["ListUnitPrice"], row["ListCost"]) == ("", "100")
    assert (row["x_InputTokens"], row["x_OutputTokens"], row["ConsumedQuantity"]) == ("4000000", "1000000", "5000000")
    assert {row["x_ReportingCurrency"] for row in rows} == {"USD"}


def test_estimated_and_unpriced_usage_cost_nothing_billed_and_say_why(organisation):
    _, rows, _ = export()
    line = line_of("gpt-oss-120b", "2026-03-05")
    (estimated,) = rows_of(rows, line)
    assert (estimated["x_CostBasis"], estimated["BilledCost"], estimated["x_ReportingBilledCost"]) == (
        "estimated",
        "0",
        "0",
    )
    assert Decimal(estimated["EffectiveCost"]) == Decimal(estimated["ContractedCost"]) == line.cost == Decimal("0.1935")
    # Estimated at the catalog price less the Groq contract's 10 %: ListCost is the catalog's, the discount shows.
    assert Decimal(estimated["ListCost"]) * Decimal("0.9") == line.cost
    assert estimated["ListUnitPrice"] == "" and estimated["ConsumedQuantity"] == "1250000"
    assert "estimated" in estimated["ChargeDescription"]
    (unpriced,) = rows_of(rows, line_of("acme-finetune-7b", "2026-03-06"))
    assert (unpriced["ConsumedQuantity"], unpriced["x_InputTokens"], unpriced["x_OutputTokens"]) == (
        "60000",
        "50000",
        "10000",
    )
    assert (
        unpriced["BilledCost"],
        unpriced["EffectiveCost"],
        unpriced["ListCost"],
        unpriced["x_ReportingEffectiveCost"],
    ) == ("0", "0", "0", "")
    assert unpriced["x_CostBasis"] == "unpriced" and "no known price" in unpriced["ChargeDescription"]


def test_tags_carry_the_team_the_workload_and_the_lines_own_tags(organisation):
    import json

    _, rows, _ = export()
    (row,) = rows_of(rows, line_of("gpt-4o", "2026-03-01"))
    assert json.loads(row["Tags"]) == {
        "team": "support",
        "workload": "support-agent",
        "cost_center": "CC-410",
        "line:team": "support",
        "env": "prod",
    }
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
        # FOCUS 1.2: PricingCurrency and PricingCurrencyEffectiveCost are never null, a tax's and a credit's too.
        assert (row["PricingCurrency"], row["PricingCurrencyEffectiveCost"]) == (
            row["BillingCurrency"],
            row["EffectiveCost"],
        )
    # A usage line without tokens (the AWS export's EC2 meter, which the account includes; a line without a model)
    # counts its requests, not tokens of no kind; with no model it has no SkuId, so no SkuMeter either (FOCUS
    # SkuMeter-C-003-C and -004-C); a request-only line with a model has both (SkuMeter-C-005-C, the validator test).
    (ec2,) = [
        r
        for r in rows
        if r["ChargeCategory"] == "Usage" and r["ProviderName"] == "AWS Bedrock" and r["x_ModelAsBilled"] == ""
    ]
    assert (ec2["ConsumedQuantity"], ec2["ConsumedUnit"], ec2["PricingUnit"]) == ("0", "Requests", "Requests")
    assert ec2["SkuId"] == ec2["SkuMeter"] == ""


def test_cells_a_spreadsheet_would_run_as_formulas_are_neutralised(organisation):
    _, rows, text = export()
    (row,) = [r for r in rows if r["x_Model"] == "text-embedding-3-small"]
    assert row["SubAccountId"] == "'-proj_labs" and row["ResourceId"].startswith("'=HYPERLINK(")
    assert "\n=" not in text and ",=" not in text and ",-proj" not in text
    # The rows are joined by hand for speed: quoted exactly as csv.writer quotes them.
    rewritten = StringIO()
    csv.writer(rewritten, lineterminator="\n").writerows(csv.reader(StringIO(text)))
    assert rewritten.getvalue() == text


@pytest.mark.parametrize(
    "value",
    [
        "plain",
        "a,b",
        'say "hi"',
        "two\nlines",
        "carriage\rreturn",
        "=1+2",
        "-labs",
        '=HYPERLINK("http://x","y")',
        "@sum",
        "-12.50",
        "",
    ],
)
def test_a_text_cell_reads_back_as_the_formula_safe_text(value):
    (cells,) = csv.reader(StringIO(",".join(["1", usage_focus.text_cell(value), "2"]) + "\n"))
    assert cells == ["1", spreadsheet_safe(value), "2"]


def test_a_month_without_usage_is_the_header_alone_and_a_month_not_begun_is_refused(organisation, tmp_path):
    header, rows, text = export("2025-06")
    assert (header, rows) == (usage_focus.HEADER, [])
    assert text == ",".join(usage_focus.HEADER) + "\n"
    following = (today_utc().replace(day=1) + dt.timedelta(days=32)).strftime("%Y-%m")
    with pytest.raises(CommandError, match="has not begun"):
        call_command("export_focus", "--month", following)
    with pytest.raises(CommandError, match="Unknown month .*: use YYYY-MM"):
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


def test_admins_and_finance_download_the_month_from_the_reports_page_members_get_404(
    organisation, ada, fiona, sam, client_as
):
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
    assert refused.status_code == 400 and b"has not begun" in refused.content
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
    for query, field, words in [
        ({"month": following}, "month", "has not begun"),
        ({"month": "2026-3"}, "month", "YYYY-MM"),
        ({}, "month", "required"),
        ({"month": MONTH, "team": "search"}, "team", "Unknown parameter"),
        ({"month": MONTH, "format": "xlsx"}, "format", "Unknown format"),
        ({"month": [MONTH, "2026-02"]}, "month", "Give one month"),
    ]:
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


@pytest.mark.slow  # left out of make test-fast (tests/conftest.py says why)
def test_the_finops_foundations_validator_passes_the_export_at_focus_1_2(organisation, tmp_path):
    target = tmp_path / "march.csv"
    call_command("export_focus", "--month", MONTH, "--output", str(target), stderr=StringIO())
    results = validator_results(target)
    assert validator_failures(results) == {}
    for rule in RULES_THAT_MUST_PASS:  # the Tax and Credit rows included (PricingCurrency…)
        assert results[rule].status == "PASS", (rule, results[rule])
    # No source here names an invoice: InvoiceId is null on every row, as FOCUS allows for charges no invoice
    # carries; the validator, checking it on every row, counts them all (tests/focus_helpers.py).
    _, rows = read_csv(target.read_text())
    assert results["InvoiceId-C-005-C"].violations == len(rows) and not any(row["InvoiceId"] for row in rows)
    assert results["InvoiceId-C-004-C"].status == "PASS"


def test_a_focus_files_invoice_id_is_carried_to_the_export(organisation):
    """A cloud's FOCUS export names the invoice of each billed row once it is issued: imported, the id is kept on
    the line and exported as InvoiceId, row by row."""
    text = (FIXTURES / "focus_file/aws_bedrock_focus_1_0.csv").read_text()
    header, *lines = text.splitlines()
    invoiced = (
        "\n".join(
            [
                header + ",InvoiceId",
                *(f"{line},{'' if n % 2 else 'EUINUS26-033104'}" for n, line in enumerate(lines) if line),
            ]
        )
        + "\n"
    )
    run = usage_file_import(
        account=Account.objects.get(name="aws-payer"),
        stream=io.BytesIO(invoiced.encode()),
        file_name="aws-invoiced.csv",
    )
    assert run.status == "succeeded", run.error
    stored = UsageLine.objects.filter(account__name="aws-payer")
    assert set(stored.values_list("invoice_id", flat=True)) == {"EUINUS26-033104", ""}
    _, rows, _ = export()
    by_line = {int(row["x_UsageLineId"]): row["InvoiceId"] for row in rows}
    for line_id, invoice_id in stored.filter(
        period_start__gte="2026-03-01T00:00:00Z", period_start__lt="2026-04-01T00:00:00Z"
    ).values_list("id", "invoice_id"):
        assert by_line[line_id] == invoice_id
    assert sum(1 for row in rows if row["InvoiceId"] == "EUINUS26-033104") > 0


def test_a_generic_reader_summing_the_file_by_service_gets_the_spend_selectors_totals(organisation, tmp_path):
    """What another FinOps tool does with the file: read it with pandas and sum the costs and the consumed
    quantity by ServiceName (and currency). Every figure is the selectors' for the month, exactly."""
    target = tmp_path / "march.csv"
    call_command("export_focus", "--month", MONTH, "--output", str(target), stderr=StringIO())
    money = ("BilledCost", "EffectiveCost", "x_ReportingBilledCost", "x_ReportingEffectiveCost")  # exact, as Decimal
    frame = pandas.read_csv(
        target,
        keep_default_na=False,
        usecols=[*money, "ConsumedQuantity", "ConsumedUnit", "ServiceName", "BillingCurrency"],
        converters={
            **{name: lambda cell: Decimal(cell or 0) for name in money},
            "ConsumedQuantity": lambda cell: int(cell or 0),
        },
    )
    tokens = frame[frame["ConsumedUnit"] == "Tokens"]
    consumed = tokens.groupby("ServiceName")["ConsumedQuantity"].sum().to_dict()
    by_service = frame.groupby("ServiceName")[["x_ReportingBilledCost", "x_ReportingEffectiveCost"]].agg(
        lambda cells: sum(cells, Decimal(0))
    )
    by_provider = {
        Provider.objects.get(slug=row["group"]).name: row for row in spend_rows(start=MARCH, end=APRIL, by="provider")
    }
    assert set(by_service.index) == set(by_provider) == {"OpenAI", "Groq", "AWS Bedrock"}
    for provider, spend in by_provider.items():
        assert by_service.loc[provider, "x_ReportingBilledCost"] == (spend["billed_cost"] or 0), provider
        assert by_service.loc[provider, "x_ReportingEffectiveCost"] == (spend["cost"] or 0), provider
        assert consumed.get(provider, 0) == spend["priced_tokens"] + spend["unpriced_tokens"], provider
    month = UsageLine.objects.filter(period_start__date__gte=MARCH, period_start__date__lt=APRIL)
    in_currency = frame.groupby(["ServiceName", "BillingCurrency"])[["BilledCost", "EffectiveCost"]].agg(
        lambda cells: sum(cells, Decimal(0))
    )
    for (provider, currency), sums in in_currency.iterrows():  # the lines' own amounts, as billed or estimated
        lines = month.filter(provider__name=provider, currency=currency)
        assert sums["BilledCost"] == (lines.filter(cost_basis=CostBasis.BILLED).aggregate(s=Sum("cost"))["s"] or 0)
        assert sums["EffectiveCost"] == (
            lines.exclude(cost_basis=CostBasis.UNPRICED).aggregate(s=Sum("cost"))["s"] or 0
        )


@pytest.mark.parametrize("count", [0, 1, 999_999, 1_000_000, 1_500_000, 1_234_567_891, 10**19 - 1])
def test_the_pricing_quantity_of_tokens_is_their_count_in_millions_exactly(count):
    assert usage_focus.per_million(count) == usage_focus.money(Decimal(count).scaleb(-6))


def test_this_products_focus_importer_reads_the_export_back_with_every_amount_and_token_class(organisation, tmp_path):
    """The FOCUS importer (built for AWS, Azure and GCP exports) reads this product's export too: a line mixing
    token classes is one row whose meter says only "Tokens", and its classes come from the x_ token columns —
    never guessed from a description that names several of them."""
    target = tmp_path / "march.csv"
    call_command("export_focus", "--month", MONTH, "--output", str(target), stderr=StringIO())
    _, rows = read_csv(target.read_text())
    assert any(row["SkuMeter"] == "Tokens" for row in rows)  # mixed lines are in the file
    reader = Account.objects.create(
        name="focus-reader", provider=Account.objects.get(name="openai-prod").provider, connector="focus_file"
    )
    with target.open("rb") as stream:
        run = usage_file_import(account=reader, stream=stream, file_name=target.name)
    assert run.status == "succeeded", run.error
    imported = UsageLine.objects.filter(account=reader)
    assert imported.count() == len(rows)
    for currency in ("USD", "EUR"):
        assert imported.filter(currency=currency).aggregate(s=Sum("cost"))["s"] == money_sum(
            rows, "BilledCost", BillingCurrency=currency
        )
    month = UsageLine.objects.filter(period_start__date__gte=MARCH, period_start__date__lt=APRIL).exclude(
        account=reader
    )
    for name in ("input_tokens", "cached_input_tokens", "cache_write_tokens", "output_tokens"):
        assert imported.aggregate(s=Sum(name))["s"] == month.aggregate(s=Sum(name))["s"], name


def test_token_columns_that_do_not_add_up_to_the_quantity_are_refused_naming_the_row(organisation, tmp_path):
    target = tmp_path / "march.csv"
    call_command("export_focus", "--month", MONTH, "--output", str(target), stderr=StringIO())
    header, rows = read_csv(target.read_text())
    mixed = next(row for row in rows if row["SkuMeter"] == "Tokens")
    mixed["x_OutputTokens"] = str(int(mixed["x_OutputTokens"]) + 1)
    broken = tmp_path / "broken.csv"
    with broken.open("w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=header)
        writer.writeheader()
        writer.writerows(rows)
    reader = Account.objects.create(
        name="focus-reader", provider=Provider.objects.get(slug="openai"), connector="focus_file"
    )
    with broken.open("rb") as stream:
        run = usage_file_import(account=reader, stream=stream, file_name=broken.name)
    assert run.status == "failed" and "add up to" in run.error and "ConsumedQuantity" in run.error
    assert not UsageLine.objects.filter(account=reader).exists()
