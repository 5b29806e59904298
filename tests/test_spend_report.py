"""`manage.py spend` and GET /api/v1/spend: the same figures, sum over sum, end exclusive, scoped per role,
unknown cost never 0, Explore's filters, months, CSV, and every parameter checked."""

import csv
import datetime as dt
import io
import json
from decimal import Decimal
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from finops.models import Account, AttributionRule, FxRate, Provider
from finops.spend.selectors.spend_report import GROUPS, spend_rows
from ingest.services import usage_file_import

OPENAI = (
    "day,model,input_tokens,cached_input_tokens,cache_write_tokens,output_tokens,requests,cost\n"
    "2026-10-31,gpt-5-mini,500000,0,0,50000,10,0.50\n"  # the last day of October: inside
    "2026-10-01,gpt-5-mini,1000000,200000,0,100000,40,1.00\n"
    "2026-10-02,gpt-5,2000000,0,0,500000,25,\n"  # no cost: estimated from the catalog
    "2026-11-01,gpt-5,9000000,0,0,9000000,99,99.00\n"  # November: outside --end 2026-11-01
)
MOONSHOT = "day,model,input_tokens,output_tokens,cost,currency\n2026-10-05,kimi-k2.6,1000000,1000000,20,CNY\n"
GROQ = "day,model,input_tokens,output_tokens\n2026-10-06,my-private-model,300000,30000\n"  # unpriced
FOCUS_GCP = Path(__file__).parent / "fixtures" / "focus_file" / "gcp_vertex_focus_1_3.csv"
OCTOBER = {"start": "2026-10-01", "end": "2026-11-01"}
MICRO = Decimal("0.000001")


def _accounts() -> dict[str, Account]:
    return {
        slug: Account.objects.create(
            name=f"{slug}-main", provider=Provider.objects.get(slug=slug), connector="usage_csv"
        )
        for slug in ("openai", "moonshot", "groq")
    }


def _import(accounts: dict[str, Account]) -> None:
    FxRate.objects.create(day="2026-10-01", currency="CNY", rate=Decimal("0.1389"))
    for slug, text in (("openai", OPENAI), ("moonshot", MOONSHOT), ("groq", GROQ)):
        run = usage_file_import(account=accounts[slug], stream=io.BytesIO(text.encode()), file_name=f"{slug}.csv")
        assert run.status == "succeeded", run.error


@pytest.fixture
def october(db):
    _import(_accounts())


@pytest.fixture
def attributed_october(support_agent, search_ranker):
    """gpt-5-mini ($1.50 billed) is Support's agent's, Moonshot ($2.778) Search's ranker's; gpt-5 ($7.50
    estimated) and Groq (unpriced) are unattributed. The rules exist before the import, which attributes."""
    accounts = _accounts()
    AttributionRule.objects.create(workload=support_agent, priority=1, model="gpt-5-mini")
    AttributionRule.objects.create(workload=search_ranker, priority=2, account=accounts["moonshot"])
    _import(accounts)


def spend(*args) -> str:
    out = io.StringIO()
    call_command("spend", *args, stdout=out)
    return out.getvalue()


def by_group(rows):
    return {row["group"]: row for row in rows}


def api(client, **params):
    return client.get("/api/v1/spend", params)


# --- the figures ---


def test_spend_by_provider_is_october_only_with_exact_decimal_strings(october):
    rows = by_group(
        json.loads(spend("--start", "2026-10-01", "--end", "2026-11-01", "--by", "provider", "--format", "json"))
    )
    assert set(rows) == {"openai", "moonshot", "groq"}
    openai = rows["openai"]
    # gpt-5 at the catalog's 1.25 / 10 $/M: 2M in + 0.5M out = 2.50 + 5.00 estimated
    assert (
        openai["billed_cost"] == "1.500000" and openai["estimated_cost"] == "7.500000" and openai["cost"] == "9.000000"
    )
    assert (
        openai["input_tokens"] == 3_500_000
        and openai["cached_input_tokens"] == 200_000
        and openai["output_tokens"] == 650_000
    )
    assert openai["requests"] == 75 and openai["currency"] == "USD"
    assert openai["priced_tokens"] == 4_150_000 and openai["unpriced_tokens"] == 0
    # Σcost / Σ(input + output) × 10⁶ = 9.00 / 4.15M × 10⁶
    assert Decimal(openai["usd_per_mtok"]) == (Decimal("9") / Decimal(4_150_000) * 1_000_000).quantize(MICRO)
    assert rows["moonshot"]["cost"] == rows["moonshot"]["billed_cost"] == "2.778000"  # 20 CNY × 0.1389
    assert rows["moonshot"]["estimated_cost"] is None  # none of it is estimated: not "0.000000"


