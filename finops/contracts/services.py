"""Writes on provider contracts: the ONE path used by the API, `apply_config` (and the contract pages).

Every field is validated here and every error names its field (`ContractInvalid.errors`: {field: message}), all
of them at once, so each caller shows them its own way (a 400 body, a config line naming the entry, a form).
The provider is named by its slug and accounts by their names, as people write them (objects are accepted too).

Renewing in place (`contract_renew`) archives the current term as a ContractTerm before the new one is set, so
the old term's dates, commitment and (from the rollup over those dates) consumption stay visible. Editing the
current term's dates (`contract_update`) archives nothing: it corrects the term, it does not start a new one.

Who may write is finops.core.access's rule: admins (finance reads contracts, members do not see them).
`by=None` is config as code: the file is trusted like a migration, as for every other section.
"""

import datetime as dt
from collections.abc import Iterable
from decimal import Decimal, InvalidOperation

from django.core.exceptions import PermissionDenied, ValidationError
from django.core.validators import URLValidator, validate_email
from django.db import transaction

from finops.alerts.services.channels import channels_choose, channels_resolve
from finops.contracts.models import default_notice_alert_days
from finops.core import access
from finops.core.reporting_period import BOUNDS_ERROR, EARLIEST, LATEST
from finops.core.text import name_check
from finops.models import Account, AuditEntry, CommitmentBasis, Contract, ContractTerm, Provider
from finops.org.services.audit import audit_record, json_value
from finops.prices.iso4217 import CURRENCIES

AMOUNT_MAX = Decimal(10) ** 15
RENEWAL_TERM_MONTHS_MAX = 120
NOTICE_ALERT_DAYS_MAX = 3660
TERM_FIELDS = ("start", "end", "commitment", "commitment_basis", "prepaid")
FIELDS = (
    "name",
    "provider",
    "accounts",
    *TERM_FIELDS,
    "currency",
    "discount_pct",
    "auto_renew",
    "renewal_term_months",
    "notice_days",
    "notice_alert_days",
    "owner",
    "notes",
    "document_url",
    "channels",
)
DEFAULTS = {
    "accounts": [],
    "commitment_basis": CommitmentBasis.TERM,
    "prepaid": Decimal(0),
    "currency": "USD",
    "discount_pct": Decimal(0),
    "auto_renew": False,
    "renewal_term_months": 12,
    "notice_days": 60,
    "notice_alert_days": None,
    "owner": "",
    "notes": "",
    "document_url": "",
}


class ContractInvalid(Exception):
    def __init__(self, errors: dict[str, str]):
        super().__init__("; ".join(f"{name}: {message}" for name, message in errors.items()))
        self.errors = errors


def _may_write(by) -> None:
    if by is not None and not access.can_manage_contracts(by):
        raise PermissionDenied("Only admins change contracts.")


@transaction.atomic
def contract_create(*, by, **fields) -> Contract:
    _known(fields)
    _may_write(by)
    chosen, fields = _chosen(fields, by), {k: v for k, v in fields.items() if k != "channels"}
    values = {**DEFAULTS, **{name: None for name in ("name", "provider", "start", "end", "commitment")}, **fields}
    contract = Contract()
    cleaned = _clean(contract, values, chosen)
    _set(contract, cleaned)
    if chosen is not None:
        channels_choose(contract, chosen)
    _audit(contract, AuditEntry.Action.CREATED, None, by)
    return contract


@transaction.atomic
def contract_update(*, contract: Contract, by, **fields) -> Contract:
    """Change the given fields; the others stay. New dates correct the current term (nothing is archived)."""
    _known(fields)
    _may_write(by)
    chosen, fields = _chosen(fields, by), {k: v for k, v in fields.items() if k != "channels"}
    before, audited = contract_snapshot(contract), contract_audit_snapshot(contract)
    cleaned = _clean(contract, {**contract_values(contract), **fields}, chosen)
    _set(contract, cleaned, save=False)
    changed = contract_snapshot(contract) != before
    contract._pending_accounts = None
    if changed:  # saving an unchanged contract would only move updated_at
        _set(contract, cleaned)
        _audit(contract, AuditEntry.Action.UPDATED, audited, by)
    if chosen is not None:
        channels_choose(contract, chosen)
    return contract


def _chosen(fields: dict, by):
    """The channels the contract chooses (None: not given, the chosen ones stay), or the error on `channels`."""
    if fields.get("channels") is None:
        return None
    try:
        return channels_resolve(fields["channels"], by=by)
    except ValidationError as exc:
        return ValidationError(" ".join(exc.message_dict["channels"]))


