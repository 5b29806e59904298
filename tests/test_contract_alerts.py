"""Contract alerts (finops.alerts.contract_notice, contract_risk): a notice deadline ahead at each of its
thresholds, and a term heading for a shortfall or an overage, each raised exactly once; who is told."""

import datetime as dt
import io
from decimal import Decimal

import pytest
import time_machine

from finops.alerts import contracts as contract_alerts
from finops.alerts.evaluate import alerts_evaluate
from finops.models import Account, AlertEvent, AlertKind, Channel, Contract, ContractTerm, Provider
from finops.notify.recipients import event_addresses
from ingest.services import usage_file_import

D = dt.date
CONTRACT_KINDS = (AlertKind.CONTRACT_NOTICE, AlertKind.CONTRACT_SHORTFALL, AlertKind.CONTRACT_OVERAGE)
DEADLINE = D(2026, 12, 2)  # 2027-01-31 less 60 days' notice


def evaluate_on(day: dt.date) -> list[AlertEvent]:
    """The contract events a whole evaluation raises with the clock on `day`."""
    with time_machine.travel(dt.datetime.combine(day, dt.time(9), tzinfo=dt.UTC), tick=False):
        return [e for e in alerts_evaluate() if e.kind in CONTRACT_KINDS]


def days_before(deadline: dt.date, days: int) -> dt.date:
    return deadline - dt.timedelta(days=days)


@pytest.fixture
def anthropic_account(db):
    return Account.objects.create(
        name="anthropic-prod", provider=Provider.objects.get(slug="anthropic"), connector="usage_csv"
    )


def enterprise(**fields) -> Contract:
    values = {
        "name": "Anthropic enterprise",
        "provider": Provider.objects.get(slug="anthropic"),
        "start": D(2026, 1, 31),
        "end": D(2027, 1, 31),
        "commitment": Decimal("120000"),
        "auto_renew": True,
        "notice_days": 60,
        "owner": "olga@example.com",
    }
    return Contract.objects.create(**{**values, **fields})


def spend(account: Account, start: dt.date, end: dt.date, cost: str) -> None:
    rows = "".join(
        f"{start + dt.timedelta(days=i)},claude-haiku-4-5,1000,100,{cost}\n" for i in range((end - start).days)
    )
    run = usage_file_import(
        account=account,
        stream=io.BytesIO(f"day,model,input_tokens,output_tokens,cost\n{rows}".encode()),
        file_name="usage.csv",
    )
    assert run.status == "succeeded", run.error


def test_each_notice_threshold_is_raised_once_on_the_day_it_is_crossed(anthropic_account):
    deal = enterprise(commitment=Decimal("0"))
    found = {days: evaluate_on(days_before(DEADLINE, days)) for days in (181, 180, 179, 91, 90, 89, 31, 30, 8, 7, 6, 0)}

    assert {days: [e.threshold for e in events] for days, events in found.items()} == {
        181: [],
        180: [180],
        179: [],
        91: [],
        90: [90],
        89: [],
        31: [],
        30: [30],
        8: [],
        7: [7],
        6: [],
        0: [],
    }
    event = found[30][0]
    assert event.title == "Anthropic enterprise auto-renews: notice due in 30 days (2 December 2026)"
    assert (event.subject, event.period_start, event.contract) == (f"contract:{deal.id}", deal.start, deal)
    assert event.state == AlertEvent.State.PENDING
    assert event.details["notice_deadline"] == "2026-12-02" and event.details["days_to_notice_deadline"] == 30
    assert event.details["owner"] == "olga@example.com"


def test_evaluating_twice_on_the_same_day_raises_the_notice_once(anthropic_account):
    enterprise(commitment=Decimal("0"))

    first, second = evaluate_on(days_before(DEADLINE, 90)), evaluate_on(days_before(DEADLINE, 90))

    assert [e.threshold for e in first] == [180, 90] and second == []
    assert AlertEvent.objects.filter(kind=AlertKind.CONTRACT_NOTICE).count() == 2


def test_thresholds_crossed_together_send_only_the_most_urgent_and_keep_the_others_superseded(anthropic_account):
    enterprise(commitment=Decimal("0"))

    events = evaluate_on(days_before(DEADLINE, 25))

    assert {e.threshold: AlertEvent.objects.get(id=e.id).state for e in events} == {
        180: AlertEvent.State.SUPERSEDED,
        90: AlertEvent.State.SUPERSEDED,
        30: AlertEvent.State.PENDING,
    }
    assert evaluate_on(days_before(DEADLINE, 7))[0].threshold == 7


def test_a_contract_that_does_not_auto_renew_or_whose_deadline_has_passed_raises_no_notice(anthropic_account):
    enterprise(commitment=Decimal("0"), auto_renew=False)
    assert evaluate_on(days_before(DEADLINE, 30)) == []

    enterprise(name="Passed", commitment=Decimal("0"))  # first looked at after its deadline: too late to say anything

    assert evaluate_on(DEADLINE + dt.timedelta(days=1)) == []


def test_the_notice_days_of_a_contract_are_its_own(anthropic_account):
    enterprise(commitment=Decimal("0"), notice_alert_days=[45, 14])

    assert evaluate_on(days_before(DEADLINE, 90)) == []
    assert [e.threshold for e in evaluate_on(days_before(DEADLINE, 45))] == [45]
    assert evaluate_on(days_before(DEADLINE, 1))[0].title.endswith("notice due in 1 day (2 December 2026)")