def test_a_group_with_no_priced_usage_has_an_unknown_cost_never_zero(october):
    groq = by_group(
        json.loads(spend("--start", "2026-10-01", "--end", "2026-11-01", "--by", "provider", "--format", "json"))
    )["groq"]
    assert groq["cost"] is None and groq["billed_cost"] is None and groq["estimated_cost"] is None
    assert groq["usd_per_mtok"] is None
    assert groq["priced_tokens"] == 0 and groq["unpriced_tokens"] == 330_000


def test_dollars_per_million_tokens_divide_by_priced_tokens_only(october):
    (month,) = json.loads(spend("--start", "2026-10-01", "--end", "2026-11-01", "--by", "month", "--format", "json"))
    assert month["cost"] == "11.778000"
    assert month["priced_tokens"] == 4_150_000 + 2_000_000 and month["unpriced_tokens"] == 330_000
    # Groq's 330k unpriced tokens would make October look cheaper per token than anything it paid for.
    assert Decimal(month["usd_per_mtok"]) == (Decimal("11.778") / 6_150_000 * 1_000_000).quantize(MICRO)


def test_spend_by_day_uses_iso_days_and_the_same_total(october):
    rows = json.loads(spend("--start", "2026-10-01", "--end", "2026-11-01", "--by", "day", "--format", "json"))
    assert [r["group"] for r in rows] == ["2026-10-01", "2026-10-02", "2026-10-05", "2026-10-06", "2026-10-31"]
    assert by_group(rows)["2026-10-06"]["cost"] is None  # Groq's unpriced day
    assert sum(Decimal(r["cost"]) for r in rows if r["cost"] is not None) == Decimal("11.778")


def test_spend_by_month_labels_utc_calendar_months(october):
    rows = json.loads(spend("--start", "2026-10-05", "--end", "2026-11-02", "--by", "month", "--format", "json"))
    assert [(r["group"], r["label"], r["cost"]) for r in rows] == [
        ("2026-10", "2026-10", "3.278000"),  # Moonshot's 2.778 and the 31st's 0.50; not the 1st, 2nd
        ("2026-11", "2026-11", "99.000000"),
    ]


def test_the_table_shows_a_dash_for_an_unknown_cost(october):
    table = spend("--start", "2026-10-01", "--end", "2026-11-01", "--by", "provider").splitlines()
    groq = next(line for line in table if line.startswith("groq"))
    assert groq.split()[1] == "—" and "0.000000" not in groq


def test_spend_by_model_and_account_and_csv(october):
    models = by_group(
        json.loads(spend("--start", "2026-10-01", "--end", "2026-11-01", "--by", "model", "--format", "json"))
    )
    assert set(models) == {"gpt-5-mini", "gpt-5", "kimi-k2.6", "my-private-model"}
    accounts = by_group(
        json.loads(spend("--start", "2026-10-01", "--end", "2026-11-01", "--by", "account", "--format", "json"))
    )
    assert set(accounts) == {"openai-main", "moonshot-main", "groq-main"}
    table = list(
        csv.DictReader(
            io.StringIO(spend("--start", "2026-10-01", "--end", "2026-11-01", "--by", "provider", "--format", "csv"))
        )
    )
    assert {r["group"]: r["cost"] for r in table} == {"openai": "9.000000", "moonshot": "2.778000", "groq": ""}


def test_spend_rejects_an_empty_or_reversed_period(db):
    with pytest.raises(CommandError, match="exclusive"):
        spend("--start", "2026-10-01", "--end", "2026-10-01", "--by", "day")


def test_the_command_takes_the_same_filters_and_refuses_an_unknown_value(attributed_october):
    rows = json.loads(
        spend("--start", "2026-10-01", "--end", "2026-11-01", "--by", "model", "--team", "support", "--format", "json")
    )
    assert [r["group"] for r in rows] == ["gpt-5-mini"]
    with pytest.raises(CommandError, match="sales"):
        spend("--start", "2026-10-01", "--end", "2026-11-01", "--by", "model", "--team", "sales")


