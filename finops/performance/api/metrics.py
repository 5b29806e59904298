"""REST API v1, measured performance (issue 12): POST reported metrics through finops.performance.services.metrics (the
one write path); GET the merged performance per workload × provider × model over a period
(finops.performance.selectors.performance_figures). docs/performance.md, "Reported metrics"."""

from decimal import ROUND_HALF_UP, Decimal

from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from finops.api.reported import BatchResultSerializer, StrictQuerySerializer, batch_posted
from finops.api.serializers import ReportingDateField
from finops.core import access
from finops.performance.selectors.performance import VERDICT_STATUSES
from finops.performance.selectors.performance_figures import PerformanceFigures, performance_figures
from finops.performance.services import metrics as metric_service

SKETCH_EXAMPLE = {"v": 1, "alpha": "0.01", "zero": 0, "buckets": {"312": 700, "335": 280, "380": 20}}


class MetricRowSerializer(serializers.Serializer):
    """Schema only: the service validates the rows itself, to name each bad one by its row number and field."""

    workload = serializers.SlugField(help_text="The workload's slug.")
    provider = serializers.SlugField(help_text="The provider's slug (GET /api/v1/providers).")
    model = serializers.CharField(
        help_text="The model id; normalised like usage lines (claude-sonnet-4-5-20250929 → claude-sonnet-4-5)."
    )
    hour = serializers.DateTimeField(
        help_text="Start of the UTC hour, ISO 8601 with an offset (2026-11-02T14:00:00Z); at most an hour ahead of now."
    )
    source = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=64,
        help_text="Who measured; each source keeps its own row. Default: blank.",
    )
    requests = serializers.IntegerField(min_value=0, help_text="Requests started in the hour, failed ones included.")
    errors = serializers.IntegerField(required=False, min_value=0, help_text="Of which failed. Default 0.")
    latency = serializers.JSONField(
        help_text="End-to-end latency (ms) of the hour's requests: this product's "
        'distribution {"v":1,"alpha":"0.01","zero":n,"buckets":{…}}, a histogram '
        '{"histogram": [[upper_bound_ms, count], …], "cumulative"?: false} '
        '(each count placed at its upper bound), or {"count", "p50_ms", "p95_ms", '
        '"p99_ms"} (summary only). A distribution counts exactly `requests`.'
    )
    ttft = serializers.JSONField(
        required=False,
        help_text="Time to first token (ms) of the streamed requests: a distribution or a histogram (not percentiles).",
    )
    output_tokens = serializers.IntegerField(required=False, min_value=0, help_text="With generation_seconds.")
    generation_seconds = serializers.DecimalField(
        required=False,
        max_digits=20,
        decimal_places=3,
        min_value=0,
        help_text="Σ seconds from first to last token over the requests.",
    )


class LatencyFiguresSerializer(serializers.Serializer):
    p50 = serializers.IntegerField(allow_null=True)
    p95 = serializers.IntegerField(allow_null=True)
    p99 = serializers.IntegerField(allow_null=True)


class SlaSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=VERDICT_STATUSES)
    sla_seconds = serializers.DecimalField(max_digits=10, decimal_places=3, allow_null=True, coerce_to_string=True)
    p99_ms = serializers.IntegerField(allow_null=True, help_text="The p99 judged, or (bound) its upper bound.")
    bound = serializers.BooleanField(help_text="True: the p99 is a bound from summaries, not a measurement.")
    share_over_sla = serializers.DecimalField(max_digits=8, decimal_places=6, allow_null=True, coerce_to_string=True)


class PerformanceSerializer(serializers.Serializer):
    workload = serializers.SlugField(allow_null=True, help_text="Null: requests no rule attributes (admins, finance).")
    provider = serializers.SlugField()
    model = serializers.CharField()
    requests = serializers.IntegerField(help_text="Every request: with per-request data, and known from summaries.")
    requests_with_distribution = serializers.IntegerField(help_text="Requests whose latency is in the percentiles.")
    summary_requests = serializers.IntegerField(
        help_text="Requests known from summaries only (count + percentiles "
        "reports, lines from before distributions were kept)."
    )
    summary_only = serializers.BooleanField(
        help_text="True: no distribution at all; the percentiles are null and summary_p99_ms only bounds the p99."
    )
    summary_p99_ms = serializers.IntegerField(allow_null=True, help_text="Upper bound of the summaries' p99.")
    errors = serializers.IntegerField()
    error_rate = serializers.DecimalField(
        max_digits=8,
        decimal_places=6,
        allow_null=True,
        coerce_to_string=True,
        help_text="Σ failed / Σ requests whose failure is known.",
    )
    latency_ms = LatencyFiguresSerializer(
        help_text="End-to-end, from the merged distribution (within 1 %), rounded to 1 ms."
    )
    ttft_ms = LatencyFiguresSerializer(help_text="Time to first token, likewise.")
    output_tokens_per_s = serializers.DecimalField(
        max_digits=20, decimal_places=1, allow_null=True, coerce_to_string=True
    )
    output_tokens_per_s_basis = serializers.ChoiceField(
        ["generation", "end-to-end", ""],
        help_text=(
            "generation: tokens over the time from first to last token; end-to-end: over whole requests (a lower "
            "bound, used when nothing streamed); blank: not measured."
        ),
    )
    sla = SlaSerializer(
        allow_null=True,
        help_text="The workload's latency SLA on this provider and model (null for "
        "batch workloads and unattributed requests).",
    )