def test_a_term_renewed_in_place_re_arms_every_notice_threshold(anthropic_account):
    deal = enterprise(commitment=Decimal("0"))
    assert [e.threshold for e in evaluate_on(days_before(DEADLINE, 7))] == [180, 90, 30, 7]
    ContractTerm.objects.create(contract=deal, start=deal.start, end=deal.end, commitment=deal.commitment)
    deal.start, deal.end = D(2027, 1, 31), D(2028, 1, 31)
    deal.save()
    deadline = D(2027, 12, 2)

    assert evaluate_on(days_before(deadline, 181)) == []
    events = evaluate_on(days_before(deadline, 180))

    assert [(e.threshold, e.period_start) for e in events] == [(180, D(2027, 1, 31))]
    assert "2 December 2027" in events[0].title


def test_a_term_heading_for_a_shortfall_is_alerted_once(anthropic_account):
    spend(anthropic_account, D(2026, 1, 31), D(2026, 7, 1), "200")  # 151 days × 200 = 30,200
    deal = enterprise(auto_renew=False)

    events = evaluate_on(D(2026, 7, 1))

    # 30,200 + 200 × 214 days left = 73,000 of 120,000
    assert [(e.kind, e.threshold) for e in events] == [(AlertKind.CONTRACT_SHORTFALL, 90)]
    event = events[0]
    assert event.title == "Anthropic enterprise heading for a $47,000 shortfall (projected $73,000 of $120,000)"
    assert event.contract == deal and event.period_start == deal.start
    assert {k: event.details[k] for k in ("consumed", "run_rate", "projected", "shortfall", "committed", "owner")} == {
        "consumed": "30200.00",
        "run_rate": "200.00",
        "projected": "73000.00",
        "shortfall": "47000.00",
        "committed": "120000.00",
        "owner": "olga@example.com",
    }
    assert evaluate_on(D(2026, 7, 1)) == [] and evaluate_on(D(2026, 7, 2)) == []


def test_no_shortfall_is_alerted_with_less_than_a_quarter_of_the_term_left(anthropic_account):
    spend(anthropic_account, D(2026, 10, 1), D(2026, 11, 20), "200")
    enterprise(auto_renew=False)

    assert evaluate_on(D(2026, 11, 20)) == []


def test_a_term_heading_for_an_overage_is_alerted_once(anthropic_account):
    spend(anthropic_account, D(2026, 1, 31), D(2026, 7, 1), "200")
    enterprise(auto_renew=False, commitment=Decimal("50000"))

    events = evaluate_on(D(2026, 7, 1))

    assert [(e.kind, e.threshold) for e in events] == [(AlertKind.CONTRACT_OVERAGE, 100)]
    assert events[0].title == "Anthropic enterprise heading for a $23,000 overage (projected $73,000 of $50,000)"
    spend(anthropic_account, D(2026, 7, 1), D(2026, 8, 1), "200")
    assert evaluate_on(D(2026, 8, 1)) == []


def test_a_renewed_term_can_be_alerted_for_a_shortfall_again(anthropic_account):
    spend(anthropic_account, D(2026, 1, 31), D(2026, 7, 1), "200")
    deal = enterprise(auto_renew=False, start=D(2026, 1, 31), end=D(2026, 12, 31))
    assert len(evaluate_on(D(2026, 7, 1))) == 1
    deal.start, deal.end = D(2026, 6, 1), D(2027, 6, 1)  # renewed early, in place
    deal.save()

    events = evaluate_on(D(2026, 7, 1))

    assert [(e.kind, e.period_start) for e in events] == [(AlertKind.CONTRACT_SHORTFALL, D(2026, 6, 1))]


def test_a_contract_event_goes_to_its_owner_and_finance_through_the_organisations_default_channel(
    anthropic_account, ada, fiona, sam
):
    enterprise(commitment=Decimal("0"))
    event = evaluate_on(days_before(DEADLINE, 30))[-1]

    assert event_addresses(event) == ["olga@example.com", fiona.email]
    Contract.objects.update(owner="")
    event.refresh_from_db()
    assert event_addresses(event) == [fiona.email]
    # Who hears it is the default channel's row (migration 0037), not a rule: an admin who wants the admins told
    # when a contract has no owner adds them to it.
    channel = Channel.objects.get(name="Contracts: owner and finance", team=None, is_default=True)
    channel.addresses = [*channel.addresses, "role:admins"]
    channel.save()
    assert event_addresses(event) == [fiona.email, ada.email]


def test_a_contract_event_no_channel_reaches_goes_to_the_admins_not_to_nobody(anthropic_account, ada, sam):
    enterprise(commitment=Decimal("0"))
    Contract.objects.update(owner="")  # no owner, and no finance user: the default channel names nobody
    event = evaluate_on(days_before(DEADLINE, 30))[-1]

    assert event_addresses(event) == [ada.email]


def test_an_evaluation_with_nothing_to_say_reads_the_contracts_and_their_accounts_once(
    anthropic_account, django_assert_num_queries
):
    for name in ("a", "b", "c"):
        enterprise(name=name, auto_renew=False, commitment=Decimal("0")).accounts.add(anthropic_account)

    with django_assert_num_queries(2 + 3):  # contracts, their accounts, then each contract's daily spend
        assert contract_alerts.evaluate(today=D(2026, 11, 20)) == []
