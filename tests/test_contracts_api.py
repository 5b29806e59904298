"""Contracts in the API (issue 11): list, detail and renewals with their figures as decimal strings, for admins and
finance (members 404); writes by admins only through the service (400s name every field); the FOCUS 1.3 Contract
Commitment CSV, from the endpoint and the command alike. Contracts created on an organisation without any:
tests/test_contracts_api_create.py.

The clock is frozen on 2026-11-20 15:00 UTC; openai-prod spent $10 a day on 2026-11-10 … 2026-11-19 (and $7 today).
The organisation, its spend and its three contracts are built once for the module (tests/data_once.py).
"""

import csv
import datetime as dt
import io
from decimal import Decimal
from types import SimpleNamespace

import pytest
import time_machine
from django.core.management import call_command

from finops.contracts.focus_export import HEADER
from finops.contracts.services import contract_create, contract_renew
from finops.models import Contract, ContractTerm, User
from ingest.services import usage_file_import
from tests.conftest import make_openai_account, make_support_team, make_user
from tests.data_once import built_once, fresh, world_rows

NOW = dt.datetime(2026, 11, 20, 15, 0, tzinfo=dt.UTC)
JSON = {"content_type": "application/json"}
FOCUS_COLUMNS = [
    "ContractCommitmentId",
    "ContractCommitmentType",
    "ContractCommitmentCategory",
    "ContractCommitmentCost",
    "ContractCommitmentQuantity",
    "ContractCommitmentUnit",
    "ContractCommitmentDescription",
    "ContractCommitmentPeriodStart",
    "ContractCommitmentPeriodEnd",
    "ContractId",
    "ContractPeriodStart",
    "ContractPeriodEnd",
    "BillingCurrency",
]


@pytest.fixture(autouse=True)
def frozen():
    with time_machine.travel(NOW, tick=False):
        yield


def _build_spend(openai_account):
    days = [dt.date(2026, 11, 10) + dt.timedelta(days=i) for i in range(10)]
    text = "day,model,input_tokens,output_tokens,cost\n" + "".join(
        f"{d.isoformat()},gpt-5-mini,1000,100,10\n" for d in days
    )
    text += "2026-11-20,gpt-5-mini,1000,100,7\n"
    run = usage_file_import(account=openai_account, stream=io.BytesIO(text.encode()), file_name="u.csv")
    assert run.status == "succeeded", run.error


def _build_contracts(ada):
    """Three auto-renewing or not contracts: notice deadlines 2027-01-01 − 60 d, 2026-12-31 − 30 d, and none ahead."""
    return {
        "openai": contract_create(
            by=ada,
            name="OpenAI 2026",
            provider="openai",
            accounts=["openai-prod"],
            start="2026-01-01",
            end="2027-01-01",
            commitment="1000",
            commitment_basis="monthly",
            discount_pct="12",
            auto_renew=True,
            notice_days=60,
            owner="cfo@example.com",
        ),
        "groq": contract_create(
            by=ada,
            name="Groq",
            provider="groq",
            start="2026-01-01",
            end="2026-12-31",
            commitment="5000",
            auto_renew=True,
            notice_days=30,
            currency="EUR",
        ),
        "anthropic": contract_create(
            by=ada,
            name="Anthropic",
            provider="anthropic",
            start="2026-03-15",
            end="2028-03-01",
            commitment="24000",
            commitment_basis="yearly",
        ),
    }


@pytest.fixture(scope="module")
def world(django_db_setup, django_db_blocker):
    """The organisation, openai-prod's spend and the three contracts, built once for the module under the frozen
    clock: every test reads them."""
    with built_once(django_db_blocker), time_machine.travel(NOW, tick=False):
        built = SimpleNamespace(
            ada=make_user("ada", User.Role.ADMIN),
            fiona=make_user("fiona", User.Role.FINANCE),
            sam=make_user("sam", User.Role.MEMBER, team=make_support_team()),
        )
        _build_spend(make_openai_account())
        built.contracts = _build_contracts(built.ada)
        yield built


@pytest.fixture
def contracts(world, db):
    return {name: fresh(contract) for name, contract in world.contracts.items()}


ada, fiona, sam = world_rows("ada", "fiona", "sam")


