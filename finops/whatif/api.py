"""REST API v1, the what-if calculator (issue 13): the same figures as `manage.py whatif` (docs/whatif.md)."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from finops.web.period import today_utc
from finops.whatif.calculator import ProfileInvalid
from finops.whatif.options import OPTIONS, parse_options
from finops.whatif.selectors import what_if


class WhatIfRowSerializer(serializers.Serializer):
    provider = serializers.CharField(help_text="Provider slug.")
    model = serializers.CharField(help_text="Normalised model id.")
    family = serializers.CharField()
    monthly_cost = serializers.DecimalField(
        max_digits=38,
        decimal_places=2,
        allow_null=True,
        help_text="Reporting currency, a string; null when a price is missing.",
    )
    latency_seconds = serializers.DecimalField(
        max_digits=20, decimal_places=2, allow_null=True, help_text="Per request; null when the speed is unknown."
    )
    meets_sla = serializers.BooleanField(allow_null=True, help_text="null: unknown (a figure missing, or no SLA).")


HELP = {
    "workload": "A workload's slug: its last 30 days and its SLA (another team's answers 400 like an unknown one).",
    "requests": "Requests per month (with input_tokens and output_tokens, instead of a workload).",
    "input_tokens": "Input tokens per month, cached ones included.",
    "output_tokens": "Output tokens per month.",
    "cached_input_tokens": "Of the input tokens, those read from the prompt cache.",
    "sla_seconds": "Latency SLA per request, in seconds.",
    "batch_window_hours": "Batch: the nightly window the month's work must fit in, in hours.",
    "family": "Only offerings of this model family.",
}


class WhatIfView(APIView):
    @extend_schema(
        parameters=[OpenApiParameter(name, OpenApiTypes.STR, description=HELP[name]) for name in OPTIONS],
        responses={
            200: WhatIfRowSerializer(many=True),
            400: OpenApiResponse(description="The body maps the parameter at fault to its message."),
        },
        summary="What a month of traffic would cost on each offering, cheapest first",
    )
    def get(self, request):
        unknown = sorted(set(request.query_params) - set(OPTIONS) - {"format"})
        if unknown:
            raise ValidationError({name: ["Unknown parameter."] for name in unknown})
        try:
            options = parse_options({name: request.query_params.get(name) for name in OPTIONS})
            result = what_if(request.user, today=today_utc(), **options)
        except ProfileInvalid as exc:
            raise ValidationError({exc.field: [exc.message]}) from None
        return Response([row.as_json() for row in result.results])
