"""A contract's figures against the spend of the accounts it covers (finops.contracts.selectors docstring)."""

import datetime as dt
import io
from decimal import Decimal

import pytest

from finops.contracts.selectors import (
    add_months,
    commitment_periods,
    contract_status,
    contract_statuses,
    renewed_commitment,
    whole_months,
)
from finops.models import Account, CommitmentBasis, Contract, ContractTerm, FxRate, Provider
from ingest.services import usage_file_import

D = dt.date


def spend(account: Account, amounts: dict[dt.date, str]) -> None:
    """Billed spend per day, imported through the usage CSV."""
    rows = "".join(f"{day},gpt-5-mini,1000,100,{cost}\n" for day, cost in amounts.items())
    run = usage_file_import(
        account=account,
        stream=io.BytesIO(f"day,model,input_tokens,output_tokens,cost\n{rows}".encode()),
        file_name="usage.csv",
    )
    assert run.status == "succeeded", run.error


def every_day(start: dt.date, end: dt.date, cost: str) -> dict[dt.date, str]:
    return {start + dt.timedelta(days=i): cost for i in range((end - start).days)}


def contract(**fields) -> Contract:
    values = {
        "name": "OpenAI enterprise",
        "provider": Provider.objects.get(slug="openai"),
        "start": D(2026, 1, 1),
        "end": D(2027, 1, 1),
        "commitment": Decimal("36500"),
    }
    return Contract.objects.create(**{**values, **fields})


def test_a_term_commitment_projects_what_was_consumed_plus_the_run_rate_over_the_days_left(openai_account):
    spend(
        openai_account, every_day(D(2026, 1, 1), D(2026, 9, 1), "100") | every_day(D(2026, 9, 1), D(2026, 10, 1), "20")
    )

    status = contract_status(contract(), today=D(2026, 10, 1))

    assert status.consumed == Decimal("24900")  # 243 × 100 + 30 × 20
    assert status.run_rate == Decimal("20")  # the last 30 complete days
    assert status.days_left == 92
    assert status.projected == Decimal("26740")  # 24,900 + 20 × 92
    assert status.shortfall == Decimal("9760") and status.overage == 0
    assert status.expected_to_date == Decimal("27300")  # 36,500 × 273 / 365
    assert status.status == "shortfall"  # 92 days left: at least a quarter of the term


def test_a_shortfall_with_less_than_a_quarter_of_the_term_left_is_no_longer_a_risk_status(openai_account):
    spend(openai_account, every_day(D(2026, 10, 1), D(2026, 11, 20), "20"))

    status = contract_status(contract(), today=D(2026, 11, 20))

    assert status.shortfall > 0
    assert status.status == "on_track"


def test_the_run_rate_of_a_young_term_averages_only_its_own_complete_days(openai_account):
    spend(
        openai_account,
        every_day(D(2026, 11, 1), D(2026, 11, 10), "1000") | every_day(D(2026, 11, 10), D(2026, 11, 20), "30"),
    )

    status = contract_status(contract(start=D(2026, 11, 10), end=D(2027, 11, 10)), today=D(2026, 11, 20))

    assert status.run_rate == Decimal("30")
    assert status.consumed == Decimal("300")  # the spend before the term is not the contract's


def test_a_term_that_starts_today_has_no_run_rate_yet(openai_account):
    status = contract_status(contract(start=D(2026, 11, 20), end=D(2027, 11, 20)), today=D(2026, 11, 20))

    assert status.run_rate is None and status.projected == 0


def test_projected_above_the_commitment_is_an_overage(openai_account):
    spend(openai_account, every_day(D(2026, 10, 21), D(2026, 11, 20), "200"))

    status = contract_status(contract(start=D(2026, 10, 21), end=D(2027, 1, 1)), today=D(2026, 11, 20))

    assert status.projected == Decimal("6000") + Decimal("200") * 42
    assert status.status == "shortfall"  # 14,400 of 36,500
    status = contract_status(
        contract(name="small", start=D(2026, 10, 21), end=D(2027, 1, 1), commitment=Decimal("10000")),
        today=D(2026, 11, 20),
    )
    assert status.overage == Decimal("4400") and status.status == "overage"