def test_admins_and_finance_list_contracts_with_their_figures_as_decimal_strings(client_as, ada, fiona, contracts):
    for user in (ada, fiona):
        response = client_as(user).get("/api/v1/contracts")
        assert response.status_code == 200
        found = {c["name"]: c for c in response.json()}
        assert set(found) == {"OpenAI 2026", "Groq", "Anthropic"}
    openai = found["OpenAI 2026"]
    assert (openai["provider"], openai["accounts"], openai["commitment_basis"]) == (
        "openai",
        ["openai-prod"],
        "monthly",
    )
    assert (openai["commitment"], openai["discount_pct"], openai["prepaid"]) == ("1000.000000", "12.0000", "0.000000")
    assert openai["consumed"] == "107.000000"  # ten days at $10 and today's $7
    assert openai["notice_deadline"] == "2026-11-02" and openai["days_to_notice_deadline"] == -18
    assert openai["status"] == "notice_passed" and openai["status_label"] == "Notice passed"
    for key in ("consumed", "expected_to_date", "projected", "shortfall", "overage"):
        assert isinstance(openai[key], str) and Decimal(openai[key]) >= 0, key
    assert openai["expected_to_date"] == "10633.333333"  # ten months and 19/30 of November committed so far
    assert Decimal(openai["shortfall"]) > Decimal("11000") and openai["overage"] == "0.000000"
    assert found["Groq"]["consumed"] == "0.000000" and found["Groq"]["currency"] == "EUR"
    assert (
        openai["past_terms"] == [] and openai["renewal_baseline"] is None and openai["renewal_advice"] is None
    )  # no spend Aug–Oct


def test_the_detail_answers_one_contract_and_404_for_an_unknown_one(client_as, fiona, contracts):
    client = client_as(fiona)
    body = client.get(f"/api/v1/contracts/{contracts['groq'].pk}").json()
    assert (body["name"], body["commitment"], body["notice_deadline"]) == ("Groq", "5000.000000", "2026-12-01")
    assert client.get("/api/v1/contracts/999999").status_code == 404


def test_members_get_404_on_every_contract_route(client_as, sam, contracts):
    client = client_as(sam)
    pk = contracts["groq"].pk
    for response in (
        client.get("/api/v1/contracts"),
        client.get(f"/api/v1/contracts/{pk}"),
        client.get("/api/v1/contracts/renewals"),
        client.get("/api/v1/contracts/focus.csv"),
        client.post("/api/v1/contracts", {"name": "X"}, **JSON),
        client.patch(f"/api/v1/contracts/{pk}", {"commitment": "1"}, **JSON),
        client.delete(f"/api/v1/contracts/{pk}"),
        client.post(f"/api/v1/contracts/{pk}/renew", {"start": "2026-12-31", "end": "2027-12-31"}, **JSON),
    ):
        assert response.status_code == 404
    assert Contract.objects.get(pk=pk).commitment == Decimal("5000")


def test_renewals_ahead_are_the_auto_renewals_whose_notice_deadline_is_within_the_window_soonest_first(
    client_as, fiona, ada, contracts
):
    contract_create(
        by=ada,
        name="Moonshot",
        provider="moonshot",
        start="2026-06-01",
        end="2027-06-01",
        commitment="100",
        auto_renew=True,
        notice_days=90,
    )
    client = client_as(fiona)
    assert [c["name"] for c in client.get("/api/v1/contracts/renewals").json()] == ["Groq", "Moonshot"]
    assert [c["name"] for c in client.get("/api/v1/contracts/renewals", {"within_days": 30}).json()] == ["Groq"]
    assert [c["name"] for c in client.get("/api/v1/contracts/renewals", {"within_days": 11}).json()] == []
    body = client.get("/api/v1/contracts/renewals").json()[0]
    assert body["days_to_notice_deadline"] == 11 and body["commitment"] == "5000.000000"


@pytest.mark.parametrize("params", [{"within_days": "soon"}, {"within_days": 0}, {"within_days": 99999}, {"days": 30}])
def test_a_bad_renewals_query_is_a_400_naming_the_parameter(client_as, fiona, contracts, params):
    response = client_as(fiona).get("/api/v1/contracts/renewals", params)
    assert response.status_code == 400 and set(response.json()) == set(params)


def test_finance_reads_but_may_not_write(client_as, fiona, contracts):
    client = client_as(fiona)
    pk = contracts["groq"].pk
    assert (
        client.post(
            "/api/v1/contracts",
            {"name": "X", "provider": "groq", "start": "2026-01-01", "end": "2027-01-01", "commitment": "1"},
            **JSON,
        ).status_code
        == 403
    )
    assert client.patch(f"/api/v1/contracts/{pk}", {"commitment": "1"}, **JSON).status_code == 403
    assert client.delete(f"/api/v1/contracts/{pk}").status_code == 403
    assert (
        client.post(f"/api/v1/contracts/{pk}/renew", {"start": "2026-12-31", "end": "2027-12-31"}, **JSON).status_code
        == 403
    )
    assert Contract.objects.count() == 3 and Contract.objects.get(pk=pk).commitment == Decimal("5000")


def test_an_admin_patches_the_fields_given_and_a_bad_patch_names_them(client_as, ada, contracts):
    client = client_as(ada)
    pk = contracts["groq"].pk
    body = client.patch(f"/api/v1/contracts/{pk}", {"commitment": "4500.5", "notes": "Amended."}, **JSON).json()
    assert (body["commitment"], body["notes"], body["end"]) == ("4500.500000", "Amended.", "2026-12-31")
    response = client.patch(
        f"/api/v1/contracts/{pk}", {"notice_days": 400, "provider": "openai", "accounts": ["nope"]}, **JSON
    )
    assert response.status_code == 400 and set(response.json()) == {"notice_days", "accounts"}
    assert Contract.objects.get(pk=pk).notice_days == 30


