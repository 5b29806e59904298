"""The provider page reconciles the bill against list prices, so a wrong price or a missing line shows."""

import datetime as dt
import io
from decimal import Decimal

import pytest
from django.urls import reverse

from ingest.services import usage_file_import


@pytest.fixture(autouse=True)
def _frozen(time_machine):
    time_machine.move_to(dt.datetime(2026, 11, 22, 12, tzinfo=dt.UTC))


def test_billed_usage_is_compared_with_the_catalog_price_of_its_day(client_as, fiona, openai_account):
    # gpt-5-mini lists at $0.25/M in and $2/M out: 2M in + 1M out = $2.50 at list; billed $2.00, a 20 % discount.
    csv = (
        "day,model,input_tokens,output_tokens,cost\n"
        "2026-11-20,gpt-5-mini,2000000,1000000,2.00\n"
        "2026-11-21,my-ft,10,10,1.00\n"
    )
    usage_file_import(account=openai_account, stream=io.BytesIO(csv.encode()), file_name="u.csv")
    context = client_as(fiona).get(reverse("provider-detail", args=["openai"])).context
    by_model = {r["model"]: r for r in context["tables"]["list_price"]}
    assert by_model["gpt-5-mini"]["at_list"] == Decimal("2.5")
    assert by_model["gpt-5-mini"]["variance"] == Decimal("-0.2")
    assert by_model["my-ft"]["variance"] is None and by_model["my-ft"]["unpriced_billed"] == Decimal(1)
    days = {r["day"].isoformat(): r for r in context["tables"]["reconciliation"]}
    assert days["2026-11-20"]["billed"] == Decimal(2) and days["2026-11-21"]["unpriced_billed"] == Decimal(1)
    download = client_as(fiona).get(reverse("provider-detail", args=["openai"]), {"csv": "reconciliation"})
    assert b"2026-11-20" in download.content
