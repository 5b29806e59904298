"""Writes on API tokens: the one path the tokens page, `create_api_token` and anything else use.

A token is a django-rest-knox AuthToken (knox stores a SHA-512 digest and an 8-character prefix; the token itself
is returned once, by api_token_create, and never stored) plus an ApiToken beside it: name, description, scope,
expiry, last use, revocation. Read-only tokens may only read; read-write tokens may do what their user's role
allows, never more (the API's permissions look at the user, not at the token). Decisions: docs/security.md.
"""

import datetime as dt

from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from knox.models import AuthToken

from finops.core import access
from finops.models import ApiToken, AuditEntry, User

from .audit import audit_record, snapshot

MIN_DAYS, MAX_DAYS = 1, 3650  # ten years at most: a token that never expires is a leaked token that never expires
DEFAULT_DAYS = 90
PREFIX_LENGTH = 8
LAST_USED_EVERY = dt.timedelta(minutes=1)  # at most one write per token a minute, however busy the client


class ApiTokenInvalid(ValueError):
    def __init__(self, errors: dict[str, str]):
        super().__init__("; ".join(f"{name}: {message}" for name, message in errors.items()))
        self.errors = errors


def api_token_snapshot(token: ApiToken) -> dict:
    return snapshot(
        token, ("name", "description", "scope", "prefix", "expires_at", "revoked_at"), user=token.user.get_username()
    )


def _audit(token: ApiToken, action: str, before: dict | None, by) -> None:
    audit_record(
        entity_type=AuditEntry.Entity.TOKEN,
        action=action,
        label=f"{token.user.get_username()}: {token}",
        entity_id=token.pk,
        by=by,
        before=before,
        after=api_token_snapshot(token),
    )


def _clean(*, name, description, scope, days) -> tuple[str, str, str, int]:
    errors = {}
    name = (name or "").strip() if isinstance(name, str) or name is None else ""
    if not name:
        errors["name"] = "Give the token a name that says where it is used (e.g. “billing export job”)."
    elif len(name) > 100:
        errors["name"] = "At most 100 characters."
    description = (description or "").strip()
    if len(description) > 255:
        errors["description"] = "At most 255 characters."
    if scope not in ApiToken.Scope.values:
        errors["scope"] = f"Must be one of: {', '.join(ApiToken.Scope.values)}."
    if isinstance(days, bool) or not isinstance(days, int) or not MIN_DAYS <= days <= MAX_DAYS:
        errors["days"] = f"Must be between {MIN_DAYS} and {MAX_DAYS} days (got {days})."
    if errors:
        raise ApiTokenInvalid(errors)
    return name, description, scope, days


@transaction.atomic
def api_token_create(
    *, user: User, name: str, scope: str = ApiToken.Scope.READ, days: int = DEFAULT_DAYS, description: str = "", by=None
) -> tuple[ApiToken, str]:
    """A new token for `user`; returns it and the secret, which exists nowhere else: show it once, then drop it.
    `by` is who asks (None from the command line): people make tokens for themselves, admins for anyone."""
    if by is not None and not access.can_manage_api_token_of(by, user):
        raise PermissionDenied("You may only create tokens for yourself.")
    name, description, scope, days = _clean(name=name, description=description, scope=scope, days=days)
    if not user.is_active:
        raise ApiTokenInvalid({"user": f"{user.get_username()} is inactive."})
    auth_token, secret = AuthToken.objects.create(user=user, expiry=dt.timedelta(days=days))
    token = ApiToken.objects.create(
        user=user,
        auth_token=auth_token,
        name=name,
        description=description,
        scope=scope,
        prefix=secret[:PREFIX_LENGTH],
        expires_at=auth_token.expiry,
    )
    _audit(token, AuditEntry.Action.CREATED, None, by)
    return token, secret


@transaction.atomic
def api_token_revoke(*, token: ApiToken, by=None) -> ApiToken:
    """The token stops working at once (its knox row goes); the ApiToken stays, marked revoked. Revoking twice
    changes nothing."""
    if by is not None and not access.can_manage_api_token_of(by, token.user):
        raise PermissionDenied("You may only revoke your own tokens.")
    token = ApiToken.objects.select_for_update().select_related("user").get(pk=token.pk)
    if token.revoked_at is not None:
        return token
    before = api_token_snapshot(token)
    if token.auth_token_id:
        AuthToken.objects.filter(digest=token.auth_token_id).delete()
    token.auth_token = None
    token.revoked_at = timezone.now()
    token.revoked_by = by if by is not None and by.is_authenticated else None
    token.save(update_fields=["auth_token", "revoked_at", "revoked_by"])
    _audit(token, AuditEntry.Action.REVOKED, before, by)
    return token


def api_token_touch(*, token: ApiToken) -> None:
    """Note a use (not audited: a use changes nothing). A conditional UPDATE, so concurrent calls write once."""
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at >= LAST_USED_EVERY:
        ApiToken.objects.filter(
            Q(last_used_at__isnull=True) | Q(last_used_at__lt=now - LAST_USED_EVERY), pk=token.pk
        ).update(last_used_at=now)
