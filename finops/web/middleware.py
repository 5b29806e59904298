"""Times are stored in UTC; each person sees them in their own time zone (presentation only).

Billing days and periods stay UTC days everywhere (docs/architecture.md invariant 2): only date-times rendered
with Django's date filters move into the display zone.
"""

import zoneinfo

from django.conf import settings
from django.http import HttpResponseBadRequest
from django.template.loader import render_to_string
from django.utils import timezone


def display_zone(user) -> zoneinfo.ZoneInfo:
    name = (
        (getattr(user, "time_zone", "") or settings.FINOPS_DISPLAY_TIME_ZONE)
        if user.is_authenticated
        else settings.FINOPS_DISPLAY_TIME_ZONE
    )
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
    (finops.org.services.audit)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        from finops.org.services.audit import audit_source

        path = request.path_info
        source = "api" if path.startswith("/api/") else "admin" if path.startswith("/admin/") else "ui"
        with audit_source(source):
            return self.get_response(request)


class UnreadableQueryMiddleware:
    """A page's query parameter holding a NUL character answers 400 saying which (issue 26): no filter, search or
    date takes one, and Postgres refuses it in any text (a 500 on /scorecard/?team=%00, /audit/?q=%00). Undecodable
    bytes and lone surrogates arrive as U+FFFD (Django decodes the query with errors="replace") and stay harmless.
    The API answers its own 400s per parameter (finops.api.reported.StrictQuerySerializer, forms, serializers)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if not request.path_info.startswith("/api/"):
            for name, values in request.GET.lists():
                if "\x00" in name or any("\x00" in value for value in values):
                    return HttpResponseBadRequest(
                        render_to_string(
                            "finops/refused.html",
                            {
                                "title": "Bad address",
                                "message": f"The address's parameter {name.replace(chr(0), '?')!r} holds a NUL "
                                "character, "
                                "which no filter takes. Remove it and try again.",
                            },
                            request=request,
                        )
                    )
        return self.get_response(request)
