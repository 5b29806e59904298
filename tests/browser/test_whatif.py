"""The what-if calculator in a browser: a preset and a workload with traffic (the demo's shape: gateway-log
traffic on Groq, offerings of its family elsewhere); the cheapest offering meeting the SLA is the highlighted row
and the chart draws; the Savings page ranks it."""

from decimal import Decimal

import pytest

from finops.models import Provider
from finops.whatif.services import offering_upsert
from tests.whatif_helpers import gpt_oss_offerings, import_groq_traffic

from .conftest import signed_in

pytestmark = pytest.mark.browser


def test_the_copilot_preset_highlights_the_fast_offering_over_the_cheap_slow_one(page, fiona):
    # Moonshot's catalog price (0.95/4.00) at 34 tokens/s; Cerebras at 981 tokens/s with entered prices.
    offering_upsert(
        provider=Provider.objects.get(slug="moonshot"),
        model="kimi-k2.6",
        output_tokens_per_s=Decimal(34),
        ttft_seconds=Decimal("1.2"),
    )
    offering_upsert(
        provider=Provider.objects.get(slug="cerebras"),
        model="kimi-k2.6",
        input_per_mtok=Decimal("1.50"),
        output_per_mtok=Decimal("6.00"),
        output_tokens_per_s=Decimal(981),
        ttft_seconds=Decimal("0.3"),
    )
    offering_upsert(
        provider=Provider.objects.get(slug="fireworks"),
        model="kimi-k2.6",
        input_per_mtok=Decimal("0.55"),
        output_per_mtok=Decimal("2.20"),
    )  # no speed: says so
    signed_in(page, "fiona", "/")
    page.click("nav >> text=Savings")
    page.click("main >> text=what-if calculator")
    page.click("[data-preset=coding-copilot]")
    page.wait_for_selector("[data-testid=best-offering]")
    assert page.inner_text("[data-testid=best-offering]") == "Cerebras · Kimi K2.6"  # display names
    highlighted = page.inner_text("table[data-table=whatif] tr[data-highlight]")
    assert "Cerebras" in highlighted and "$3,300.00" in highlighted  # 880 × 1.50 + 330 × 6.00
    fireworks = page.inner_text("table[data-table=whatif] tr:has-text('Fireworks')")
    assert "output tokens/s" in fireworks
    page.wait_for_selector("[data-figure=chart-whatif] .main-svg", timeout=10_000)


def test_a_workload_is_compared_on_its_last_30_days_and_ranked_on_the_savings_page(page, sam, support_agent):
    support_agent.sla_seconds = Decimal(4)
    support_agent.save()
    import_groq_traffic(support_agent)
    gpt_oss_offerings()
    signed_in(page, "sam", "/savings/")  # the navigation's Savings link is followed below
    page.click("main >> text=what-if calculator")
    page.select_option("select[name=workload]", "support-agent")
    page.click("text=Compare")
    page.wait_for_selector("[data-testid=best-offering]")
    assert page.inner_text("[data-testid=best-offering]").endswith("GPT OSS 120B")
    assert "DeepInfra" in page.inner_text("table[data-table=whatif] tr[data-highlight]").replace(
        "Deepinfra", "DeepInfra"
    )
    page.click("nav >> text=Savings")
    assert "less than today" in page.inner_text("[data-testid=headline]")
    assert "Support agent" in page.inner_text("table[data-table=savings]")
