"""The October usage `manage.py spend` and GET /api/v1/spend are tested on (tests/test_spend_report*.py), and the
two ways of asking for the figures."""

import io
from decimal import Decimal

from django.core.management import call_command

from finops.models import Account, FxRate, Provider
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
OCTOBER = {"start": "2026-10-01", "end": "2026-11-01"}
MICRO = Decimal("0.000001")


def october_accounts() -> dict[str, Account]:
    return {
        slug: Account.objects.create(
            name=f"{slug}-main", provider=Provider.objects.get(slug=slug), connector="usage_csv"
        )
        for slug in ("openai", "moonshot", "groq")
    }


def october_import(accounts: dict[str, Account]) -> None:
    FxRate.objects.create(day="2026-10-01", currency="CNY", rate=Decimal("0.1389"))
    for slug, text in (("openai", OPENAI), ("moonshot", MOONSHOT), ("groq", GROQ)):
        run = usage_file_import(account=accounts[slug], stream=io.BytesIO(text.encode()), file_name=f"{slug}.csv")
        assert run.status == "succeeded", run.error


def edge_import() -> None:
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


def spend(*args) -> str:
    out = io.StringIO()
    call_command("spend", *args, stdout=out)
    return out.getvalue()


def by_group(rows):
    return {row["group"]: row for row in rows}


def api(client, **params):
    return client.get("/api/v1/spend", params)
