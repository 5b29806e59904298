"""REST API v1, the FOCUS 1.2 usage export (issue 14): GET /api/v1/focus?month=YYYY-MM streams a month's usage lines
as CSV (finops/reports/usage_focus.py). Admins and finance; a member gets 404 (finops.core.access.SeesUsageExport)."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.views import APIView

from finops.api.renderers import FormatParameterNegotiation
from finops.core import access
from finops.core.months import MonthError
from finops.reports import usage_focus
from finops.spend.selectors.usage_focus import export_month
from finops.spend.views.focus import focus_csv_response
from finops.web.period import today_utc


class FocusQuerySerializer(serializers.Serializer):
    month = serializers.CharField(
        help_text="The UTC calendar month, YYYY-MM; the current month exports its lines so "
        "far, a month not yet begun is refused."
    )

    def to_internal_value(self, data):
        # `format` is DRF's own (?format=csv picks the CSV renderer, as Accept: text/csv does).
        unknown = {
            name: [f"Unknown parameter “{name}”; the known ones are: month, format."]
            for name in data
            if name not in self.fields and name != "format"
        }
        if unknown:
            raise serializers.ValidationError(unknown)
        if hasattr(data, "getlist") and len(data.getlist("month")) > 1:  # `month=a&month=b`: which one was meant?
            raise serializers.ValidationError({"month": ["Give one month."]})
        values = super().to_internal_value(data)
        try:
            values["month"] = export_month(values["month"], today=today_utc())
        except MonthError as error:
            raise serializers.ValidationError({"month": [str(error)]}) from None
        return values


class FocusCSVRenderer(BaseRenderer):
    """Lets a client ask for `Accept: text/csv`; the CSV itself is a streamed response, never rendered here."""

    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        return JSONRenderer().render(data)  # reached only by an error, which finalize_response turns into JSON


class UsageFocusCSV(APIView):
    """One month's usage lines as a FOCUS 1.2 Cost and Usage CSV, one row per line, streamed."""

    permission_classes = [access.SeesUsageExport]
    renderer_classes = [JSONRenderer, FocusCSVRenderer]
    content_negotiation_class = FormatParameterNegotiation

    @extend_schema(
        parameters=[FocusQuerySerializer],
        responses={
            (200, "text/csv"): OpenApiTypes.STR,
            400: OpenApiResponse(
                description="`month` missing, not YYYY-MM, or a month not yet begun; or an unknown "
                "parameter. The body maps each parameter to its messages."
            ),
            404: OpenApiResponse(description="Members: the export spans teams, so it is not shown to them."),
        },
        summary="A month's usage as FOCUS 1.2 CSV",
        operation_id="v1_focus_csv",
        description=(
            "FOCUS 1.2 Cost and Usage columns (all 57; null as an empty cell), then this product's x_ columns: "
            + ", ".join(usage_focus.HEADER)
            + ". One row per usage line whose period starts in the month (UTC), its "
            "cost exactly as stored (never apportioned): ConsumedQuantity is the line's tokens, the x_…Tokens "
            "columns their split by class. "
            "BilledCost sums to the month's billed spend, EffectiveCost to its total spend, in BillingCurrency (the "
            "line's currency); x_ReportingBilledCost and x_ReportingEffectiveCost carry the reporting-currency "
            "amounts. Unpriced usage has cost 0 with x_CostBasis `unpriced`. A month with no usage is the header "
            "alone. See docs/focus-export.md."
        ),
    )
    def get(self, request):
        query = FocusQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        return focus_csv_response(query.validated_data["month"])

    def finalize_response(self, request, response, *args, **kwargs):
        # An error is JSON even when CSV was asked for: a CSV of messages would read as an empty export.
        if response.status_code >= 400 and isinstance(getattr(request, "accepted_renderer", None), FocusCSVRenderer):
            request.accepted_renderer, request.accepted_media_type = JSONRenderer(), JSONRenderer.media_type
        return super().finalize_response(request, response, *args, **kwargs)
