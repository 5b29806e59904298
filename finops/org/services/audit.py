"""The one write path of the audit log (finops.models.AuditEntry): each entity's service calls audit_record once
per change it makes, with a snapshot from before and after, so a page, the API, `apply_config`, a command and the
Django admin are all recorded alike.

Who: the `by` user when there is one; otherwise the source ("config", "cli", "system"). Which path: the request
middleware (finops.web.middleware.AuditSourceMiddleware) says "ui", "api" or "admin"; `apply_config` and the commands
wrap their work in `audit_source(...)`; a service may also name its source outright (rules take `source=`).

Secrets: a snapshot carries a secret field's stored ciphertext only so that a change can be told from none (Fernet
ciphertexts differ on every encryption, so a new ciphertext means a new secret); audit_record replaces it before
anything is stored: "set" or "" for a snapshot, "changed" in `after` when it changed.
"""

import contextlib
import contextvars
import datetime as dt
from decimal import Decimal

from django.db import models

from finops.models import AuditEntry

MASK_SET, MASK_CHANGED = "set", "changed"

_source: contextvars.ContextVar[str] = contextvars.ContextVar("audit_source", default="system")


@contextlib.contextmanager
def audit_source(name: str):
    """Changes made inside are recorded as coming from `name` (unless a service names its own source)."""
    token = _source.set(name)
    try:
        yield
    finally:
        _source.reset(token)


def current_source() -> str:
    return _source.get()


def json_value(value):
    """A snapshot value as JSON: money as its exact decimal text (normalised), dates ISO, a related row by its name."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, Decimal):
        # Normalised: 100, 100.0 and 100.000000 (the database's scale) are one amount and must not read as a change.
        return format(value.normalize(), "f") if value.is_finite() else str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.UTC).isoformat(timespec="seconds")
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, models.Model):
        return str(value)
    if isinstance(value, dict):
        return {str(k): json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [json_value(v) for v in value]
    return str(value)


def snapshot(obj, fields, **extra) -> dict:
    """{field: JSON value} of `obj`'s `fields`, plus `extra` computed by the caller."""
    return {name: json_value(getattr(obj, name)) for name in fields} | {k: json_value(v) for k, v in extra.items()}


def _masked(before: dict | None, after: dict | None, secrets) -> tuple[dict | None, dict | None]:
    before, after = (dict(before) if before is not None else None), (dict(after) if after is not None else None)
    for name in secrets:
        old = before.get(name) if before is not None else None
        new = after.get(name) if after is not None else None
        if before is not None:
            before[name] = MASK_SET if old else ""
        if after is not None:
            after[name] = MASK_CHANGED if before is not None and old != new else (MASK_SET if new else "")
    return before, after


def changed_fields(before: dict | None, after: dict | None) -> list[str]:
    before, after = before or {}, after or {}
    return sorted(name for name in before.keys() | after.keys() if before.get(name) != after.get(name))


def audit_record(
    *,
    entity_type: str,
    action: str,
    label: str,
    by=None,
    entity_id=None,
    before: dict | None = None,
    after: dict | None = None,
    secrets=(),
    source: str | None = None,
) -> AuditEntry | None:
    """Record one change. An update whose snapshots are equal changed nothing and records nothing (None).
    Called inside the service's transaction: a change that rolls back leaves no entry."""
    changed = changed_fields(before, after)
    if action == AuditEntry.Action.UPDATED and not changed:
        return None
    before, after = _masked(before, after, secrets)
    source = source or current_source()
    user = by if by is not None and getattr(by, "is_authenticated", False) else None
    return AuditEntry.objects.create(
        actor=user,
        actor_label=user.get_username() if user else source,
        source=source,
        action=action,
        entity_type=entity_type,
        entity_id="" if entity_id is None else str(entity_id),
        entity_label=str(label)[:255],
        before=before,
        after=after,
        changed=changed,
    )


def audited_admin_save(obj, *, save, snapshot, audit) -> None:
    """A Django admin save of `obj` (`save()` writes the form's fields), audited once as created or updated:
    `snapshot(obj)` before and after, `audit(obj, action, before)` the entity's own record."""
    before = snapshot(type(obj).objects.get(pk=obj.pk)) if obj.pk else None
    save()
    audit(obj, AuditEntry.Action.CREATED if before is None else AuditEntry.Action.UPDATED, before)


def audited_admin_delete(obj, *, snapshot, audit) -> None:
    """A Django admin delete of `obj`, audited with what it was (its id kept for the entry)."""
    before = snapshot(obj)
    pk = obj.pk
    obj.delete()
    obj.pk = pk
    audit(obj, AuditEntry.Action.DELETED, before)