# --- long periods: whole months from the monthly rollup give exactly the daily rollup's figures ---


@pytest.fixture
def priced_outside_unpriced_inside(db):
    """One account with a billed line on 1 October and an unpriced one on 15 October."""
    account = Account.objects.create(name="edge", provider=Provider.objects.get(slug="groq"), connector="usage_csv")
    text = (
        "day,model,input_tokens,output_tokens,cost\n"
        "2026-10-01,llama-x,100,10,4.00\n"
        "2026-10-15,my-private-model,200,20,\n"
    )
    assert (
        usage_file_import(account=account, stream=io.BytesIO(text.encode()), file_name="edge.csv").status == "succeeded"
    )


def test_a_month_minus_its_outside_days_does_not_turn_an_unknown_cost_into_zero(priced_outside_unpriced_inside):
    # October 2–Nov 1 is read as October's monthly row minus 1 October: the $4 nets to 0, yet nothing is priced.
    (row,) = spend_rows(start=dt.date(2026, 10, 2), end=dt.date(2026, 11, 1), by="account", today=dt.date(2026, 11, 20))
    assert (
        row["cost"] is None
        and row["billed_cost"] is None
        and row["unpriced_tokens"] == 220
        and row["priced_tokens"] == 0
    )


@pytest.mark.parametrize(
    "start, end",
    [
        ("2026-10-01", "2026-11-01"),  # a whole month
        ("2026-10-02", "2026-11-01"),  # the month minus its first day
        ("2026-10-02", "2026-10-31"),  # gpt-5-mini's two days both left out: the group is not in the period
        ("2026-09-15", "2026-11-02"),  # a month before, October whole, a day of November
        ("2026-10-06", "2026-10-07"),  # one day
    ],
)
def test_reading_whole_months_gives_the_daily_rollups_figures(october, priced_outside_unpriced_inside, start, end):
    for by in GROUPS:
        for today in (dt.date(2026, 10, 20), dt.date(2026, 12, 31)):  # steers which edge reading is used
            period = {"start": dt.date.fromisoformat(start), "end": dt.date.fromisoformat(end), "by": by}
            assert spend_rows(**period, today=today) == spend_rows(**period, read_months=False), (by, today)


# --- the API: same figures, Explore's filters, every parameter checked ---


def test_the_api_gives_the_same_figures_as_the_command(october, client_as, fiona):
    command = json.loads(spend("--start", "2026-10-01", "--end", "2026-11-01", "--by", "provider", "--format", "json"))
    response = api(client_as(fiona), **OCTOBER, group_by="provider")
    assert response.status_code == 200 and response.json() == command


def test_the_api_explains_a_bad_query(client_as, fiona):
    response = api(client_as(fiona), start="2026-10-01", group_by="colour")
    assert response.status_code == 400
    assert set(response.json()) == {"end", "group_by"}


@pytest.mark.parametrize("unknown", ["teams", "foo", "group"])
def test_a_parameter_the_endpoint_does_not_know_is_refused_by_name(october, client_as, fiona, unknown):
    response = api(client_as(fiona), **OCTOBER, group_by="provider", **{unknown: "x"})
    assert response.status_code == 400
    message = response.json()[unknown][0]
    assert unknown in message and "team" in message and "group_by" in message and "basis" in message


def test_a_parameter_given_twice_is_refused(october, client_as, fiona):
    response = client_as(fiona).get(
        "/api/v1/spend?start=2026-10-01&end=2026-11-01&group_by=model&team=support&team=search"
    )
    assert response.status_code == 400 and "team" in response.json()


def test_an_unknown_format_is_refused_by_name_not_as_a_missing_page(october, client_as, fiona):
    response = api(client_as(fiona), **OCTOBER, group_by="provider", format="xml")
    assert response.status_code == 400 and "xml" in response.json()["format"][0]


