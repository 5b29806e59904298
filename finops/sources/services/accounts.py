"""Writes on provider accounts. Secrets go in encrypted and only ever come back out to a connector.

One write path for an account: the Sources pages (an API account connected, a file account created with its
first upload) call account_create / account_update; config apply calls account_apply; the Django admin calls
account_admin_save. Each change is audited once, the key only as "set" or "changed".
"""

from django.db import connection, transaction

from finops.core import crypto
from finops.models import Account, AuditEntry, DailySpend, GatewayCacheHit, LineSignature, Provider, UsageLine
from finops.org.services.audit import audit_record, audited_admin_delete, audited_admin_save, snapshot
from finops.sources.models import ConnectorKind
from finops.spend.services.team_rollup import team_rollup_rebuild

# The provider an API connector bills for, when the person connecting it does not name another.
CONNECTOR_PROVIDERS = {
    ConnectorKind.OPENAI_API: "openai",
    ConnectorKind.ANTHROPIC_API: "anthropic",
    ConnectorKind.OPENROUTER_API: "openrouter",
}
SYNC_INTERVAL_MIN, SYNC_INTERVAL_MAX = 5, 7 * 24 * 60  # the schedule looks every 5 minutes; at least weekly


class AccountInvalid(ValueError):
    """An account the product could not use (a name taken, an unknown connector); the message says which."""


def connector_provider(connector: str) -> Provider | None:
    slug = CONNECTOR_PROVIDERS.get(connector)
    return Provider.objects.filter(slug=slug).first() if slug else None


@transaction.atomic
def account_create(
    *,
    name: str,
    connector: str,
    provider: Provider | None = None,
    base_url: str = "",
    secret: str = "",
    sync_interval_minutes: int = 60,
    enabled: bool = True,
    by=None,
) -> Account:
    """A new account; an API account's key is stored encrypted in the same transaction (both or neither)."""
    if connector not in ConnectorKind.values:
        raise AccountInvalid(f"unknown connector {connector!r}")
    if Account.objects.filter(name=name).exists():
        raise AccountInvalid(f"an account named {name!r} exists")
    provider = provider or connector_provider(connector)
    if provider is None:
        raise AccountInvalid(
            f"connector {connector} needs a provider: pick who bills the usage (for a gateway, the requests whose "
            "records name no provider)"
        )
    if not SYNC_INTERVAL_MIN <= sync_interval_minutes <= SYNC_INTERVAL_MAX:
        raise AccountInvalid(f"the sync interval must be {SYNC_INTERVAL_MIN} to {SYNC_INTERVAL_MAX} minutes")
    account = Account.objects.create(
        name=name,
        provider=provider,
        connector=connector,
        base_url=base_url,
        enabled=enabled,
        sync_interval_minutes=sync_interval_minutes,
    )
    if secret:
        account_set_credentials(account=account, secret=secret)
    _audit(account, AuditEntry.Action.CREATED, None, by)
    return account


SNAPSHOT_FIELDS = (
    "name",
    "provider",
    "connector",
    "base_url",
    "enabled",
    "sync_interval_minutes",
    "credentials_env",
    "focus_services_include",
    "focus_services_exclude",
)


def account_snapshot(account: Account) -> dict:
    """What an audit entry shows of an account; `credentials` is masked by audit_record."""
    return snapshot(account, SNAPSHOT_FIELDS, credentials=account.credentials_ciphertext)


def _audit(account: Account, action: str, before: dict | None, by) -> None:
    audit_record(
        entity_type=AuditEntry.Entity.ACCOUNT,
        action=action,
        label=account.name,
        entity_id=account.pk,
        by=by,
        before=before,
        after=None if action == AuditEntry.Action.DELETED else account_snapshot(account),
        secrets=("credentials",),
    )


@transaction.atomic
def account_update(
    *, account: Account, base_url: str, sync_interval_minutes: int, enabled: bool, secret: str = "", by=None
) -> Account:
    """Connection settings of an API account. An empty `secret` keeps the stored key."""
    if not account.is_api:
        raise AccountInvalid(f"{account.name} is filled from files; it has no connection settings")
    if not SYNC_INTERVAL_MIN <= sync_interval_minutes <= SYNC_INTERVAL_MAX:
        raise AccountInvalid(f"the sync interval must be {SYNC_INTERVAL_MIN} to {SYNC_INTERVAL_MAX} minutes")
    before = account_snapshot(account)
    account.base_url, account.sync_interval_minutes, account.enabled = base_url, sync_interval_minutes, enabled
    account.save(update_fields=["base_url", "sync_interval_minutes", "enabled", "updated_at"])
    if secret:
        account_set_credentials(account=account, secret=secret)
    _audit(account, AuditEntry.Action.UPDATED, before, by)
    return account


def service_names(names) -> list[str]:
    """FOCUS ServiceNames as stored: trimmed, blank and repeated ones (case-insensitive) dropped, in order."""
    seen, kept = set(), []
    for name in names:
        name = str(name).strip()
        if name and name.lower() not in seen:
            seen.add(name.lower())
            kept.append(name)
    return kept