def test_a_monthly_commitment_loses_each_months_unused_part_and_an_overage_makes_up_for_no_other_month(openai_account):
    spend(openai_account, {D(2026, 9, 1): "8000", D(2026, 10, 1): "1000"})
    deal = contract(
        start=D(2026, 9, 1), end=D(2026, 12, 1), commitment=Decimal("3000"), commitment_basis=CommitmentBasis.MONTHLY
    )

    status = contract_status(deal, today=D(2026, 11, 1))

    assert [(p.start, p.committed, p.consumed) for p in status.periods] == [
        (D(2026, 9, 1), Decimal("3000"), Decimal("8000")),
        (D(2026, 10, 1), Decimal("3000"), Decimal("1000")),
        (D(2026, 11, 1), Decimal("3000"), Decimal("0")),
    ]
    assert status.committed == status.projected == Decimal("9000")  # the totals alone would look on track
    assert status.overage == Decimal("5000")  # September
    assert status.shortfall == Decimal("5000")  # 2,000 lost in October, 3,000 ahead in November
    assert status.status == "shortfall"  # November, still open, is projected at nothing


def test_a_monthly_commitment_whose_open_months_are_projected_full_is_not_a_shortfall_risk_for_a_lost_past_month(
    openai_account,
):
    spend(openai_account, {D(2026, 9, 1): "0"} | every_day(D(2026, 10, 2), D(2026, 11, 1), "100"))
    deal = contract(
        start=D(2026, 9, 1), end=D(2026, 12, 1), commitment=Decimal("3000"), commitment_basis=CommitmentBasis.MONTHLY
    )

    status = contract_status(deal, today=D(2026, 11, 1))

    assert status.shortfall == Decimal("3000")  # September's commitment is lost (October's 30 × 100 used it)
    assert status.status == "on_track"  # November is projected at 100 × 30


def test_a_month_cut_by_the_terms_start_or_end_is_committed_pro_rata_by_day(openai_account):
    deal = contract(
        start=D(2026, 1, 31), end=D(2026, 3, 31), commitment=Decimal("3100"), commitment_basis=CommitmentBasis.MONTHLY
    )

    periods = commitment_periods(deal)

    assert [(p.start, p.end, p.committed) for p in periods] == [
        (D(2026, 1, 31), D(2026, 2, 1), Decimal("100")),
        (D(2026, 2, 1), D(2026, 3, 1), Decimal("3100")),
        (D(2026, 3, 1), D(2026, 3, 31), Decimal("3000")),
    ]


@pytest.mark.parametrize(
    "day, months, found",
    [
        (D(2026, 1, 31), 1, D(2026, 2, 28)),
        (D(2028, 1, 31), 1, D(2028, 2, 29)),
        (D(2024, 2, 29), 12, D(2025, 2, 28)),
        (D(2024, 2, 29), 48, D(2028, 2, 29)),
        (D(2026, 3, 31), -1, D(2026, 2, 28)),
        (D(2026, 12, 15), 1, D(2027, 1, 15)),
    ],
)
def test_a_month_later_is_the_same_day_clamped_to_the_months_last(day, months, found):
    assert add_months(day, months) == found


def test_a_yearly_commitment_from_feb_29_runs_in_years_counted_from_the_start(openai_account):
    deal = contract(
        start=D(2024, 2, 29), end=D(2025, 8, 29), commitment=Decimal("36500"), commitment_basis=CommitmentBasis.YEARLY
    )

    periods = commitment_periods(deal)

    assert [(p.start, p.end) for p in periods] == [(D(2024, 2, 29), D(2025, 2, 28)), (D(2025, 2, 28), D(2025, 8, 29))]
    assert periods[0].committed == Decimal("36500")
    assert periods[1].committed == Decimal("36500") * 182 / 365  # a year cut by the end: pro rata by day