def test_each_filter_narrows_the_rows_as_in_explore(attributed_october, client_as, fiona):
    client = client_as(fiona)

    def groups(**filters):
        response = api(client, **OCTOBER, group_by="model", **filters)
        assert response.status_code == 200, response.content
        return {row["group"]: row["cost"] for row in response.json()}

    assert groups(team="support") == {"gpt-5-mini": "1.500000"}
    assert groups(workload="search-ranker") == {"kimi-k2.6": "2.778000"}
    assert groups(team="-") == groups(workload="-") == {"gpt-5": "7.500000", "my-private-model": None}
    assert groups(provider="groq") == {"my-private-model": None}
    assert groups(account="openai-main") == {"gpt-5-mini": "1.500000", "gpt-5": "7.500000"}
    assert groups(model="gpt-5") == {"gpt-5": "7.500000"}
    assert groups(basis="estimated") == {"gpt-5": "7.500000"}
    assert groups(basis="unpriced") == {"my-private-model": None}
    assert groups(team="", model="") == groups()  # an empty value is no filter, as in Explore


def test_unattributed_groups_are_named_and_last(attributed_october, client_as, fiona):
    rows = api(client_as(fiona), **OCTOBER, group_by="team").json()
    assert [(r["group"], r["label"]) for r in rows] == [
        ("search", "search"),
        ("support", "support"),
        (None, "Unattributed"),
    ]
    assert rows[-1]["cost"] == "7.500000" and rows[-1]["unpriced_tokens"] == 330_000


@pytest.mark.parametrize(
    "name, value",
    [
        ("team", "sales"),
        ("workload", "nope"),
        ("provider", "acme"),
        ("account", "nobody"),
        ("model", "gpt-0"),
        ("basis", "guessed"),
    ],
)
def test_a_filter_value_that_matches_nothing_is_refused(attributed_october, client_as, fiona, name, value):
    response = api(client_as(fiona), **OCTOBER, group_by="provider", **{name: value})
    assert response.status_code == 400
    assert list(response.json()) == [name] and value in response.json()[name][0]


def test_a_real_team_with_no_spend_is_an_empty_report_not_an_error(october, client_as, fiona, support_team):
    response = api(client_as(fiona), **OCTOBER, group_by="provider", team="support")
    assert response.status_code == 200 and response.json() == []


def test_another_teams_slug_answers_a_team_lead_as_an_unknown_one_does(attributed_october, client_as, sam):
    client = client_as(sam)
    other, unknown = (api(client, **OCTOBER, group_by="model", team=slug) for slug in ("search", "nosuch"))
    assert other.status_code == unknown.status_code == 400
    assert other.json()["team"][0].replace("search", "X") == unknown.json()["team"][0].replace("nosuch", "X")
    assert api(client, **OCTOBER, group_by="model", workload="search-ranker").status_code == 400
    # Unattributed spend is no team's: a lead cannot ask for it either, nor for another team's model or account.
    assert api(client, **OCTOBER, group_by="model", team="-").status_code == 400
    assert api(client, **OCTOBER, group_by="model", model="kimi-k2.6").status_code == 400
    assert api(client, **OCTOBER, group_by="model", account="moonshot-main").status_code == 400


def test_a_team_lead_filters_within_their_own_team(attributed_october, client_as, sam):
    client = client_as(sam)
    assert [r["group"] for r in api(client, **OCTOBER, group_by="team").json()] == ["support"]
    rows = api(client, **OCTOBER, group_by="model", team="support", account="openai-main", model="gpt-5-mini").json()
    assert [(r["group"], r["cost"]) for r in rows] == [("gpt-5-mini", "1.500000")]


def test_a_member_sees_no_spend_outside_their_teams(october, client_as, sam):
    # Nothing is attributed to a team yet, so a team member's spend is empty, not the whole company's.
    response = api(client_as(sam), **OCTOBER, group_by="provider")
    assert response.json() == []


# --- CSV ---


def test_the_api_answers_csv_with_the_same_columns_and_a_currency(attributed_october, client_as, fiona):
    client = client_as(fiona)
    response = api(client, **OCTOBER, group_by="team", format="csv")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    assert response["Content-Disposition"] == 'attachment; filename="spend-team-2026-10-01-2026-11-01.csv"'
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    as_json = api(client, **OCTOBER, group_by="team").json()
    assert list(rows[0]) == list(as_json[0])  # the same columns, in the same order, currency among them
    assert [(r["group"], r["label"], r["currency"], r["cost"]) for r in rows] == [
        ("search", "search", "USD", "2.778000"),
        ("support", "support", "USD", "1.500000"),
        ("", "Unattributed", "USD", "7.500000"),
    ]


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
