"""`Authorization: Token …`: knox checks the token (digest, expiry); this adds what finops.models.ApiToken holds —
revocation, the scope (finops.core.access.token_allows) and the time of last use."""

from drf_spectacular.contrib.knox_auth_token import KnoxTokenScheme
from knox.auth import TokenAuthentication
from rest_framework import exceptions

from finops.core import access
from finops.models import ApiToken
from finops.org.services.api_tokens import api_token_touch

READ_ONLY_REFUSAL = (
    "This API token is read-only: it may read (GET, HEAD, OPTIONS) but not change anything. "
    "Create a read-write token on the API tokens page to make changes."
)


class ScopedTokenAuthentication(TokenAuthentication):
    def authenticate(self, request):
        found = super().authenticate(request)
        if found is None:
            return None
        user, auth_token = found
        token = ApiToken.objects.filter(auth_token=auth_token, revoked_at__isnull=True).first()
        if token is None:
            raise exceptions.AuthenticationFailed("Invalid token.")
        if not access.token_allows(token, request.method):
            raise exceptions.PermissionDenied(READ_ONLY_REFUSAL)
        api_token_touch(token=token)
        return user, auth_token


class ScopedTokenScheme(KnoxTokenScheme):
    """The OpenAPI schema describes it as knox's token scheme (`Authorization: Token …`)."""

    target_class = "finops.api.authentication.ScopedTokenAuthentication"
