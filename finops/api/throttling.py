"""The API's rates (REST_FRAMEWORK's DEFAULT_THROTTLE_RATES), per user and per anonymous client address.

Addresses are the real client's behind trusted proxies (finops.web.proxies), never the proxy's: one noisy client slows
down alone. Anonymous calls are refused 401 by the permission check, which DRF runs *before* its throttles, so the
anonymous rate is applied in the exception handler (finops.api.errors) to every 401: past it a caller gets 429 with
Retry-After instead of another 401 (docs/security.md, "Rate limits").
"""

from rest_framework.throttling import AnonRateThrottle, UserRateThrottle

from finops.web.proxies import client_ip


class ClientAddressMixin:
    def get_ident(self, request):
        return client_ip(request)


class UserRate(ClientAddressMixin, UserRateThrottle):
    pass


class AnonRate(ClientAddressMixin, AnonRateThrottle):
    pass