class PerformanceQuerySerializer(StrictQuerySerializer):
    workload = serializers.SlugField(required=False, help_text="One workload's slug; another team's answers 404.")
    start = ReportingDateField(help_text="First UTC day (inclusive).")
    end = ReportingDateField(help_text="UTC day after the last one (exclusive): the period is [start, end).")

    def validate(self, attrs):
        if attrs["end"] <= attrs["start"]:
            raise serializers.ValidationError({"end": ["Must be after start (the period is [start, end))."]})
        return attrs


def _ms(value: float | None) -> int | None:
    return None if value is None else int(Decimal(repr(value)).quantize(Decimal(1), ROUND_HALF_UP))


def _share(value: float | None) -> Decimal | None:
    return None if value is None else Decimal(repr(value)).quantize(Decimal("0.000001"), ROUND_HALF_UP)


def figures_json(f: PerformanceFigures) -> dict:
    p = f.performance
    speed, basis = f.output_tokens_per_s
    verdict = f.sla
    return {
        "workload": f.workload.slug if f.workload else None,
        "provider": f.provider,
        "model": f.model,
        "requests": p.all_requests,
        "requests_with_distribution": p.e2e.count,
        "summary_requests": p.summary_requests,
        "summary_only": p.summary_only,
        "summary_p99_ms": _ms(p.summary_p99_ms),
        "errors": p.all_errors,
        "error_rate": _share(p.error_rate),
        "latency_ms": {k: _ms(v) for k, v in f.latency_ms().items()},
        "ttft_ms": {k: _ms(v) for k, v in f.ttft_ms().items()},
        "output_tokens_per_s": None if speed is None else speed.quantize(Decimal("0.1"), ROUND_HALF_UP),
        "output_tokens_per_s_basis": basis,
        "sla": None
        if verdict is None
        else {
            "status": verdict.status,
            "sla_seconds": verdict.sla_seconds,
            "p99_ms": _ms(verdict.p99_ms),
            "bound": verdict.bound,
            "share_over_sla": _share(verdict.share_over),
        },
    }


class MetricList(APIView):
    @extend_schema(
        parameters=[PerformanceQuerySerializer],
        responses={
            200: PerformanceSerializer(many=True),
            404: OpenApiResponse(description="A workload you may not see."),
        },
        summary="Measured performance over a period",
        description="Per workload × provider × model with requests in [start, end): gateway-log timings and reported "
        "metrics merged, every percentile read from the merged distribution (never an average of "
        "percentiles). Members see their teams' workloads.",
    )
    def get(self, request):
        query = PerformanceQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        params = dict(query.validated_data)
        workload = None
        if slug := params.pop("workload", None):
            workload = access.get_visible_workload_or_404(request.user, slug)
        found = performance_figures(user=request.user, workload=workload, **params)
        return Response(PerformanceSerializer([figures_json(f) for f in found], many=True).data)

    @extend_schema(
        request=MetricRowSerializer(many=True),
        responses={
            201: BatchResultSerializer,
            400: OpenApiResponse(
                description='{"errors": ["row 2: latency: counts 990 requests, the row 1000: …", …]}: '
                "the whole batch was rejected, nothing applied."
            ),
            403: OpenApiResponse(description="Finance (and users of no team) write no metrics."),
        },
        examples=[
            OpenApiExample(
                "A histogram and a summary",
                request_only=True,
                value=[
                    {
                        "workload": "support-agent",
                        "provider": "anthropic",
                        "model": "claude-sonnet-4-5",
                        "hour": "2026-11-02T14:00:00Z",
                        "source": "datadog",
                        "requests": 1000,
                        "errors": 4,
                        "latency": {"histogram": [[1000, 120], [2500, 700], [5000, 170], [10000, 10]]},
                        "ttft": {"histogram": [[250, 300], [500, 650], [1000, 50]]},
                        "output_tokens": 450000,
                        "generation_seconds": "5625.0",
                    },
                    {
                        "workload": "support-agent",
                        "provider": "anthropic",
                        "model": "claude-sonnet-4-5",
                        "hour": "2026-11-02T15:00:00Z",
                        "source": "datadog",
                        "requests": 800,
                        "errors": 2,
                        "latency": {"count": 800, "p50_ms": 1900, "p95_ms": 4100, "p99_ms": 6200},
                    },
                ],
            ),
            OpenApiExample(
                "This product's distribution",
                request_only=True,
                value=[
                    {
                        "workload": "answer-engine",
                        "provider": "openai",
                        "model": "gpt-4.1-mini",
                        "hour": "2026-11-02T09:00:00+01:00",
                        "requests": 1000,
                        "latency": SKETCH_EXAMPLE,
                    }
                ],
            ),
        ],
        summary="Post reported metrics",
        description="All or nothing: one bad row rejects the batch, every problem named by its row number (from 1) "
        "and field. A report for a workload, provider, model, hour and source already stored replaces it "
        "(a correction): posting the same batch twice leaves the same state.",
    )
    def post(self, request):
        return batch_posted(
            metric_service.metrics_record, request, "workload, provider, model, hour, requests, latency"
        )
