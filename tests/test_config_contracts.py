"""Config as code, the `contracts:` section (issue 11): applied through the same service as the API; a bad contract
applies nothing and names its entry and field; a start on or after the current term's end renews in place;
`export_config` prints contracts back and the export applies with no change."""

import datetime as dt
from decimal import Decimal

import pytest

from finops.models import Contract, ContractTerm, Team
from tests.config_helpers import EXAMPLE, apply, apply_failing, export, write

CONTRACTS = """
contracts:
  - name: OpenAI enterprise
    provider: openai
    accounts: [openai-prod]
    start: 2026-01-01
    end: 2027-01-01
    commitment: "120000"
    commitment_basis: term
    currency: USD
    discount_pct: "12"
    prepaid: "0"
    auto_renew: true
    renewal_term_months: 12
    notice_days: 60
    owner: cfo@example.com
  - name: Groq monthly
    provider: groq
    start: 2026-03-15
    end: 2027-03-15
    commitment: "2500.50"
    commitment_basis: monthly
    currency: eur
    notice_days: 30
    notice_alert_days: [7, 30]
    notes: Signed by the CFO.
    document_url: https://contracts.example.com/groq.pdf
"""


def contracts_snapshot() -> list[dict]:
    return list(Contract.objects.order_by("pk").values()) + list(ContractTerm.objects.order_by("pk").values())


def test_contracts_in_the_file_are_created_through_the_service(example, tmp_path):
    output = apply(write(tmp_path, EXAMPLE + CONTRACTS))

    assert "contracts: 2 created, 0 updated, 0 unchanged" in output
    openai = Contract.objects.get(name="OpenAI enterprise")
    assert (openai.provider.slug, [a.name for a in openai.accounts.all()]) == ("openai", ["openai-prod"])
    assert (openai.start, openai.end, openai.commitment, openai.discount_pct) == (
        dt.date(2026, 1, 1),
        dt.date(2027, 1, 1),
        Decimal("120000"),
        Decimal("12"),
    )
    assert openai.auto_renew and openai.owner == "cfo@example.com" and openai.notice_alert_days == [180, 90, 30, 7]
    groq = Contract.objects.get(name="Groq monthly")
    assert (groq.commitment_basis, groq.currency, groq.commitment, groq.notice_alert_days) == (
        "monthly",
        "EUR",
        Decimal("2500.50"),
        [30, 7],
    )
    assert list(groq.accounts.all()) == [] and not groq.auto_renew and groq.notes == "Signed by the CFO."


def test_applying_the_same_contracts_again_changes_nothing(example, tmp_path):
    path = write(tmp_path, EXAMPLE + CONTRACTS)
    apply(path)
    before = contracts_snapshot()

    output = apply(path)

    assert "contracts: 0 created, 0 updated, 2 unchanged" in output
    assert contracts_snapshot() == before


def test_new_dates_inside_the_current_term_correct_it_without_archiving(example, tmp_path):
    apply(write(tmp_path, EXAMPLE + CONTRACTS))

    output = apply(write(tmp_path, EXAMPLE + CONTRACTS.replace("end: 2027-01-01", "end: 2027-02-01")))

    assert "contracts: 0 created, 1 updated, 1 unchanged" in output
    assert Contract.objects.get(name="OpenAI enterprise").end == dt.date(2027, 2, 1)
    assert not ContractTerm.objects.exists()


def test_a_start_on_or_after_the_current_end_renews_in_place_and_keeps_the_old_term(example, tmp_path):
    apply(write(tmp_path, EXAMPLE + CONTRACTS))
    renewed = CONTRACTS.replace(
        'start: 2026-01-01\n    end: 2027-01-01\n    commitment: "120000"',
        'start: 2027-01-01\n    end: 2028-01-01\n    commitment: "90000"',
    )
    assert renewed != CONTRACTS

    output = apply(write(tmp_path, EXAMPLE + renewed))

    assert "contracts: 0 created, 1 updated, 1 unchanged" in output
    contract = Contract.objects.get(name="OpenAI enterprise")
    assert (contract.start, contract.end, contract.commitment) == (
        dt.date(2027, 1, 1),
        dt.date(2028, 1, 1),
        Decimal("90000"),
    )
    (old,) = contract.past_terms.all()
    assert (old.start, old.end, old.commitment) == (dt.date(2026, 1, 1), dt.date(2027, 1, 1), Decimal("120000"))
    assert "contracts: 0 created, 0 updated, 2 unchanged" in apply(write(tmp_path, EXAMPLE + renewed))
    assert ContractTerm.objects.count() == 1


