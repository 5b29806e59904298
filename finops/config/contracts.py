"""The `contracts:` section: each entry creates, updates or renews the contract of that name through
finops.contracts.services (the same validation as the API). Contracts absent from the file are left as they are.

Which write an entry makes, for a contract that exists (docs/config.md):
- its `start` is on or after the current term's `end`: the file describes the NEXT term, so the contract is
  renewed in place (`contract_renew`: the current term is archived as a past term, then the new one is set);
- otherwise the entry describes the current term, and its fields (dates included) correct it (`contract_update`;
  nothing is archived). So applying an export, which carries the current term, changes nothing.
"""

from decimal import Decimal

from finops.alerts.services.channels import channels_chosen
from finops.contracts.services import (
    ContractInvalid,
    contract_create,
    contract_renew,
    contract_snapshot,
    contract_update,
)
from finops.models import Contract

from .caps import chosen_ids

FIELDS = (
    "name",
    "provider",
    "accounts",
    "start",
    "end",
    "commitment",
    "commitment_basis",
    "prepaid",
    "currency",
    "discount_pct",
    "auto_renew",
    "renewal_term_months",
    "notice_days",
    "notice_alert_days",
    "owner",
    "notes",
    "document_url",
)


def contract_apply(entry: dict) -> tuple[str, list[str]]:
    """Create, update or renew one contract; returns its outcome ("renewed" counts as updated), or the errors
    naming the entry and the field."""
    fields = {name: entry[name] for name in FIELDS}
    contract = Contract.objects.filter(name=entry["name"]).first()
    try:
        if contract is None:
            contract_create(by=None, channels=entry["channels"], **fields)
            return "created", []
        if entry["start"] >= contract.end:
            term = {name: fields.pop(name) for name in ("start", "end", "commitment", "commitment_basis", "prepaid")}
            contract = contract_renew(contract=contract, by=None, **term, **fields)
            contract_update(contract=contract, by=None, channels=entry["channels"])
            return "updated", []
        before = (contract_snapshot(contract), chosen_ids(contract))
        contract = contract_update(contract=contract, by=None, channels=entry["channels"], **fields)
        return ("unchanged" if (contract_snapshot(contract), chosen_ids(contract)) == before else "updated"), []
    except ContractInvalid as exc:
        return "invalid", [f"{entry['_label']}: {name}: {message}" for name, message in exc.errors.items()]


def _decimal(value: Decimal) -> str:
    return format(Decimal(value).normalize(), "f")


def contract_entry(contract: Contract) -> dict:
    """A contract's current term as `export_config` prints it (past terms are history, not configuration)."""
    entry = {
        "name": contract.name,
        "provider": contract.provider.slug,
        "accounts": sorted(a.name for a in contract.accounts.all()),
        "start": contract.start,
        "end": contract.end,
        "commitment": _decimal(contract.commitment),
        "commitment_basis": contract.commitment_basis,
        "currency": contract.currency,
        "discount_pct": _decimal(contract.discount_pct),
        "prepaid": _decimal(contract.prepaid),
        "auto_renew": contract.auto_renew,
        "renewal_term_months": contract.renewal_term_months,
        "notice_days": contract.notice_days,
        "notice_alert_days": list(contract.notice_alert_days),
        "owner": contract.owner,
        "notes": contract.notes,
        "document_url": contract.document_url,
        "channels": [c.name for c in channels_chosen(contract)],  # by name only: never a URL or address
    }
    return {k: v for k, v in entry.items() if v not in ("", [])}
