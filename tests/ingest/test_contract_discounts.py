"""A contract's negotiated discount lowers the costs the product ESTIMATES from list prices for the accounts and
days it covers, never a billed amount (finops.prices.selectors.ContractDiscounts)."""

import datetime as dt
import io
import logging
from decimal import Decimal

from django.db.models import Sum

from bench.focus_export import write_focus_csv
from finops.models import Account, Contract, ContractTerm, Provider, UsageLine
from ingest.services import usage_file_import

# gpt-5-mini lists at $0.25/M input and $2/M output: 1M input + 100k output is $0.45 at list.
LIST = Decimal("0.45")


def usage(account: Account, day: str, *, cost: str = "", model: str = "gpt-5-mini") -> Decimal:
    """Import one line of `day` (no cost: estimated) and return its stored cost."""
    csv = f"day,model,input_tokens,output_tokens,cost\n{day},{model},1000000,100000,{cost}\n"
    run = usage_file_import(account=account, stream=io.BytesIO(csv.encode()), file_name="usage.csv")
    assert run.status == "succeeded", run.error
    return UsageLine.objects.get(account=account, period_start__date=dt.date.fromisoformat(day)).cost


def contract(provider: str = "openai", **fields) -> Contract:
    values = {
        "name": f"{provider} enterprise",
        "provider": Provider.objects.get(slug=provider),
        "start": dt.date(2026, 1, 1),
        "end": dt.date(2027, 1, 1),
        "commitment": Decimal("100000"),
        "discount_pct": Decimal("20"),
    }
    return Contract.objects.create(**{**values, **fields})


def test_an_estimated_line_of_a_covered_account_costs_the_list_price_less_the_discount(openai_account):
    contract()

    assert usage(openai_account, "2026-03-01") == LIST * Decimal("0.8")
    assert UsageLine.objects.get(account=openai_account).cost_basis == "estimated"


def test_a_billed_line_keeps_the_providers_amount(openai_account):
    contract()

    assert usage(openai_account, "2026-03-01", cost="0.45") == LIST


def test_a_line_outside_the_term_is_estimated_at_list(openai_account):
    contract()

    assert usage(openai_account, "2025-12-31") == LIST
    assert usage(openai_account, "2027-01-01") == LIST  # the term is [start, end)
    assert usage(openai_account, "2026-12-31") == LIST * Decimal("0.8")


def test_an_archived_term_of_a_contract_renewed_in_place_still_discounts_its_days(openai_account):
    deal = contract()
    ContractTerm.objects.create(
        contract=deal, start=dt.date(2025, 1, 1), end=dt.date(2026, 1, 1), commitment=Decimal("1")
    )

    assert usage(openai_account, "2025-06-01") == LIST * Decimal("0.8")
    assert usage(openai_account, "2024-12-31") == LIST


def test_an_account_of_another_provider_is_not_discounted(openai_account):
    anthropic = Account.objects.create(
        name="anthropic-prod", provider=Provider.objects.get(slug="anthropic"), connector="usage_csv"
    )
    contract()

    # claude-haiku-4-5 lists at $1/M input and $5/M output
    assert usage(anthropic, "2026-03-01", model="claude-haiku-4-5") == Decimal("1.5")


def test_a_contract_naming_other_accounts_does_not_discount_this_one(openai_account):
    lab = Account.objects.create(name="openai-lab", provider=openai_account.provider, connector="usage_csv")
    contract().accounts.add(lab)

    assert usage(openai_account, "2026-03-01") == LIST
    assert usage(lab, "2026-03-01") == LIST * Decimal("0.8")


def test_a_contract_added_after_an_import_applies_when_the_days_are_imported_again(openai_account):
    assert usage(openai_account, "2026-03-01") == LIST

    contract()

    assert UsageLine.objects.get(account=openai_account).cost == LIST  # stored costs are fixed at import
    assert usage(openai_account, "2026-03-01") == LIST * Decimal("0.8")


def test_the_column_writer_stores_a_focus_exports_billed_amounts_undiscounted(tmp_path, db, caplog):
    """The column writer (FOCUS CSV fast path) takes billed lines only: a covering contract changes nothing."""
    path = tmp_path / "bedrock.csv"
    write_focus_csv(path, 500, seed=3)
    bedrock = Provider.objects.get(slug="aws-bedrock")
    plain, covered = (
        Account.objects.create(name=name, provider=bedrock, connector="focus_file") for name in ("plain", "covered")
    )
    contract(
        "aws-bedrock", start=dt.date(2020, 1, 1), end=dt.date(2030, 1, 1), discount_pct=Decimal("50")
    ).accounts.add(covered)

    with caplog.at_level(logging.INFO, logger="ingest.services"):
        for account in (plain, covered):
            with path.open("rb") as stream:
                assert usage_file_import(account=account, stream=stream, file_name=path.name).status == "succeeded"

    assert "read row by row" not in caplog.text  # the column writer did write them
    totals = [UsageLine.objects.filter(account=a).aggregate(total=Sum("cost"))["total"] for a in (plain, covered)]
    assert totals[0] == totals[1] > 0
    assert not UsageLine.objects.exclude(cost_basis="billed").exists()