@pytest.mark.parametrize(
    "line, bad_line, words",
    [
        (
            "    end: 2027-01-01",
            "    end: 2025-01-01",
            "contracts[0] (name=OpenAI enterprise): end: The term ends after it starts",
        ),
        (
            '    commitment: "120000"',
            '    commitment: "-5"',
            "contracts[0] (name=OpenAI enterprise): commitment: Must not be negative.",
        ),
        (
            '    discount_pct: "12"',
            '    discount_pct: "140"',
            "contracts[0] (name=OpenAI enterprise): discount_pct: A discount is a percentage from 0 to 100.",
        ),
        (
            "    accounts: [openai-prod]",
            "    accounts: [groq-exports]",
            "contracts[0] (name=OpenAI enterprise): accounts: The account 'groq-exports' is not one of openai's "
            "accounts.",
        ),
        (
            "    provider: groq",
            "    provider: acme",
            "contracts[1] (name=Groq monthly): provider: No provider with the slug 'acme'.",
        ),
        (
            "    currency: eur",
            "    currency: eru",
            "contracts[1] (name=Groq monthly): currency: ERU is not an ISO 4217 currency code.",
        ),
        (
            "    notice_days: 60",
            "    notice_days: 400",
            "contracts[0] (name=OpenAI enterprise): notice_days: A notice period of 400 days is longer than the term",
        ),
        (
            "    notice_alert_days: [7, 30]",
            "    notice_alert_days: [7, -1]",
            "contracts[1] (name=Groq monthly): notice_alert_days: -1 is not a positive number",
        ),
        (
            "    owner: cfo@example.com",
            "    owner: the cfo",
            "contracts[0] (name=OpenAI enterprise): owner: 'the cfo' is not an email address.",
        ),
        (
            "    commitment_basis: monthly",
            "    commitment_basis: weekly",
            "contracts[1] (name=Groq monthly): commitment_basis:",
        ),
        (
            "    notice_days: 30",
            "    notice_days: 30\n    colour: red",
            "contracts[1] (name=Groq monthly): colour: unknown field",
        ),
    ],
)
def test_a_bad_contract_applies_nothing_and_names_its_entry_and_field(db, tmp_path, secret_env, line, bad_line, words):
    assert line in CONTRACTS

    message = apply_failing(write(tmp_path, EXAMPLE + CONTRACTS.replace(line, bad_line)))

    assert words in message, message
    assert not Contract.objects.exists() and not Team.objects.exists()


def test_a_bad_renewal_archives_nothing(example, tmp_path):
    apply(write(tmp_path, EXAMPLE + CONTRACTS))
    bad = CONTRACTS.replace("start: 2026-01-01\n    end: 2027-01-01", "start: 2027-01-01\n    end: 2026-12-01")

    message = apply_failing(write(tmp_path, EXAMPLE + bad))

    assert "contracts[0] (name=OpenAI enterprise): end: The term ends after it starts" in message
    assert not ContractTerm.objects.exists() and Contract.objects.get(name="OpenAI enterprise").start == dt.date(
        2026, 1, 1
    )


def test_the_export_prints_contracts_back_and_applies_unchanged(example, tmp_path):
    apply(write(tmp_path, EXAMPLE + CONTRACTS))
    before = contracts_snapshot()

    exported = export()

    assert (
        "- name: Groq monthly\n  provider: groq\n  start: 2026-03-15\n  end: 2027-03-15\n  commitment: '2500.5'\n"
        "  commitment_basis: monthly\n  currency: EUR\n"
    ) in exported
    assert "  accounts:\n  - openai-prod\n" in exported and "  owner: cfo@example.com\n" in exported
    output = apply(write(tmp_path, exported, "exported.yaml"))
    assert "contracts: 0 created, 0 updated, 2 unchanged" in output
    assert contracts_snapshot() == before


def test_applying_the_old_file_after_a_renewal_is_refused_rather_than_bringing_the_old_term_back(example, tmp_path):
    apply(write(tmp_path, EXAMPLE + CONTRACTS))
    renewed = CONTRACTS.replace("start: 2026-01-01\n    end: 2027-01-01", "start: 2027-01-01\n    end: 2028-01-01")
    apply(write(tmp_path, EXAMPLE + renewed))

    message = apply_failing(write(tmp_path, EXAMPLE + CONTRACTS))

    assert (
        "contracts[0] (name=OpenAI enterprise): start: The contract was renewed: its past terms run to 2027-01-01"
        in message
    )
    assert (
        Contract.objects.get(name="OpenAI enterprise").start == dt.date(2027, 1, 1)
        and ContractTerm.objects.count() == 1
    )
