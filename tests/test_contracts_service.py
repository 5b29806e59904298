"""Contracts (issue 11): the one write path, its validation (every bad field named at once), renewing in place
and who may write."""

import datetime as dt
from decimal import Decimal

import pytest
from django.core.exceptions import PermissionDenied

from finops.contracts.services import ContractInvalid, contract_create, contract_delete, contract_renew, contract_update
from finops.core import access
from finops.models import Account, Contract, ContractTerm, Provider

D = dt.date


def valid(**overrides) -> dict:
    return {
        "name": "OpenAI 2026",
        "provider": "openai",
        "start": "2026-01-01",
        "end": "2027-01-01",
        "commitment": "120000",
        **overrides,
    }


@pytest.fixture
def anthropic_account(db):
    return Account.objects.create(
        name="anthropic-prod", provider=Provider.objects.get(slug="anthropic"), connector="usage_csv"
    )


@pytest.fixture
def contract(ada, openai_account):
    return contract_create(
        by=ada,
        **valid(
            accounts=["openai-prod"],
            commitment_basis="monthly",
            commitment="10000",
            discount_pct="12",
            auto_renew=True,
            notice_days=60,
            owner="cfo@example.com",
        ),
    )


def errors_of(call, **fields) -> dict:
    with pytest.raises(ContractInvalid) as raised:
        call(**fields)
    return raised.value.errors


def test_an_admin_creates_a_contract_with_its_accounts_and_defaults(ada, openai_account):
    contract = contract_create(by=ada, **valid(accounts=["openai-prod"], currency="eur", discount_pct="12.5"))
    contract.refresh_from_db()
    assert contract.provider.slug == "openai" and [a.name for a in contract.accounts.all()] == ["openai-prod"]
    assert (contract.start, contract.end, contract.commitment) == (D(2026, 1, 1), D(2027, 1, 1), Decimal("120000"))
    assert contract.currency == "EUR" and contract.discount_pct == Decimal("12.5")
    assert (
        contract.commitment_basis == "term" and contract.prepaid == 0 and contract.notice_alert_days == [180, 90, 30, 7]
    )


def test_a_contract_naming_no_account_covers_every_account_of_its_provider(ada):
    assert list(contract_create(by=ada, **valid()).accounts.all()) == []


def test_every_bad_field_is_named_at_once(ada, anthropic_account):
    errors = errors_of(
        contract_create,
        by=ada,
        name="",
        provider="openai",
        accounts=["anthropic-prod", "nope"],
        start="2026-01-01",
        end="2027-01-01",
        commitment="-1",
        prepaid="-5",
        discount_pct="101",
        currency="USS",
        notice_alert_days=[30, 0],
        owner="not-an-email",
        commitment_basis="weekly",
        document_url="ftp://x",
    )
    assert set(errors) == {
        "name",
        "accounts",
        "commitment",
        "prepaid",
        "discount_pct",
        "currency",
        "notice_alert_days",
        "owner",
        "commitment_basis",
        "document_url",
    }
    assert "not one of openai's accounts" in errors["accounts"] and "No account named 'nope'" in errors["accounts"]
    assert errors["commitment"] == "Must not be negative." and errors["prepaid"] == "Must not be negative."
    assert errors["discount_pct"] == "A discount is a percentage from 0 to 100."
    assert errors["currency"] == "USS is not an ISO 4217 currency code."
    assert "0 is not a positive number of days" in errors["notice_alert_days"]
    assert errors["owner"] == "'not-an-email' is not an email address."
    assert not Contract.objects.exists()


def test_a_term_that_does_not_end_after_it_starts_is_refused(ada):
    assert errors_of(contract_create, by=ada, **valid(end="2026-01-01"))["end"].startswith(
        "The term ends after it starts"
    )


def test_a_notice_period_longer_than_the_term_is_refused(ada):
    errors = errors_of(contract_create, by=ada, **valid(end="2026-02-01", notice_days=60))
    assert errors == {"notice_days": "A notice period of 60 days is longer than the term (31 days)."}


def test_an_unknown_provider_is_named(ada):
    assert (
        errors_of(contract_create, by=ada, **valid(provider="acme"))["provider"] == "No provider with the slug 'acme'."
    )


def test_a_currency_code_must_have_three_letters(ada):
    assert "3-letter" in errors_of(contract_create, by=ada, **valid(currency="US"))["currency"]


def test_a_negative_discount_and_a_float_commitment_are_refused(ada):
    errors = errors_of(contract_create, by=ada, **valid(discount_pct="-1", commitment=1.5))
    assert (
        errors["discount_pct"] == "A discount is a percentage from 0 to 100." and "not a float" in errors["commitment"]
    )


def test_notice_alert_days_are_positive_whole_days_deduplicated_largest_first(ada):
    assert contract_create(by=ada, **valid(notice_alert_days=[7, 30, 30, "90"])).notice_alert_days == [90, 30, 7]
    assert (
        "not a whole number"
        in errors_of(contract_create, by=ada, **valid(name="B", notice_alert_days=["soon"]))["notice_alert_days"]
    )


def test_contract_names_are_unique(ada, contract):
    assert "exists" in errors_of(contract_create, by=ada, **valid())["name"]