@transaction.atomic
def account_focus_services_set(*, account: Account, include, exclude, by=None) -> Account:
    """Which FOCUS services a file account imports besides, or never, its provider's LLM inference
    (ingest/connectors/focus/scope.py); applies to the next import of a file."""
    if account.connector != ConnectorKind.FOCUS_FILE:
        raise AccountInvalid(f"{account.name} does not read FOCUS files; it has no FOCUS services to choose")
    include, exclude = service_names(include), service_names(exclude)
    both = {n.lower() for n in include} & {n.lower() for n in exclude}
    if both:
        raise AccountInvalid(f"a service cannot be both included and excluded: {', '.join(sorted(both))}")
    before = account_snapshot(account)
    account.focus_services_include, account.focus_services_exclude = include, exclude
    account.save(update_fields=["focus_services_include", "focus_services_exclude", "updated_at"])
    _audit(account, AuditEntry.Action.UPDATED, before, by)
    return account


@transaction.atomic
def account_apply(*, name: str, values: dict, secret: str | None, by=None) -> str:
    """`apply_config`'s upsert of one account by name: `values` are its fields, `secret` the key from the
    environment (None: the file names none; the stored one stays). Returns created, updated or unchanged."""
    account = Account.objects.filter(name=name).first()
    before = account_snapshot(account) if account else None
    if account is None:
        account, outcome = Account.objects.create(name=name, **values), "created"
    else:
        changed = [field for field, value in values.items() if getattr(account, field) != value]
        for field in changed:
            setattr(account, field, values[field])
        if changed:
            account.save()
        outcome = "updated" if changed else "unchanged"
    if secret is not None and not _stored_secret_is(account, secret):
        account_set_credentials(account=account, secret=secret)
        outcome = "created" if outcome == "created" else "updated"
    if outcome != "unchanged":
        _audit(account, AuditEntry.Action.CREATED if before is None else AuditEntry.Action.UPDATED, before, by)
    return outcome


def _stored_secret_is(account: Account, secret: str) -> bool:
    try:
        return account_credentials_matches(account=account, secret=secret)
    except crypto.CredentialError:
        # Stored under a key that is gone (replaced, not rotated): the environment's secret is re-encrypted.
        return False


@transaction.atomic
def account_admin_save(*, account: Account, save, secret: str = "", by=None) -> None:
    """The Django admin's save of `account` (`save()` writes the form's fields), audited like the others."""

    def save_with_secret():
        save()
        if secret:
            account_set_credentials(account=account, secret=secret)

    audited_admin_save(
        account,
        save=save_with_secret,
        snapshot=account_snapshot,
        audit=lambda obj, action, before: _audit(obj, action, before, by),
    )


@transaction.atomic
def account_admin_delete(*, account: Account, by=None) -> None:
    # The days the account has spend on: its daily and monthly rollup rows go with it (Django cascades their keys),
    # the overview's rollup has no account and is re-summed for those days from what DailySpend keeps.
    days = set(DailySpend.objects.filter(account=account).values_list("day", flat=True).distinct())
    _usage_delete(account)
    audited_admin_delete(
        account, snapshot=account_snapshot, audit=lambda obj, action, before: _audit(obj, action, before, by)
    )
    team_rollup_rebuild(days=days)


def _usage_delete(account: Account) -> None:
    """The account's usage lines, gateway cache hits and line signatures, each deleted in one statement before the
    account's own cascade: lines and cache hits are the only rows that point at its signatures, and Django's cascade
    loads every signature as a model instance to find them (a gateway log of scattered keys leaves a signature per
    line: hundreds of thousands). The signatures have no index by account (migration 0036): one scan of the table."""
    UsageLine.objects.filter(account=account).delete()  # nothing points at a line: one DELETE
    GatewayCacheHit.objects.filter(account=account).delete()  # likewise
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {LineSignature._meta.db_table} WHERE account_id = %s", [account.id])


def account_set_credentials(*, account: Account, secret: str) -> None:
    """Store a new key (encrypted). Not audited on its own: the account write that calls it is."""
    account.credentials_ciphertext = crypto.encrypt(secret) if secret else ""
    account.credentials_hint = crypto.hint(secret) if secret else ""
    account.save(update_fields=["credentials_ciphertext", "credentials_hint", "updated_at"])


def account_credentials_matches(*, account: Account, secret: str) -> bool:
    """Whether the stored secret is `secret` (config apply skips a rewrite when nothing changed)."""
    if not account.credentials_ciphertext:
        return not secret
    return crypto.decrypt(account.credentials_ciphertext) == secret


def account_credentials(*, account: Account) -> str:
    """The plain secret, for a connector's request header only: never log or render it."""
    if not account.credentials_ciphertext:
        return ""
    return crypto.decrypt(account.credentials_ciphertext)
