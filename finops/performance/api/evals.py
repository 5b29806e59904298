"""REST API v1, eval scores (issue 12): POST through finops.performance.services.evals (the one write path); GET lists
the scores the user may see, paginated like the other lists. docs/performance.md, "Eval scores"."""

from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import generics, serializers

from finops.api.reported import PAGINATION, BatchResultSerializer, StrictQuerySerializer, batch_posted
from finops.core import access
from finops.core.reporting_period import PeriodError
from finops.models import EvalScore
from finops.performance.selectors.evals import eval_scores
from finops.performance.services import evals as eval_service


class EvalRowSerializer(serializers.Serializer):
    """Schema only: the service validates the rows itself, to name each bad one by its row number and field."""

    workload = serializers.SlugField(help_text="The workload's slug.")
    provider = serializers.SlugField(help_text="The provider's slug (GET /api/v1/providers).")
    model = serializers.CharField(help_text="The model id; normalised like usage lines.")
    name = serializers.CharField(max_length=120, help_text='The eval, e.g. "resolution-accuracy".')
    score = serializers.DecimalField(
        max_digits=20,
        decimal_places=6,
        help_text="A decimal (JSON number or string), stored exactly; no NaN or infinity.",
    )
    period = serializers.CharField(
        required=False,
        help_text='A month "2026-11" or a quarter "2026Q4" / "2026-Q4"; or give period_start (and period_end) instead.',
    )
    period_start = serializers.DateField(required=False, help_text="First UTC day scored; alone: that one day.")
    period_end = serializers.DateField(required=False, help_text="The day AFTER the last one scored (exclusive).")
    source = serializers.CharField(
        required=False, allow_blank=True, max_length=64, help_text="Who scored it (kept, not part of the key)."
    )


class EvalScoreSerializer(serializers.ModelSerializer):
    workload = serializers.SlugField(source="workload.slug")
    provider = serializers.SlugField(source="provider.slug")
    score = serializers.DecimalField(max_digits=20, decimal_places=6, coerce_to_string=True)

    class Meta:
        model = EvalScore
        fields = [
            "workload",
            "provider",
            "model",
            "name",
            "score",
            "period_start",
            "period_end",
            "source",
            "updated_at",
        ]


class EvalQuerySerializer(StrictQuerySerializer):
    allowed_extra = PAGINATION
    workload = serializers.SlugField(required=False, help_text="One workload's slug; another team's answers 404.")
    quarter = serializers.CharField(
        required=False, help_text='Scores whose period overlaps this quarter ("2026Q4") or month ("2026-11").'
    )

    def validate_quarter(self, value):
        try:
            return eval_service.named_period(value)
        except PeriodError as exc:
            raise serializers.ValidationError(str(exc)) from None


class EvalList(generics.ListAPIView):
    serializer_class = EvalScoreSerializer

    def get_queryset(self):
        query = EvalQuerySerializer(data=self.request.query_params)
        query.is_valid(raise_exception=True)
        params = query.validated_data
        workload = None
        if slug := params.get("workload"):
            workload = access.get_visible_workload_or_404(self.request.user, slug)
        start, end = params.get("quarter", (None, None))
        return eval_scores(user=self.request.user, workload=workload, start=start, end=end)

    @extend_schema(
        parameters=[EvalQuerySerializer],
        responses={
            200: EvalScoreSerializer(many=True),
            404: OpenApiResponse(description="A workload you may not see."),
        },
        summary="List eval scores",
        description="The stored scores of the workloads you see (members: their teams'), paginated "
        "(limit/offset). Periods are [period_start, period_end).",
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    @extend_schema(
        request=EvalRowSerializer(many=True),
        responses={
            201: BatchResultSerializer,
            400: OpenApiResponse(
                description='{"errors": ["row 2: score: \'NaN\' is not a finite number", …]}: '
                "the whole batch was rejected, nothing applied."
            ),
            403: OpenApiResponse(description="Finance (and users of no team) write no eval scores."),
        },
        examples=[
            OpenApiExample(
                "A quarter's scores of two models",
                request_only=True,
                value=[
                    {
                        "workload": "support-agent",
                        "provider": "anthropic",
                        "model": "claude-sonnet-4-5",
                        "name": "resolution-accuracy",
                        "score": "0.93",
                        "period": "2026Q4",
                        "source": "braintrust",
                    },
                    {
                        "workload": "support-agent",
                        "provider": "anthropic",
                        "model": "claude-haiku-4-5",
                        "name": "resolution-accuracy",
                        "score": 0.91,
                        "period_start": "2026-10-01",
                        "period_end": "2027-01-01",
                    },
                ],
            )
        ],
        summary="Post eval scores",
        description="All or nothing: one bad row rejects the batch, every problem named by its row number (from 1) "
        "and field. A score for a workload, provider, model, eval name and period already stored "
        "replaces it.",
    )
    def post(self, request):
        return batch_posted(eval_service.evals_record, request, "workload, provider, model, name, score, period")
