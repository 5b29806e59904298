"""REST API v1, outcome counts (issue 12): POST goes through finops.performance.services.outcomes (the same service as
the upload form and `import_outcomes`); GET lists the counts the user may see. docs/outcomes.md."""

import datetime as dt

from django.conf import settings
from django.core.exceptions import PermissionDenied
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import APIException, NotFound, ValidationError
from rest_framework.exceptions import PermissionDenied as ApiPermissionDenied
from rest_framework.response import Response
from rest_framework.views import APIView

from finops.api.reported import StrictQuerySerializer, refuse_blank
from finops.api.serializers import ReportingDateField, money_field
from finops.core import access
from finops.models import MonthlySpend
from finops.performance.selectors import outcomes as outcome_selectors
from finops.performance.selectors.outcome_counts import outcome_counts
from finops.performance.services import outcomes as outcome_service
from finops.spend.selectors import spend
from finops.web.period import today_utc


class OutcomeRowSerializer(serializers.Serializer):
    """Schema only: the service validates the rows itself, to name each bad one by its row number."""

    workload = serializers.SlugField(help_text="The workload's slug.")
    day = serializers.DateField(help_text="The UTC day the outcomes happened (YYYY-MM-DD, not in the future).")
    count = serializers.IntegerField(
        min_value=0, help_text="How many outcomes; replaces an earlier count for the same workload, day and source."
    )
    source = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=64,
        help_text="Who counted them; each source keeps its own count. Default: blank.",
    )


class OutcomeCountSerializer(OutcomeRowSerializer):
    workload = serializers.SlugField(source="workload.slug")
    source = serializers.CharField()
    updated_at = serializers.DateTimeField()


class OutcomeResultSerializer(serializers.Serializer):
    rows = serializers.IntegerField(help_text="Rows in the batch (for a replay: in the batch applied first).")
    created = serializers.IntegerField()
    replaced = serializers.IntegerField(help_text="Rows whose stored count changed.")
    unchanged = serializers.IntegerField(help_text="Rows that restated the stored count.")
    replay = serializers.BooleanField(help_text="True: the idempotency key was seen before; nothing was applied.")


class OutcomeQuerySerializer(StrictQuerySerializer):
    workload = serializers.SlugField(required=False, help_text="One workload's slug; another team's answers 404.")
    start = ReportingDateField(required=False, help_text="First day (inclusive).")
    end = ReportingDateField(required=False, help_text="Last day, exclusive: the period is [start, end).")

    def validate(self, attrs):
        if attrs.get("start") and attrs.get("end") and attrs["end"] <= attrs["start"]:
            raise serializers.ValidationError({"end": ["Must be after start (the period is [start, end))."]})
        return attrs


class KeyConflict(APIException):
    status_code = status.HTTP_409_CONFLICT
    default_code = "idempotency_key_conflict"


def _batch(data, header_key):
    """The rows and the idempotency key, from a bare list or from {"rows": [...], "idempotency_key": "…"}."""
    body_key = None
    if isinstance(data, dict) and "rows" in data:
        unknown = sorted(set(data) - {"rows", "idempotency_key"})
        if unknown:
            raise ValidationError(
                {
                    "errors": [
                        f'unknown field {name!r}: send a list of rows, or {{"rows": [...], "idempotency_key": "..."}}'
                        for name in unknown
                    ]
                }
            )
        rows, body_key = data["rows"], data.get("idempotency_key")
    else:
        rows = data
    if not isinstance(rows, list):
        raise ValidationError({"errors": ['expected a JSON list of rows {"workload", "day", "count", "source"?}']})
    if header_key and body_key and header_key != body_key:
        raise ValidationError({"errors": ["the Idempotency-Key header and the idempotency_key field differ"]})
    return rows, header_key or body_key