@transaction.atomic
def contract_renew(
    *, contract: Contract, by, start, end, commitment=None, commitment_basis=None, prepaid=None, **fields
) -> Contract:
    """A new term in place: the current term is archived as a ContractTerm, then [start, end) and the given
    commitment (default: the current one, on the same basis) become the contract's term. The new term starts on
    or after the current term's end; other fields (discount_pct, notice_days …) may change with it."""
    _known(fields)
    _may_write(by)
    term = {
        "start": start,
        "end": end,
        "commitment": contract.commitment if commitment is None else commitment,
        "commitment_basis": contract.commitment_basis if commitment_basis is None else commitment_basis,
        "prepaid": Decimal(0) if prepaid is None else prepaid,
    }
    values = {**contract_values(contract), **fields, **term}
    errors = {}
    try:
        cleaned = _clean(contract, values)
    except ContractInvalid as exc:
        errors, cleaned = dict(exc.errors), None
    new_start = cleaned["start"] if cleaned else _date_or_none(start)
    if new_start is not None and new_start < contract.end and "start" not in errors:
        errors["start"] = (
            f"A renewal starts on or after the current term's end ({contract.end.isoformat()}); "
            "to correct the current term, edit its dates instead."
        )
    if errors:
        raise ContractInvalid(errors)
    audited = contract_audit_snapshot(contract)
    ContractTerm.objects.create(contract=contract, **{name: getattr(contract, name) for name in TERM_FIELDS})
    _set(contract, cleaned)
    _audit(contract, AuditEntry.Action.UPDATED, audited, by)  # a renewal: the new term's dates and commitment
    return contract


@transaction.atomic
def contract_delete(*, contract: Contract, by) -> None:
    """The contract, its past terms and its alert history go."""
    _may_write(by)
    before, contract_id = contract_audit_snapshot(contract), contract.pk
    contract.delete()
    contract.pk = contract_id
    _audit(contract, AuditEntry.Action.DELETED, before, by)


def contract_audit_snapshot(contract: Contract) -> dict:
    """What the audit log shows of a contract: every field, its accounts by name."""
    return {name: json_value(value) for name, value in contract_values(contract).items()} | {
        "provider": contract.provider.slug if contract.provider_id else None,
        "accounts": sorted(a.name for a in (contract.accounts.all() if contract.pk else [])),
    }


def _audit(contract: Contract, action: str, before: dict | None, by) -> None:
    audit_record(
        entity_type=AuditEntry.Entity.CONTRACT,
        action=action,
        label=contract.name,
        entity_id=contract.pk,
        by=by,
        before=before,
        after=None if action == AuditEntry.Action.DELETED else contract_audit_snapshot(contract),
    )


def contract_values(contract: Contract) -> dict:
    """The contract's fields as the service takes them."""
    return {
        "name": contract.name,
        "provider": contract.provider,
        "accounts": list(contract.accounts.all()) if contract.pk else [],
        **{name: getattr(contract, name) for name in FIELDS if name not in ("name", "provider", "accounts")},
    }


def contract_snapshot(contract: Contract) -> tuple:
    """Every value a write can change, to tell a change from a restatement."""
    accounts = getattr(contract, "_pending_accounts", None)
    if accounts is None:
        accounts = list(contract.accounts.all()) if contract.pk else []
    return (
        contract.name,
        contract.provider_id,
        sorted(a.id for a in accounts),
        contract.start,
        contract.end,
        Decimal(contract.commitment),
        contract.commitment_basis,
        Decimal(contract.prepaid),
        contract.currency,
        Decimal(contract.discount_pct),
        contract.auto_renew,
        contract.renewal_term_months,
        contract.notice_days,
        list(contract.notice_alert_days),
        contract.owner,
        contract.notes,
        contract.document_url,
    )


def _known(fields: dict) -> None:
    unknown = set(fields) - set(FIELDS)
    if unknown:
        raise TypeError(f"unknown contract fields: {sorted(unknown)}")


def _set(contract: Contract, cleaned: dict, *, save: bool = True) -> None:
    accounts = cleaned.pop("accounts", None) if save else cleaned.get("accounts")
    for name, value in cleaned.items():
        if name != "accounts":
            setattr(contract, name, value)
    contract._pending_accounts = accounts
    if save:
        contract.save()
        contract.accounts.set(accounts)
        contract._pending_accounts = None


