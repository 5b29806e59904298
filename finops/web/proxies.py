"""The address a request really came from, behind the reverse proxies this deployment trusts (issue 26).

Behind a proxy every request connects from the proxy's address, so a lockout or a rate keyed on REMOTE_ADDR is one
lockout for the whole company. FINOPS_TRUSTED_PROXIES says how many proxies stand in front of the app (the one
reverse proxy docker-compose expects: 1; a load balancer in front of it: 2). Each proxy appends the address it
received the request from to X-Forwarded-For, so the client is the Nth entry from the right; anything left of it
was written by the client and is never believed. 0 (the default: the app is reached directly) ignores the header
altogether.

The one reading for django-axes' login lockout (AXES_CLIENT_IP_CALLABLE) and the API's throttles
(finops.api.throttling).
"""

import ipaddress

from django.conf import settings


def client_ip(request) -> str:
    remote = request.META.get("REMOTE_ADDR", "")
    trusted = settings.FINOPS_TRUSTED_PROXIES
    if trusted <= 0:
        return remote
    hops = [hop.strip() for hop in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if hop.strip()]
    if not hops:
        return remote  # not through the proxy (a health probe on the private network)
    candidate = hops[-min(trusted, len(hops))]
    try:
        return str(ipaddress.ip_address(candidate))
    except ValueError:  # a proxy that passed on something that is no address: keep the one that connected
        return remote