def test_a_yearly_period_across_feb_29_expects_its_commitment_over_366_days(openai_account):
    spend(openai_account, {D(2023, 6, 1): "5"})
    deal = contract(
        start=D(2023, 6, 1), end=D(2025, 6, 1), commitment=Decimal("36600"), commitment_basis=CommitmentBasis.YEARLY
    )

    status = contract_status(deal, today=D(2024, 3, 1))

    assert [(p.start, p.end, p.committed) for p in status.periods] == [
        (D(2023, 6, 1), D(2024, 6, 1), Decimal("36600")),
        (D(2024, 6, 1), D(2025, 6, 1), Decimal("36600")),
    ]
    assert status.periods[0].expected == Decimal("27400")  # 274 of 366 days gone
    assert status.periods[1].expected == 0


def test_an_auto_renewing_contract_past_its_notice_deadline_says_so(openai_account):
    deal = contract(auto_renew=True, notice_days=60)

    status = contract_status(deal, today=D(2026, 11, 20))

    assert status.notice_deadline == D(2026, 11, 2)
    assert status.days_to_notice_deadline == -18
    assert status.status == "notice_passed"
    deal.auto_renew = False
    assert contract_status(deal, today=D(2026, 11, 20)).status != "notice_passed"


def test_a_contract_is_not_started_before_its_term_and_ended_on_its_end_day(openai_account):
    deal = contract()

    assert contract_status(deal, today=D(2025, 12, 31)).status == "not_started"
    assert contract_status(deal, today=D(2027, 1, 1)).status == "ended"


def test_a_contract_renewed_in_place_shows_the_figures_of_its_current_term_only(openai_account):
    spend(
        openai_account, every_day(D(2025, 12, 1), D(2026, 1, 1), "900") | every_day(D(2026, 1, 1), D(2026, 1, 10), "10")
    )
    deal = contract()
    ContractTerm.objects.create(contract=deal, start=D(2025, 1, 1), end=D(2026, 1, 1), commitment=Decimal("50000"))

    status = contract_status(deal, today=D(2026, 1, 10))

    assert status.consumed == Decimal("90")
    assert status.run_rate == Decimal("10")  # 9 days of this term, not 30 reaching into the last one
    assert [(p.start, p.end) for p in status.periods] == [(D(2026, 1, 1), D(2027, 1, 1))]


def test_the_renewal_baseline_is_the_last_three_complete_months_average_over_the_renewal_term(openai_account):
    spend(
        openai_account,
        {
            D(2026, 7, 31): "99999",
            D(2026, 8, 3): "3000",
            D(2026, 9, 30): "6000",
            D(2026, 10, 31): "9000",
            D(2026, 11, 2): "77777",
        },
    )
    deal = contract(commitment=Decimal("120000"))

    status = contract_status(deal, today=D(2026, 11, 20))

    assert status.renewal_baseline == Decimal("72000")  # (3,000 + 6,000 + 9,000) / 3 × 12
    assert status.renewal_advice == Decimal("72000")  # a renewal at today's 120,000 a year commits more
    deal.commitment = Decimal("60000")
    assert contract_status(deal, today=D(2026, 11, 20)).renewal_advice is None


def test_a_renewal_at_todays_commitment_equal_to_the_baseline_needs_no_advice(openai_account):
    spend(openai_account, {D(2026, 8, 3): "6000", D(2026, 9, 30): "6000", D(2026, 10, 31): "6000"})

    status = contract_status(contract(commitment=Decimal("72000")), today=D(2026, 11, 20))

    assert status.renewal_baseline == Decimal("72000") and status.renewal_advice is None