# --- validation ---


def _clean(contract: Contract, fields: dict, chosen=None) -> dict:
    """Every field validated (every error collected) into the values to set; `chosen` the channels' error, if any."""
    errors: dict[str, str] = {}
    if isinstance(chosen, ValidationError):
        errors["channels"] = " ".join(chosen.messages)

    def check(name, clean, *args):
        try:
            return clean(fields[name], *args)
        except ValidationError as exc:
            errors[name] = " ".join(exc.messages)
            return None

    cleaned = {
        "name": check("name", _name),
        "provider": check("provider", _provider),
        "start": check("start", _date),
        "end": check("end", _date),
        "commitment": check("commitment", _amount),
        "commitment_basis": check("commitment_basis", _choice, CommitmentBasis.values),
        "prepaid": check("prepaid", _amount),
        "currency": check("currency", _currency),
        "discount_pct": check("discount_pct", _percent),
        "auto_renew": check("auto_renew", _bool),
        "renewal_term_months": check("renewal_term_months", _whole, 1, RENEWAL_TERM_MONTHS_MAX),
        "notice_days": check("notice_days", _whole, 0, None),
        "notice_alert_days": check("notice_alert_days", _alert_days),
        "owner": check("owner", _owner),
        "notes": check("notes", _text),
        "document_url": check("document_url", _url),
    }
    name = cleaned["name"]
    if name and Contract.objects.filter(name=name).exclude(pk=contract.pk).exists():
        errors["name"] = f"A contract named “{name}” exists; contract names are unique."
    if cleaned["provider"] is not None:
        cleaned["accounts"] = check("accounts", _accounts, cleaned["provider"])
    start, end = cleaned["start"], cleaned["end"]
    archived_end = _archived_end(contract)
    if start and archived_end and start < archived_end:
        # Terms never overlap: an old file (or an edit) must not bring an archived term back as the current one.
        errors["start"] = (
            f"The contract was renewed: its past terms run to {archived_end.isoformat()}, so the current "
            f"term starts on or after that day (export_config prints the current term)."
        )
    for name, day in (("start", start), ("end", end)):
        # A term runs within the years the product reports on: a typo such as 0026 or 9999 is not a term.
        if day and not EARLIEST <= day <= LATEST:
            errors[name] = f"{day.isoformat()} is out of range. {BOUNDS_ERROR}"
    if start and end and "start" not in errors and "end" not in errors:
        if end <= start:
            errors["end"] = (
                f"The term ends after it starts: end {end.isoformat()} is not after start {start.isoformat()}."
            )
        elif cleaned["notice_days"] is not None and cleaned["notice_days"] > (end - start).days:
            errors["notice_days"] = (
                f"A notice period of {cleaned['notice_days']} days is longer than the term ({(end - start).days} days)."
            )
    if errors:
        raise ContractInvalid(errors)
    return cleaned


def _archived_end(contract: Contract) -> dt.date | None:
    if contract.pk is None:
        return None
    return max((term.end for term in contract.past_terms.all()), default=None)


def _date_or_none(value):
    try:
        return _date(value)
    except ValidationError:
        return None


def _name(value) -> str:
    if not (isinstance(value, str) or value is None):
        raise ValidationError("Must be text.")
    name = (value or "").strip()
    if not name:
        raise ValidationError("Give the contract a name (it is how alerts and pages call it).")
    name_check(name)
    limit = Contract._meta.get_field("name").max_length
    if len(name) > limit:
        raise ValidationError(f"At most {limit} characters.")
    return name


def _provider(value) -> Provider:
    if isinstance(value, Provider):
        return value
    found = Provider.objects.filter(slug=value.strip()).first() if isinstance(value, str) and value.strip() else None
    if found is None:
        raise ValidationError(
            f"No provider with the slug {value!r}."
            if value not in (None, "")
            else "Name the provider by its slug (e.g. openai)."
        )
    return found


def _accounts(value, provider: Provider) -> list[Account]:
    """The accounts covered, each one of the provider's; none means every account of the provider."""
    if value in (None, ""):
        return []
    if isinstance(value, (str, Account)):
        value = [value]
    if not isinstance(value, Iterable):
        raise ValidationError("Give a list of account names.")
    found, problems = [], []
    for item in value:
        account = (
            item
            if isinstance(item, Account)
            else (Account.objects.filter(name=item.strip()).first() if isinstance(item, str) else None)
        )
        if account is None:
            problems.append(f"No account named {item!r}.")
        elif account.provider_id != provider.id:
            problems.append(f"The account {account.name!r} is not one of {provider.slug}'s accounts.")
        elif account not in found:
            found.append(account)
    if problems:
        raise ValidationError(" ".join(problems))
    return found


