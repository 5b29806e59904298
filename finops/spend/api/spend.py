"""REST API v1, `/api/v1/spend`: the spend report (finops/spend/selectors/spend_report.py), as JSON or CSV."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import APIView

from finops.api.renderers import FormatParameterNegotiation, SpendCSVRenderer
from finops.models import CostBasis
from finops.spend import serializers
from finops.spend.selectors import spend_report

FILTER_HELP = {
    "team": "Team slug; `-` = unattributed (for those who see it).",
    "workload": "Workload slug; `-` = unattributed (for those who see it).",
    "provider": "Provider slug.",
    "account": "Account name.",
    "model": "Normalised model id.",
    "basis": "Cost basis.",
}


class SpendView(APIView):
    """Spend for [start, end) in the reporting currency; the same figures as `manage.py spend`.

    `?format=csv` (or `Accept: text/csv`) answers CSV through DRF's content negotiation (the CSV renderer);
    errors are JSON whatever the format."""

    renderer_classes = [*api_settings.DEFAULT_RENDERER_CLASSES, SpendCSVRenderer]
    content_negotiation_class = FormatParameterNegotiation

    @extend_schema(
        parameters=[
            OpenApiParameter("start", OpenApiTypes.DATE, required=True, description="First UTC day, inclusive."),
            OpenApiParameter(
                "end", OpenApiTypes.DATE, required=True, description="UTC day after the last one (exclusive)."
            ),
            OpenApiParameter(
                "group_by",
                str,
                required=True,
                enum=list(spend_report.GROUPS),
                description="`month` groups by UTC calendar month (`2026-10`).",
            ),
            OpenApiParameter(
                "format",
                str,
                enum=["json", "csv"],
                default="json",
                description="`csv`: text/csv with a header row, the same columns, money as plain decimals.",
            ),
            *[
                OpenApiParameter(
                    name,
                    str,
                    description=FILTER_HELP[name] + " Narrows the rows, as in Explore; "
                    "a value naming nothing you can see is a 400.",
                    enum=list(CostBasis.values) if name == "basis" else None,
                )
                for name in spend_report.FILTER_NAMES
            ],
        ],
        responses={
            (200, "application/json"): serializers.SpendRowSerializer(many=True),
            (200, "text/csv"): OpenApiTypes.STR,
            400: OpenApiResponse(
                description="An unknown parameter, a bad value, or a filter value naming nothing you can see; "
                "the body maps each parameter to its messages."
            ),
        },
        summary="Spend, tokens and $/M tokens per group",
        description="Unknown cost is never 0: `cost` is null for a group with no priced usage, and `usd_per_mtok` "
        "divides by priced tokens only (unpriced tokens are in `unpriced_tokens`). Any parameter not listed here is "
        "refused.",
    )
    def get(self, request):
        query = serializers.SpendQuerySerializer(data=request.query_params, context={"user": request.user})
        query.is_valid(raise_exception=True)
        q = query.validated_data
        rows = spend_report.spend_rows(user=request.user, **q)
        response = Response(spend_report.as_json(rows))
        if request.accepted_renderer.format == SpendCSVRenderer.format:
            response["Content-Disposition"] = f'attachment; filename="spend-{q["by"]}-{q["start"]}-{q["end"]}.csv"'
        return response

    def finalize_response(self, request, response, *args, **kwargs):
        # An error is JSON even when CSV was asked for: a CSV of error messages would read as an empty report. So is
        # the answer to OPTIONS (the view's description, not rows: `OPTIONS ?format=csv` once answered 500).
        is_rows = response.status_code < 400 and request.method != "OPTIONS"
        if not is_rows and isinstance(getattr(request, "accepted_renderer", None), SpendCSVRenderer):
            request.accepted_renderer, request.accepted_media_type = JSONRenderer(), JSONRenderer.media_type
        return super().finalize_response(request, response, *args, **kwargs)
