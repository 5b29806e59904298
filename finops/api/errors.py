"""The API's answers to what went wrong outside a view's own checks (REST_FRAMEWORK's EXCEPTION_HANDLER).

- A 401 counts against the anonymous rate (finops.api.throttling): past it, 429 with Retry-After.
- The cache or the broker (Redis) unreachable: a JSON 503 with Retry-After, never Django's HTML 500. The throttles
  read their counters from the cache, so without Redis no API call could be answered at all (issue 26).
"""

import logging

import redis.exceptions
from kombu.exceptions import OperationalError as BrokerDown
from rest_framework import status
from rest_framework.exceptions import AuthenticationFailed, NotAuthenticated, Throttled
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from finops.api.throttling import AnonRate

log = logging.getLogger(__name__)

RETRY_AFTER_SECONDS = 30
SERVICES_DOWN = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, BrokerDown)


DOWN = (
    "The service is briefly unavailable (its cache and task queue, Redis, cannot be reached); nothing was "
    "changed. Try again shortly."
)


def services_down_response(detail: str = DOWN) -> Response:
    return Response(
        {"detail": detail},
        status=status.HTTP_503_SERVICE_UNAVAILABLE,
        headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
    )


def exception_handler(exc, context):
    if isinstance(exc, SERVICES_DOWN):
        log.error("API call answered 503: Redis unreachable (%s)", exc)
        return services_down_response()
    if isinstance(exc, NotAuthenticated | AuthenticationFailed):
        request, view = context["request"], context["view"]
        throttle = AnonRate()
        try:
            allowed = throttle.allow_request(request, view)
        except SERVICES_DOWN:
            allowed = True  # the 401 stands; the rate cannot be counted without the cache
        if not allowed:
            exc = Throttled(throttle.wait())
    return drf_exception_handler(exc, context)