def test_an_update_changes_the_fields_given_and_keeps_the_others(ada, contract):
    contract_update(contract=contract, by=ada, discount_pct="15", accounts=[])
    contract.refresh_from_db()
    assert contract.discount_pct == Decimal("15") and contract.commitment == Decimal("10000")
    assert list(contract.accounts.all()) == [] and not ContractTerm.objects.exists()


def test_an_unchanged_update_does_not_save(ada, contract):
    stamp = contract.updated_at
    contract_update(contract=contract, by=ada, commitment="10000.00", accounts=["openai-prod"])
    contract.refresh_from_db()
    assert contract.updated_at == stamp


def test_an_update_validates_against_the_merged_term(ada, contract):
    assert "notice_days" in errors_of(contract_update, contract=contract, by=ada, end="2026-02-01")
    contract.refresh_from_db()
    assert contract.end == D(2027, 1, 1)


def test_renewing_in_place_archives_the_old_term_and_sets_the_new_one(ada, contract):
    contract_renew(
        contract=contract, by=ada, start="2027-01-01", end="2028-01-01", commitment="9000", discount_pct="14"
    )
    contract.refresh_from_db()
    assert (contract.start, contract.end, contract.commitment) == (D(2027, 1, 1), D(2028, 1, 1), Decimal("9000"))
    assert contract.discount_pct == Decimal("14") and contract.commitment_basis == "monthly"
    (old,) = contract.past_terms.all()
    assert (old.start, old.end, old.commitment, old.commitment_basis) == (
        D(2026, 1, 1),
        D(2027, 1, 1),
        Decimal("10000"),
        "monthly",
    )
    contract_renew(contract=contract, by=ada, start="2028-01-01", end="2029-01-01")
    assert [t.start.year for t in contract.past_terms.all()] == [2027, 2026]
    contract.refresh_from_db()
    assert contract.commitment == Decimal("9000")


def test_a_renewal_starting_before_the_current_term_ends_is_refused_and_archives_nothing(ada, contract):
    errors = errors_of(contract_renew, contract=contract, by=ada, start="2026-06-01", end="2027-06-01")
    assert errors["start"].startswith("A renewal starts on or after the current term's end (2027-01-01)")
    assert not ContractTerm.objects.exists()


def test_a_bad_renewal_names_every_field_and_archives_nothing(ada, contract):
    errors = errors_of(contract_renew, contract=contract, by=ada, start="2027-01-01", end="2026-12-01", commitment="-3")
    assert set(errors) == {"end", "commitment"}
    assert not ContractTerm.objects.exists()


def test_finance_and_members_may_not_write_contracts(ada, fiona, sam, contract):
    for user in (fiona, sam):
        with pytest.raises(PermissionDenied):
            contract_create(by=user, **valid(name="Other"))
        with pytest.raises(PermissionDenied):
            contract_update(contract=contract, by=user, commitment="1")
        with pytest.raises(PermissionDenied):
            contract_renew(contract=contract, by=user, start="2027-01-01", end="2028-01-01")
        with pytest.raises(PermissionDenied):
            contract_delete(contract=contract, by=user)
    assert Contract.objects.count() == 1 and not ContractTerm.objects.exists()


def test_admins_and_finance_see_contracts_and_only_admins_manage_them(ada, fiona, sam):
    assert [access.can_see_contracts(u) for u in (ada, fiona, sam)] == [True, True, False]
    assert [access.can_manage_contracts(u) for u in (ada, fiona, sam)] == [True, False, False]


def test_deleting_a_contract_takes_its_past_terms(ada, contract):
    contract_renew(contract=contract, by=ada, start="2027-01-01", end="2028-01-01")
    contract_delete(contract=contract, by=ada)
    assert not Contract.objects.exists() and not ContractTerm.objects.exists()


def test_terms_never_overlap_so_an_archived_term_cannot_come_back_as_the_current_one(ada, contract):
    contract_renew(contract=contract, by=ada, start="2027-01-01", end="2028-01-01")
    errors = errors_of(contract_update, contract=contract, by=ada, start="2026-01-01", end="2027-01-01")
    assert errors == {
        "start": "The contract was renewed: its past terms run to 2027-01-01, so the current term starts "
        "on or after that day (export_config prints the current term)."
    }
    contract.refresh_from_db()
    assert contract.start == D(2027, 1, 1)
    contract_update(contract=contract, by=ada, end="2028-02-01")
    assert contract.end == D(2028, 2, 1)


def test_a_term_outside_the_years_the_product_reports_on_is_refused(ada, contract):
    # Found by fuzzing the API (issue 16): a term from 0001 to 9999 was stored, and the contract pages then did
    # month arithmetic over ten thousand years. The service refuses it for the form, the API and apply_config alike.
    errors = errors_of(contract_create, by=ada, **valid(name="Typo", start="0026-01-01", end="9999-12-31"))
    assert set(errors) == {"start", "end"} and "Pick days between 2000-01-01 and 2099-12-31" in errors["start"]
    renewal = errors_of(contract_renew, contract=contract, by=ada, start="2027-01-01", end="2127-01-01")
    assert set(renewal) == {"end"}
    assert not Contract.objects.filter(name="Typo").exists()
