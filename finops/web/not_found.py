"""The product's own 404 page for pages, whatever DEBUG says.

The demo runs with DEBUG=1, where Django answers a 404 with its technical page: the URL patterns, and for a view
that raised Http404 its message. A team lead opening another team's page (invariant 9: it answers 404, so its
existence is not confirmed) must see the product's page instead, as in production. The API (/api/) keeps DRF's
JSON 404 (DRF turns a view's Http404 into its own response before this middleware sees anything), and a URL under
/api/ that matches no route (`/api/v1/runs/abc`) answers the same JSON body, not an HTML page a client cannot read.
"""

from django.conf import settings
from django.http import Http404, JsonResponse
from django.shortcuts import render

TEMPLATE = "404.html"


class NotFoundPageMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if response.status_code == 404 and request.resolver_match is None and request.path_info.startswith("/api/"):
            return JsonResponse({"detail": "No such API endpoint."}, status=404)
        # No URL pattern matched (resolver_match stays None): with DEBUG on, Django has answered its URL list.
        if settings.DEBUG and response.status_code == 404 and request.resolver_match is None and self._is_page(request):
            return self._page(request)
        return response

    def process_exception(self, request, exception):
        if isinstance(exception, Http404) and self._is_page(request):
            return self._page(request)
        return None

    @staticmethod
    def _is_page(request) -> bool:
        return not request.path_info.startswith(("/api/", settings.STATIC_URL))

    @staticmethod
    def _page(request):
        return render(request, TEMPLATE, status=404)