class OutcomeList(APIView):
    @extend_schema(
        parameters=[OutcomeQuerySerializer],
        responses={
            200: OutcomeCountSerializer(many=True),
            404: OpenApiResponse(description="A workload you may not see."),
        },
        summary="List outcome counts",
        description="One row per workload × day × source, for the workloads you see (members: their teams'). "
        "The period is [start, end).",
    )
    def get(self, request):
        query = OutcomeQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        params = dict(query.validated_data)
        if slug := params.pop("workload", None):
            params["workload"] = access.get_visible_workload_or_404(request.user, slug)
        return Response(OutcomeCountSerializer(outcome_counts(user=request.user, **params), many=True).data)

    @extend_schema(
        request=OutcomeRowSerializer(many=True),
        parameters=[
            OpenApiParameter(
                "Idempotency-Key",
                OpenApiTypes.STR,
                OpenApiParameter.HEADER,
                required=False,
                description="Apply this batch once: the same rows sent again with the same key "
                "apply nothing and answer 200 with `replay: true`; other rows under "
                "a key you used answer 409. Keys are yours: another user's same "
                "key is another batch. The body may carry it instead: "
                '{"rows": [...], "idempotency_key": "…"}.',
            )
        ],
        responses={
            201: OutcomeResultSerializer,
            200: OpenApiResponse(OutcomeResultSerializer, description="A replay: the key was seen; nothing applied."),
            400: OpenApiResponse(
                description='{"errors": ["row 2: unknown workload \'x\'", …]}: the whole '
                "batch was rejected, nothing applied."
            ),
            403: OpenApiResponse(description="Finance (and users of no team) write no outcome counts."),
            409: OpenApiResponse(description="You already used this idempotency key for other rows; nothing applied."),
        },
        examples=[
            OpenApiExample(
                "Two days",
                value=[
                    {"workload": "support-agent", "day": "2026-11-02", "count": 412},
                    {"workload": "support-agent", "day": "2026-11-03", "count": 398, "source": "zendesk"},
                ],
                request_only=True,
            )
        ],
        summary="Post outcome counts",
        description="All or nothing: one bad row rejects the batch, every problem named by its row number (from 1). "
        "A count for a workload, day and source already stored replaces it (a correction).",
    )
    def post(self, request):
        if not access.can_report_anything(request.user):
            raise ApiPermissionDenied("Finance (and users of no team) post no outcome counts.")
        rows, key = _batch(request.data, request.headers.get("Idempotency-Key"))
        try:
            result = outcome_service.outcomes_record(by=request.user, rows=rows, idempotency_key=key)
        except outcome_service.OutcomesInvalid as exc:
            raise ValidationError({"errors": exc.errors}) from None
        except outcome_service.IdempotencyConflict as exc:
            raise KeyConflict({"errors": [str(exc)], "idempotency_key": exc.key}) from None
        except PermissionDenied as exc:
            raise ApiPermissionDenied(str(exc)) from None
        return Response(result.as_dict(), status=200 if result.replay else 201)


# --- a workload's cost per outcome (GET /api/v1/workloads/<slug>/cost-per-outcome) ---


class CostPerOutcomeQuerySerializer(serializers.Serializer):
    """GET /api/v1/workloads/<slug>/cost-per-outcome's query; an unknown parameter is refused."""

    start = ReportingDateField(help_text="First UTC day, inclusive.")
    end = ReportingDateField(help_text="UTC day after the last one (exclusive).")
    by = serializers.ChoiceField(
        choices=["day", "month", "period"],
        default="period",
        help_text="`period`: one figure for [start, end); `day` / `month`: one per UTC day or month.",
    )

    def to_internal_value(self, data):
        unknown = {
            name: [f"Unknown parameter “{name}”; the known ones are: {', '.join(self.fields)}."]
            for name in data
            if name not in self.fields
        }
        if unknown:
            raise serializers.ValidationError(unknown)
        refuse_blank(self.fields, data)
        return super().to_internal_value(data)

    def validate(self, attrs):
        if attrs["end"] <= attrs["start"]:
            raise serializers.ValidationError({"end": "Must be after start (end is exclusive)."})
        if (attrs["end"] - attrs["start"]).days > 3660:
            raise serializers.ValidationError({"end": "At most ten years at a time."})
        return attrs


