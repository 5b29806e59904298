"""`Authorization: Token …`: knox checks the token (digest, expiry); this adds what finops.models.ApiToken holds —
revocation, the scope (finops.core.access.token_allows) and the time of last use."""

import binascii
from hmac import compare_digest

from django.db import connections, router
from django.utils import timezone
from drf_spectacular.contrib.knox_auth_token import KnoxTokenScheme
from knox.auth import TokenAuthentication
from knox.crypto import hash_token
from knox.settings import CONSTANTS
from knox.signals import token_expired
from rest_framework import exceptions

from finops.core import access
from finops.core.plain_rows import columns, instance
from finops.models import ApiToken
from finops.org.services.api_tokens import api_token_touch

READ_ONLY_REFUSAL = (
    "This API token is read-only: it may read (GET, HEAD, OPTIONS) but not change anything. "
    "Create a read-write token on the API tokens page to make changes."
)
INVALID = "Invalid token."


class ScopedTokenAuthentication(TokenAuthentication):
    def authenticate(self, request):
        found = super().authenticate(request)
        if found is None:
            return None
        user, auth_token = found
        token = auth_token.details  # read with it (authenticate_credentials)
        if not access.token_allows(token, request.method):
            raise exceptions.PermissionDenied(READ_ONLY_REFUSAL)
        api_token_touch(token=token)
        return user, auth_token

    def authenticate_credentials(self, token: bytes):
        """knox's check (the candidates by prefix, an expired one deleted and skipped, the digest compared, the user
        active) on the token, its ApiToken (not revoked) and its user read in one query: knox's own read them in
        three on every request (the token with its user, the user's other tokens, then the ApiToken). Those other
        tokens were read only to delete any that had expired; an expired token is refused either way, and deleted
        when it is presented, as before."""
        secret = token.decode("utf-8")
        for details in candidates(secret[: CONSTANTS.TOKEN_KEY_LENGTH]):
            auth_token = details.auth_token
            if auth_token.expiry is not None and auth_token.expiry < timezone.now():
                username = auth_token.user.get_username()
                auth_token.delete()
                token_expired.send(sender=self.__class__, username=username, source="auth_token")
                continue
            try:
                digest = hash_token(secret)
            except (TypeError, binascii.Error):
                raise exceptions.AuthenticationFailed(INVALID) from None
            if compare_digest(digest, auth_token.digest):
                return self.validate_user(auth_token)
        # A knox token without its ApiToken (made around api_token_create) or a revoked one is no token at all.
        raise exceptions.AuthenticationFailed(INVALID)


def candidates(token_key: str) -> list[ApiToken]:
    """The ApiTokens not revoked whose knox token has this prefix, newest first, each with its knox token and that
    token's user: what `ApiToken.objects.filter(auth_token__token_key=…, revoked_at__isnull=True)
    .select_related("auth_token__user")` returns, read with one plain SELECT (finops/core/plain_rows.py). Every API
    call makes this read; through the ORM it cost 1.16 ms of CPU, most of it building the three-table query
    (issue 27)."""
    auth_token_model = ApiToken._meta.get_field("auth_token").related_model
    user_model = auth_token_model._meta.get_field("user").related_model
    using = router.db_for_read(ApiToken)
    connection = connections[using]
    quote = connection.ops.quote_name

    def column(model, name):
        return quote(model._meta.get_field(name).column)

    details, knox, user = (model._meta.db_table for model in (ApiToken, auth_token_model, user_model))
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {columns(ApiToken, details, connection)}, {columns(auth_token_model, knox, connection)}, "
            f"{columns(user_model, user, connection)} FROM {quote(details)} "
            f"JOIN {quote(knox)} ON {quote(knox)}.{column(auth_token_model, 'digest')} = "
            f"{quote(details)}.{column(ApiToken, 'auth_token')} "
            f"JOIN {quote(user)} ON {quote(user)}.{quote(user_model._meta.pk.column)} = "
            f"{quote(knox)}.{column(auth_token_model, 'user')} "
            f"WHERE {quote(knox)}.{column(auth_token_model, 'token_key')} = %s "
            f"AND {quote(details)}.{column(ApiToken, 'revoked_at')} IS NULL "
            f"ORDER BY {quote(details)}.{column(ApiToken, 'created_at')} DESC, "
            f"{quote(details)}.{quote(ApiToken._meta.pk.column)} DESC",
            [token_key],
        )
        rows = cursor.fetchall()
    found = []
    widths = [len(model._meta.concrete_fields) for model in (ApiToken, auth_token_model)]
    for row in rows:
        api_token = instance(ApiToken, row[: widths[0]], using, connection)
        auth_token = instance(auth_token_model, row[widths[0] : sum(widths)], using, connection)
        owner = instance(user_model, row[sum(widths) :], using, connection)
        # The related objects as select_related leaves them: each side of the one-to-one knows the other.
        ApiToken._meta.get_field("auth_token").set_cached_value(api_token, auth_token)
        auth_token_model._meta.get_field("details").set_cached_value(auth_token, api_token)
        auth_token_model._meta.get_field("user").set_cached_value(auth_token, owner)
        found.append(api_token)
    return found


class ScopedTokenScheme(KnoxTokenScheme):
    """The OpenAPI schema describes it as knox's token scheme (`Authorization: Token …`)."""

    target_class = "finops.api.authentication.ScopedTokenAuthentication"