@pytest.mark.parametrize(
    "start, end, months, renewed",
    [
        (D(2026, 1, 1), D(2027, 1, 1), 12, Decimal("36500")),
        (D(2024, 2, 29), D(2025, 2, 28), 12, Decimal("36500")),
        (D(2026, 1, 31), D(2026, 7, 31), 6, Decimal("73000")),
        (D(2026, 1, 31), D(2026, 2, 28), 1, Decimal("438000")),
    ],
)
def test_a_renewed_term_commits_todays_commitment_over_the_renewal_months(openai_account, start, end, months, renewed):
    deal = contract(start=start, end=end)

    assert whole_months(start, end) == months
    assert renewed_commitment(deal) == renewed


def test_a_term_of_no_whole_months_is_renewed_in_mean_months(openai_account):
    deal = contract(start=D(2026, 1, 1), end=D(2026, 1, 31))

    assert whole_months(deal.start, deal.end) is None
    assert renewed_commitment(deal) == Decimal("444378.375")  # 36,500 × 12 / (30 / 30.436875)


def test_the_renewal_baseline_of_accounts_with_spend_only_lately_averages_the_months_they_have(openai_account):
    spend(openai_account, {D(2026, 10, 5): "9000"})

    status = contract_status(contract(renewal_term_months=24), today=D(2026, 11, 20))

    assert status.renewal_baseline == Decimal("216000")  # 9,000 a month (October only) × 24


def test_without_covered_spend_before_this_month_there_is_no_renewal_baseline(openai_account):
    spend(openai_account, {D(2026, 11, 2): "100"})

    assert contract_status(contract(), today=D(2026, 11, 20)).renewal_baseline is None


def test_prepaid_credit_is_part_of_the_commitment_and_drawn_down_first(openai_account):
    spend(openai_account, {D(2026, 3, 1): "4000"})

    status = contract_status(contract(prepaid=Decimal("10000")), today=D(2026, 11, 20))

    assert status.committed == Decimal("36500")  # not 46,500
    assert status.prepaid_used == Decimal("4000") and status.prepaid_left == Decimal("6000")


def test_a_contract_naming_accounts_covers_only_those_and_one_naming_none_covers_its_providers_accounts(openai_account):
    other = Account.objects.create(name="openai-lab", provider=openai_account.provider, connector="usage_csv")
    elsewhere = Account.objects.create(
        name="anthropic-prod", provider=Provider.objects.get(slug="anthropic"), connector="usage_csv"
    )
    spend(openai_account, {D(2026, 3, 1): "100"})
    spend(other, {D(2026, 3, 1): "20"})
    spend(elsewhere, {D(2026, 3, 1): "3"})
    named = contract(name="named")
    named.accounts.add(other)

    statuses = contract_statuses([contract(name="all"), named], today=D(2026, 11, 20))

    assert [s.consumed for s in statuses] == [Decimal("120"), Decimal("20")]


def test_the_statuses_of_several_contracts_read_their_accounts_in_one_query(openai_account, django_assert_num_queries):
    for name in ("a", "b", "c"):
        contract(name=name).accounts.add(openai_account)
    contracts = list(Contract.objects.all())

    with django_assert_num_queries(1 + 3):  # the accounts once, then each contract's daily spend
        contract_statuses(contracts, today=D(2026, 11, 20))


def test_a_contract_in_another_currency_counts_the_amounts_billed_in_it(openai_account):
    FxRate.objects.create(day=D(2025, 1, 1), currency="EUR", rate=Decimal("1.08"))
    csv = (
        "day,model,input_tokens,output_tokens,cost,currency\n"
        "2026-03-01,gpt-5-mini,1000,100,100,EUR\n2026-03-02,gpt-5-mini,1000,100,7,USD\n"
    )
    assert (
        usage_file_import(account=openai_account, stream=io.BytesIO(csv.encode()), file_name="eur.csv").status
        == "succeeded"
    )

    assert contract_status(contract(currency="EUR"), today=D(2026, 11, 20)).consumed == Decimal("100")
    assert contract_status(contract(name="usd"), today=D(2026, 11, 20)).consumed == Decimal("115")  # 100 € at 1.08 + $7
