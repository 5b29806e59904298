"""The what-if calculator's preset and the provider page's same-weights table, each test on its own data (moved
from tests/test_savings.py, whose tests all read one organisation's traffic, built once)."""

from decimal import Decimal

from finops.models import Provider
from finops.whatif.services import offering_upsert

from .whatif_helpers import import_groq_traffic


def test_a_preset_runs_without_any_spend(db, client_as, fiona):
    offering_upsert(provider=Provider.objects.get(slug="moonshot"), model="kimi-k2.6", output_tokens_per_s=Decimal(34))
    page = client_as(fiona).get("/whatif/", {"preset": "coding-copilot"}).content.decode()
    assert "220,000 requests a month" in page
    assert "No offering passes every gate with known figures" in page  # 44.1 s against 3 s
    assert "fails the SLA" in page  # the reason, on its row
    assert "44.1 s" in page


def test_the_provider_page_compares_the_companys_own_price_of_the_same_weights_across_providers(
    support_agent, search_ranker, client_as, fiona
):
    import_groq_traffic(support_agent, key="abcd")
    import_groq_traffic(search_ranker, key="wxyz", provider="cerebras")
    csv = client_as(fiona).get("/providers/groq/", {"csv": "same_weights"}).content.decode().splitlines()
    assert csv[0] == "Family,Provider,Models,Spend,Unpriced tokens,Priced tokens,USD/M tokens,Currency"
    # Σcost ÷ Σtokens × 10⁶: Cerebras 0.075 / 180,000 tokens, Groq 0.0405 / 180,000 tokens
    assert csv[1:] == [
        "gpt-oss-120b,Cerebras,gpt-oss-120b,0.075,0,180000,0.416667,USD",
        "gpt-oss-120b,Groq,gpt-oss-120b,0.0405,0,180000,0.225,USD",
    ]
    page = client_as(fiona).get("/providers/groq/").content.decode()
    assert "The same weights on other providers" in page