def _date(value) -> dt.date:
    if isinstance(value, dt.datetime):
        raise ValidationError("Give a UTC day (2026-01-01), not a time.")
    if isinstance(value, dt.date):
        return value
    if isinstance(value, str):
        try:
            return dt.date.fromisoformat(value.strip())
        except ValueError:
            pass
    raise ValidationError("Give a day as YYYY-MM-DD." if value not in (None, "") else "Required: a day as YYYY-MM-DD.")


def _amount(value) -> Decimal:
    if value is None or value == "":
        raise ValidationError('Give an amount as a decimal string, e.g. "120000".')
    if isinstance(value, (bool, float)):
        raise ValidationError('Give the amount as a decimal string ("120000.00"), not a float.')
    try:
        amount = value if isinstance(value, Decimal) else Decimal(str(value).strip().replace(",", ""))
    except InvalidOperation:
        raise ValidationError(f"{value!r} is not a decimal number.") from None
    if not amount.is_finite():
        raise ValidationError(f"{value!r} is not a decimal number.")
    if amount < 0:
        raise ValidationError("Must not be negative.")
    if amount >= AMOUNT_MAX:
        raise ValidationError("Too large.")
    return amount


def _percent(value) -> Decimal:
    try:
        amount = _amount(value)
    except ValidationError as exc:
        if "negative" in " ".join(exc.messages):
            raise ValidationError("A discount is a percentage from 0 to 100.") from None
        raise
    if amount > 100:
        raise ValidationError("A discount is a percentage from 0 to 100.")
    if amount != amount.quantize(Decimal("0.0001")):
        raise ValidationError("At most 4 decimal places.")
    return amount


def _choice(value, choices) -> str:
    if value not in choices:
        raise ValidationError(f"Unknown value {value!r}; one of: {', '.join(choices)}.")
    return value


def _currency(value) -> str:
    code = value.strip().upper() if isinstance(value, str) else None
    if not code or len(code) != 3 or not code.isalpha():
        raise ValidationError("Give a 3-letter ISO 4217 currency code, e.g. USD.")
    if code not in CURRENCIES:
        raise ValidationError(f"{code} is not an ISO 4217 currency code.")
    return code


def _bool(value) -> bool:
    if not isinstance(value, bool):
        raise ValidationError("Must be true or false.")
    return value


def _whole(value, low: int, high: int | None) -> int:
    if isinstance(value, bool) or not (isinstance(value, int) or (isinstance(value, str) and value.strip().isdigit())):
        raise ValidationError("Must be a whole number.")
    number = int(value)
    if number < low or (high is not None and number > high):
        raise ValidationError(f"Must be from {low} to {high}." if high is not None else f"Must be at least {low}.")
    return number


def _alert_days(value) -> list[int]:
    """Whole days before the notice deadline, each positive, deduplicated, largest first; none: the default."""
    if value is None or value == "":
        return default_notice_alert_days()
    if isinstance(value, str):
        value = [part for part in value.replace(";", ",").split(",") if part.strip()]
    if not isinstance(value, Iterable):
        raise ValidationError("Give a list of whole days, e.g. 90, 30, 7.")
    found = set()
    for item in value:
        text = item.strip() if isinstance(item, str) else item
        if isinstance(text, bool) or not (isinstance(text, int) or (isinstance(text, str) and text.isdigit())):
            raise ValidationError(f"{item!r} is not a whole number of days.")
        number = int(text)
        if not 1 <= number <= NOTICE_ALERT_DAYS_MAX:
            raise ValidationError(f"{number} is not a positive number of days (1–{NOTICE_ALERT_DAYS_MAX}).")
        found.add(number)
    return sorted(found, reverse=True)


def _owner(value) -> str:
    text = _text(value).strip()
    if text:
        try:
            validate_email(text)
        except ValidationError:
            raise ValidationError(f"{text!r} is not an email address.") from None
    return text


def _text(value) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValidationError("Must be text.")
    return value


def _url(value) -> str:
    url = _text(value).strip()
    if url:
        URLValidator(schemes=["http", "https"], message="Must be an http(s) URL.")(url)
        if len(url) > Contract._meta.get_field("document_url").max_length:
            raise ValidationError("Too long.")
    return url
