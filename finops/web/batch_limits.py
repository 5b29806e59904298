"""How big one request's batch may be (issue 26): a byte limit refused before anything is read, and a row limit
refused before any row is validated — the same on the page and the API.

- Batches of outcome counts, reported metrics and eval scores (the workload page's CSV upload, POST
  /api/v1/outcomes, /metrics, /evals): at most FINOPS_MAX_BATCH_BYTES bytes (default 5 MiB) and FINOPS_MAX_BATCH_ROWS
  rows (default 10,000). They are validated and written within the request, so a larger one would hold a web
  worker for seconds and hundreds of MB. Larger batches: `manage.py import_outcomes` (no limit), or several requests.
- Usage exports (the Sources page's upload, POST /api/v1/accounts/<id>/imports): at most FINOPS_MAX_UPLOAD_BYTES
  (default 2 GiB); a worker streams them, so they have no row limit.

The byte limits are enforced by BatchSizeMiddleware from the request's Content-Length, before the CSRF check or
any parser reads the body (Django reads no more than Content-Length, so a body without one is empty): 413.
The row limit (`rows_check`) is enforced by the services for any writer but the operator's commands: 400.
"""

import json

from django.conf import settings
from django.http import HttpResponse
from django.template.loader import render_to_string
from django.urls import Resolver404, resolve, reverse

BATCH_URLS = {"workload-outcomes-upload", "api-outcome-list", "api-metric-list", "api-eval-list"}
UPLOAD_URLS = {"source-upload", "api-account-imports"}
BIGGER = (
    "Send larger batches in several requests, or load outcome counts with `manage.py import_outcomes` on the server"
)


def rows_refusal(count: int) -> str | None:
    """The message refusing a batch of `count` rows, or None when it is within FINOPS_MAX_BATCH_ROWS."""
    limit = settings.FINOPS_MAX_BATCH_ROWS
    if count <= limit:
        return None
    return f"the batch has {count:,} rows; one request takes at most {limit:,} (FINOPS_MAX_BATCH_ROWS). {BIGGER}."


def _limit_for(url_name: str) -> tuple[int, str] | None:
    if url_name in BATCH_URLS:
        return settings.FINOPS_MAX_BATCH_BYTES, "FINOPS_MAX_BATCH_BYTES"
    if url_name in UPLOAD_URLS:
        return settings.FINOPS_MAX_UPLOAD_BYTES, "FINOPS_MAX_UPLOAD_BYTES"
    return None


class BatchSizeMiddleware:
    """Answers 413 to a batch or an upload whose Content-Length is over its limit, before the body is read."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.method in ("POST", "PUT", "PATCH"):
            if (refused := self._refusal(request)) is not None:
                return refused
        return self.get_response(request)

    def _refusal(self, request) -> HttpResponse | None:
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return None  # Django answers a bad Content-Length itself
        # Within both limits nothing can be refused, whatever the URL: the URL is resolved (a second time, Django
        # resolves it again for the view) only for a body that might be over its own. Most writes are small, and a
        # resolve walks the URL patterns (~35 µs of CPU a write, ~1 µs without it; issue 27). The limits are read
        # per request: tests override them.
        if length <= min(settings.FINOPS_MAX_BATCH_BYTES, settings.FINOPS_MAX_UPLOAD_BYTES):
            return None
        try:
            match = resolve(request.path_info)
        except (ValueError, Resolver404):
            return None  # an unknown URL is a 404 anyway (caught as before the length came first)
        limit = _limit_for(match.url_name or "")
        if limit is None or length <= limit[0]:
            return None
        message = f"The request is {length:,} bytes; this endpoint takes at most {limit[0]:,} ({limit[1]}). " + (
            f"{BIGGER}."
            if match.url_name in BATCH_URLS
            else "Import it on the server with `manage.py import_usage` instead."
        )
        if request.path_info.startswith("/api/"):
            return HttpResponse(json.dumps({"detail": message}), status=413, content_type="application/json")
        back = (
            reverse("workload-detail", kwargs=match.kwargs)
            if match.url_name == "workload-outcomes-upload"
            else reverse("source-list")
        )
        return HttpResponse(
            render_to_string("finops/refused.html", {"message": message, "back": back}, request=request), status=413
        )