def test_an_admin_renews_in_place_and_the_old_term_stays_listed(client_as, ada, contracts):
    client = client_as(ada)
    pk = contracts["groq"].pk
    body = client.post(
        f"/api/v1/contracts/{pk}/renew", {"start": "2026-12-31", "end": "2027-12-31", "commitment": "6000"}, **JSON
    ).json()
    assert (body["start"], body["end"], body["commitment"]) == ("2026-12-31", "2027-12-31", "6000.000000")
    assert body["past_terms"] == [
        {
            "start": "2026-01-01",
            "end": "2026-12-31",
            "commitment": "5000.000000",
            "commitment_basis": "term",
            "prepaid": "0.000000",
        }
    ]
    early = client.post(f"/api/v1/contracts/{pk}/renew", {"start": "2027-06-01", "end": "2028-06-01"}, **JSON)
    assert early.status_code == 400 and list(early.json()) == ["start"]
    assert ContractTerm.objects.count() == 1


def test_an_admin_deletes_a_contract(client_as, ada, contracts):
    assert client_as(ada).delete(f"/api/v1/contracts/{contracts['groq'].pk}").status_code == 204
    assert not Contract.objects.filter(name="Groq").exists()


def focus_rows(text: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(text)))


def test_the_focus_csv_has_the_contract_commitment_columns_and_a_row_per_commitment_period(
    client_as, fiona, ada, contracts
):
    contract_renew(contract=contracts["groq"], by=ada, start="2026-12-31", end="2027-12-31", commitment="6000")
    response = client_as(fiona).get("/api/v1/contracts/focus.csv")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    text = response.content.decode()
    assert text.splitlines()[0].split(",") == FOCUS_COLUMNS == HEADER
    rows = focus_rows(text)
    by_contract = {}
    for row in rows:
        by_contract.setdefault(row["ContractId"], []).append(row)

    monthly = by_contract[str(contracts["openai"].pk)]
    assert len(monthly) == 12 and {r["ContractCommitmentType"] for r in monthly} == {"monthly"}
    assert monthly[1]["ContractCommitmentId"] == f"{contracts['openai'].pk}:2026-02-01"
    assert (monthly[1]["ContractCommitmentPeriodStart"], monthly[1]["ContractCommitmentPeriodEnd"]) == (
        "2026-02-01T00:00:00Z",
        "2026-03-01T00:00:00Z",
    )
    assert (monthly[1]["ContractPeriodStart"], monthly[1]["ContractPeriodEnd"]) == (
        "2026-01-01T00:00:00Z",
        "2027-01-01T00:00:00Z",
    )
    assert {r["ContractCommitmentCost"] for r in monthly} == {"1000.000000"}
    assert all(r["ContractCommitmentCategory"] == "Spend" and r["BillingCurrency"] == "USD" for r in monthly)
    assert all(r["ContractCommitmentQuantity"] == "" and r["ContractCommitmentUnit"] == "" for r in monthly)
    assert (
        monthly[0]["ContractCommitmentDescription"]
        == "OpenAI 2026: Per month (a month's unused part is lost), commitment 1000.000000 USD"
    )

    yearly = by_contract[str(contracts["anthropic"].pk)]
    assert [
        (r["ContractCommitmentPeriodStart"][:10], r["ContractCommitmentPeriodEnd"][:10], r["ContractCommitmentCost"])
        for r in yearly
    ] == [
        ("2026-03-15", "2027-03-15", "24000.000000"),
        ("2027-03-15", "2028-03-01", "23081.967213"),
    ]  # 352 of 366 days: pro rata
    assert {r["ContractCommitmentType"] for r in yearly} == {"yearly"}

    term = by_contract[str(contracts["groq"].pk)]  # the archived term first, then the renewed one
    assert [
        (r["ContractPeriodStart"][:10], r["ContractCommitmentCost"], r["BillingCurrency"], r["ContractCommitmentType"])
        for r in term
    ] == [("2026-01-01", "5000.000000", "EUR", "term"), ("2026-12-31", "6000.000000", "EUR", "term")]
    assert len({r["ContractCommitmentId"] for r in rows}) == len(rows) == 12 + 2 + 2


def test_the_command_writes_the_same_csv_as_the_endpoint(client_as, fiona, contracts, tmp_path):
    out = tmp_path / "commitments.csv"
    call_command("export_contracts_focus", "--out", str(out), stderr=io.StringIO())
    assert out.read_text() == client_as(fiona).get("/api/v1/contracts/focus.csv").content.decode()
    printed = io.StringIO()
    call_command("export_contracts_focus", stdout=printed)
    assert printed.getvalue() == out.read_text() and len(focus_rows(printed.getvalue())) == 12 + 1 + 2


def test_an_anonymous_caller_is_asked_to_sign_in(client, contracts):
    assert client.get("/api/v1/contracts").status_code == 401
    assert client.get("/api/v1/contracts/focus.csv").status_code == 401
