"""`Authorization: Token …`: knox checks the token (digest, expiry); this adds what finops.models.ApiToken holds —
revocation, the scope (finops.core.access.token_allows) and the time of last use."""

import binascii
from hmac import compare_digest

from django.utils import timezone
from drf_spectacular.contrib.knox_auth_token import KnoxTokenScheme
from knox.auth import TokenAuthentication
from knox.crypto import hash_token
from knox.settings import CONSTANTS
from knox.signals import token_expired
from rest_framework import exceptions

from finops.core import access
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
        candidates = ApiToken.objects.filter(
            auth_token__token_key=secret[: CONSTANTS.TOKEN_KEY_LENGTH], revoked_at__isnull=True
        ).select_related("auth_token__user")
        for details in candidates:
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


class ScopedTokenScheme(KnoxTokenScheme):
    """The OpenAPI schema describes it as knox's token scheme (`Authorization: Token …`)."""

    target_class = "finops.api.authentication.ScopedTokenAuthentication"