class CostPerOutcomePointSerializer(serializers.Serializer):
    start = serializers.DateField(help_text="First UTC day of the point (the period's start for by=period).")
    end = serializers.DateField(help_text="UTC day after the point (exclusive).")
    cost = money_field(allow_null=True, help_text="Priced spend; null when no usage had a price (unknown, never 0).")
    unpriced_tokens = serializers.IntegerField(help_text="Tokens no price covers, left out of `cost`.")
    outcomes = serializers.IntegerField()
    cost_per_outcome = money_field(
        allow_null=True, help_text="Σcost / Σoutcomes; null with no outcomes or an unknown cost."
    )


class CostPerOutcomeSerializer(serializers.Serializer):
    workload = serializers.CharField(help_text="The workload's slug.")
    outcome_unit = serializers.CharField(help_text='What one outcome is (“ticket resolved”); "" when not set.')
    target_cost_per_outcome = money_field(allow_null=True)
    currency = serializers.CharField(help_text="The reporting currency every money field is in.")
    by = serializers.CharField()
    points = CostPerOutcomePointSerializer(many=True)


class WorkloadCostPerOutcome(APIView):
    """Cost per outcome of one workload: Σcost / Σoutcomes over the period, or per UTC day or month."""

    @extend_schema(
        parameters=[
            OpenApiParameter("start", OpenApiTypes.DATE, required=True, description="First UTC day, inclusive."),
            OpenApiParameter(
                "end", OpenApiTypes.DATE, required=True, description="UTC day after the last one (exclusive)."
            ),
            OpenApiParameter("by", str, enum=["day", "month", "period"], default="period"),
        ],
        responses={
            200: CostPerOutcomeSerializer,
            404: OpenApiResponse(description="No such workload you may see."),
        },
        summary="Cost per outcome of a workload",
        description="Sum over sum, never an average of daily ratios. `cost_per_outcome` is null where no outcomes were "
        "reported or no usage had a price; outcomes with no spend cost 0.",
    )
    def get(self, request, slug):
        workload = access.visible_workloads(request.user).filter(slug=slug).first()
        if workload is None:
            raise NotFound("No such workload.")
        query = CostPerOutcomeQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        q = query.validated_data
        daily, monthly = spend.visible_spend(request.user), spend.visible_spend(request.user, MonthlySpend)
        today = today_utc()
        if q["by"] == "period":
            figure = outcome_selectors.for_workload(daily, monthly, workload.id, q["start"], q["end"], today=today)
            points = [
                {
                    "start": q["start"],
                    "end": q["end"],
                    "cost": figure.cost,
                    "unpriced_tokens": figure.unpriced_tokens,
                    "outcomes": figure.outcomes,
                    "cost_per_outcome": figure.per_outcome,
                }
            ]
        else:
            points = []
            for p in outcome_selectors.trend(
                daily, monthly, workload.id, q["start"], q["end"], today=today, by=q["by"]
            ):
                after = (
                    p["point"] + dt.timedelta(days=1)
                    if q["by"] == "day"
                    else (p["point"] + dt.timedelta(days=32)).replace(day=1)
                )
                points.append(
                    {
                        "start": max(p["point"], q["start"]),
                        "end": min(after, q["end"]),
                        "cost": p["cost"],
                        "unpriced_tokens": p["unpriced_tokens"],
                        "outcomes": p["outcomes"],
                        "cost_per_outcome": p["per_outcome"],
                    }
                )
        data = {
            "workload": workload.slug,
            "outcome_unit": workload.outcome_unit,
            "target_cost_per_outcome": workload.target_cost_per_outcome,
            "currency": settings.FINOPS_REPORTING_CURRENCY,
            "by": q["by"],
            "points": points,
        }
        return Response(CostPerOutcomeSerializer(data).data)
