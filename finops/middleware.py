"""Times are stored in UTC; each person sees them in their own time zone (presentation only).

Billing days and periods stay UTC days everywhere (docs/architecture.md invariant 2): only date-times rendered
with Django's date filters move into the display zone.
"""

import zoneinfo

from django.conf import settings
from django.utils import timezone


def display_zone(user) -> zoneinfo.ZoneInfo:
    name = (getattr(user, "time_zone", "") or settings.FINOPS_DISPLAY_TIME_ZONE) if user.is_authenticated else settings.FINOPS_DISPLAY_TIME_ZONE
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return zoneinfo.ZoneInfo("UTC")


class DisplayTimeZoneMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        timezone.activate(display_zone(request.user))
        try:
            return self.get_response(request)
        finally:
            timezone.deactivate()


class AuditSourceMiddleware:
    """Changes made while answering a request are audited as coming from the API, the Django admin or the pages
    (finops.services.audit)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        from finops.services.audit import audit_source

        path = request.path_info
        source = "api" if path.startswith("/api/") else "admin" if path.startswith("/admin/") else "ui"
        with audit_source(source):
            return self.get_response(request)
