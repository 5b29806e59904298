"""`manage.py spend` and GET /api/v1/spend: the same figures, sum over sum, end exclusive, scoped per role."""

import csv
import io
import json
from decimal import Decimal

import pytest
from django.core.management import CommandError, call_command

from finops.models import FxRate, Provider
from ingest.services import usage_file_import
from finops.models import Account

OPENAI = (
    "day,model,input_tokens,cached_input_tokens,cache_write_tokens,output_tokens,requests,cost\n"
    "2026-10-31,gpt-5-mini,500000,0,0,50000,10,0.50\n"  # the last day of October: inside
    "2026-10-01,gpt-5-mini,1000000,200000,0,100000,40,1.00\n"
    "2026-10-02,gpt-5,2000000,0,0,500000,25,\n"  # no cost: estimated from the catalog
    "2026-11-01,gpt-5,9000000,0,0,9000000,99,99.00\n"  # November: outside --end 2026-11-01
)
MOONSHOT = "day,model,input_tokens,output_tokens,cost,currency\n2026-10-05,kimi-k2.6,1000000,1000000,20,CNY\n"
GROQ = "day,model,input_tokens,output_tokens\n2026-10-06,my-private-model,300000,30000\n"  # unpriced


@pytest.fixture
def october(db):
    FxRate.objects.create(day="2026-10-01", currency="CNY", rate=Decimal("0.1389"))
    for slug, text in (("openai", OPENAI), ("moonshot", MOONSHOT), ("groq", GROQ)):
        account = Account.objects.create(name=f"{slug}-main", provider=Provider.objects.get(slug=slug), connector="usage_csv")
        run = usage_file_import(account=account, stream=io.BytesIO(text.encode()), file_name=f"{slug}.csv")
        assert run.status == "succeeded", run.error


def spend(*args) -> str:
    out = io.StringIO()
    call_command("spend", *args, stdout=out)
    return out.getvalue()


def by_group(rows):
    return {row["group"]: row for row in rows}


def test_spend_by_provider_is_october_only_with_exact_decimal_strings(october):
    rows = by_group(json.loads(spend("--start", "2026-10-01", "--end", "2026-11-01", "--by", "provider", "--format", "json")))
    assert set(rows) == {"openai", "moonshot", "groq"}
    openai = rows["openai"]
    # gpt-5 at the catalog's 1.25 / 10 $/M: 2M in + 0.5M out = 2.50 + 5.00 estimated
    assert openai["billed_cost"] == "1.500000" and openai["estimated_cost"] == "7.500000" and openai["cost"] == "9.000000"
    assert openai["input_tokens"] == 3_500_000 and openai["cached_input_tokens"] == 200_000 and openai["output_tokens"] == 650_000
    assert openai["requests"] == 75
    # Σcost / Σ(input + output) × 10⁶ = 9.00 / 4.15M × 10⁶
    assert Decimal(openai["usd_per_mtok"]) == (Decimal("9") / Decimal(4_150_000) * 1_000_000).quantize(Decimal("0.000001"))
    assert rows["moonshot"]["cost"] == "2.778000"  # 20 CNY × 0.1389
    assert rows["groq"]["cost"] == "0.000000" and rows["groq"]["unpriced_tokens"] == 330_000


def test_spend_by_day_uses_iso_days_and_the_same_total(october):
    rows = json.loads(spend("--start", "2026-10-01", "--end", "2026-11-01", "--by", "day", "--format", "json"))
    assert [r["group"] for r in rows] == ["2026-10-01", "2026-10-02", "2026-10-05", "2026-10-06", "2026-10-31"]
    assert sum(Decimal(r["cost"]) for r in rows) == Decimal("11.778")


def test_spend_by_model_and_account_and_csv(october):
    models = by_group(json.loads(spend("--start", "2026-10-01", "--end", "2026-11-01", "--by", "model", "--format", "json")))
    assert set(models) == {"gpt-5-mini", "gpt-5", "kimi-k2.6", "my-private-model"}
    accounts = by_group(json.loads(spend("--start", "2026-10-01", "--end", "2026-11-01", "--by", "account", "--format", "json")))
    assert set(accounts) == {"openai-main", "moonshot-main", "groq-main"}
    table = list(csv.DictReader(io.StringIO(spend("--start", "2026-10-01", "--end", "2026-11-01", "--by", "provider", "--format", "csv"))))
    assert {r["group"]: r["cost"] for r in table}["openai"] == "9.000000"


def test_spend_rejects_an_empty_or_reversed_period(db):
    with pytest.raises(CommandError, match="exclusive"):
        spend("--start", "2026-10-01", "--end", "2026-10-01", "--by", "day")


def test_the_api_gives_the_same_figures_as_the_command(october, client_as, fiona):
    command = json.loads(spend("--start", "2026-10-01", "--end", "2026-11-01", "--by", "provider", "--format", "json"))
    api = client_as(fiona).get("/api/v1/spend", {"start": "2026-10-01", "end": "2026-11-01", "group_by": "provider"})
    assert api.status_code == 200 and api.json() == command


def test_the_api_explains_a_bad_query(client_as, fiona):
    response = client_as(fiona).get("/api/v1/spend", {"start": "2026-10-01", "group_by": "colour"})
    assert response.status_code == 400
    assert set(response.json()) == {"end", "group_by"}


def test_a_member_sees_no_spend_outside_their_teams(october, client_as, sam):
    # Nothing is attributed to a team yet, so a team member's spend is empty, not the whole company's.
    api = client_as(sam).get("/api/v1/spend", {"start": "2026-10-01", "end": "2026-11-01", "group_by": "provider"})
    assert api.json() == []
