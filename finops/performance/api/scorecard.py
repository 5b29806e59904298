"""REST API v1, the quarterly scorecard (issue 12): `GET /api/v1/scorecard?quarter=2026Q4[&team=slug]`.

The figures are the page's: each workload's fields are the columns of the one table spec
(finops.performance.tables.scorecard.SCORECARD, keyed by their row keys), each change beside its figure, and
`previous` holds the comparison span's figures. Decimals are strings (money to 6 places, ratios to 6), counts
and milliseconds integers, unknown figures null. docs/performance.md, "Quarterly scorecard"."""

from django.conf import settings
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from finops.api.reported import refuse_blank
from finops.core import access
from finops.core.reporting_period import PeriodError
from finops.performance.selectors import scorecard as selectors
from finops.performance.selectors.performance import VERDICT_STATUSES
from finops.performance.tables.scorecard import SCORECARD
from finops.web.period import today_utc

DECIMAL_KINDS = {
    "money",
    "per_mtok",
    "per_outcome",
    "price",
    "change",
    "share",
    "points",
    "score",
    "score_change",
    "rate",
}
PREVIOUS = (
    "cost",
    "unpriced_tokens",
    "tokens",
    "usd_per_mtok",
    "outcomes",
    "per_outcome",
    "requests",
    "measured_requests",
    "errors",
    "error_rate",
    "p99_ms",
    "tokens_per_s",
    "quality",
    "quality_eval",
)


def _decimal(**kwargs):
    return serializers.DecimalField(max_digits=40, decimal_places=6, coerce_to_string=True, allow_null=True, **kwargs)


class VerdictSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=VERDICT_STATUSES)
    label = serializers.CharField()
    kind = serializers.ChoiceField(
        choices=["latency", "batch"], help_text="Judged on the latency SLA or the batch window."
    )
    p99_ms = serializers.IntegerField(
        allow_null=True, help_text="The p99 judged (with `bound`: the summaries' upper bound)."
    )
    bound = serializers.BooleanField(help_text="True: only summaries were measured; p99_ms is an upper bound.")
    share_over = _decimal(help_text="Share of measured requests slower than the SLA (a fraction).")
    sla_seconds = _decimal()
    window_hours = serializers.IntegerField(allow_null=True)
    longest_span_hours = serializers.IntegerField(allow_null=True, help_text="Batch: the longest day's work, in hours.")
    days_over = serializers.IntegerField(allow_null=True, help_text="Batch: days whose work overran the window.")
    days = serializers.IntegerField(allow_null=True, help_text="Batch: days with work.")


def _field(kind: str, help_text: str = ""):
    if kind in DECIMAL_KINDS:
        return _decimal(help_text=help_text)
    if kind in ("tokens", "count", "requests", "ms", "ms_change"):
        return serializers.IntegerField(allow_null=True, help_text=help_text)
    if kind == "verdict":
        return VerdictSerializer(help_text=help_text)
    return serializers.CharField(allow_blank=True, help_text=help_text)


def _row_fields() -> dict:
    fields = {}
    for column in SCORECARD.columns:
        fields[column.key] = _field(column.kind, column.help or column.header)
        if column.unpriced:
            fields[column.unpriced] = serializers.IntegerField(
                help_text="Tokens no price covers, left out of the spend."
            )
        if column.delta:
            fields[column.delta] = _field(column.delta_kind, f"Change of {column.key} from the comparison span.")
    fields["measured_requests"] = serializers.IntegerField()
    fields["errors"] = serializers.IntegerField()
    fields["tokens_per_s_basis"] = serializers.CharField(allow_blank=True, help_text='generation | end-to-end | "".')
    return fields


ScorecardRowSerializer = type("ScorecardRowSerializer", (serializers.Serializer,), _row_fields())
PreviousSerializer = type(
    "ScorecardPreviousSerializer",
    (serializers.Serializer,),
    {
        **{name: field for name, field in _row_fields().items() if name in PREVIOUS},
        "verdict": VerdictSerializer(),
    },
)


class ScorecardWorkloadSerializer(ScorecardRowSerializer):
    previous = PreviousSerializer(help_text="The same figures over the comparison span.")


class SpanSerializer(serializers.Serializer):
    start = serializers.DateField()
    end = serializers.DateField(help_text="Excluded.")
    label = serializers.CharField()


class ScorecardSerializer(serializers.Serializer):
    quarter = serializers.CharField(help_text="e.g. 2026Q4")
    label = serializers.CharField()
    start = serializers.DateField()
    end = serializers.DateField(help_text="Excluded: the quarter's end, or today for the quarter to date.")
    to_date = serializers.BooleanField()
    compare = SpanSerializer(help_text="What the changes compare with: the previous quarter, or its same days.")
    team = serializers.CharField(allow_null=True)
    currency = serializers.CharField(help_text="The reporting currency of every money field.")
    workloads = ScorecardWorkloadSerializer(many=True)


def _verdict(verdict) -> dict:
    data = {
        name: getattr(verdict, name)
        for name in (
            "status",
            "label",
            "kind",
            "bound",
            "share_over",
            "sla_seconds",
            "window_hours",
            "longest_span_hours",
            "days_over",
            "days",
        )
    }
    data["p99_ms"] = None if verdict.p99_ms is None else round(verdict.p99_ms)
    return data


def _rounded(data: dict) -> dict:
    """Milliseconds as whole numbers (a p99 is ±1 % anyway)."""
    for name in ("p99_ms", "p99_change_ms"):
        if data.get(name) is not None:
            data[name] = round(data[name])
    return data


def as_json(card: selectors.Scorecard) -> dict:
    q = card.quarter
    workloads = []
    for row in card.rows:
        previous = row["previous"]
        workloads.append(
            _rounded(
                {
                    **row,
                    "verdict": _verdict(row["verdict_detail"]),
                    "previous": _rounded(
                        {**{name: getattr(previous, name) for name in PREVIOUS}, "verdict": _verdict(previous.verdict)}
                    ),
                }
            )
        )
    return {
        "quarter": q.key,
        "label": q.title,
        "start": q.start,
        "end": q.read_end,
        "to_date": q.to_date,
        "compare": {"start": q.compare_start, "end": q.compare_end, "label": q.compare_label},
        "team": card.team.slug if card.team else None,
        "currency": settings.FINOPS_REPORTING_CURRENCY,
        "workloads": workloads,
    }


class ScorecardQuerySerializer(serializers.Serializer):
    quarter = serializers.CharField(
        required=False, help_text="2026Q4 (or 2026-Q4); default: the current quarter to date."
    )
    team = serializers.SlugField(required=False, help_text="One team's slug; a team you may not see answers 404.")

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


class ScorecardView(APIView):
    @extend_schema(
        parameters=[
            OpenApiParameter("quarter", str, description="2026Q4 (or 2026-Q4); default: the current quarter to date."),
            OpenApiParameter("team", str, description="One team's slug; a team you may not see answers 404."),
        ],
        responses={
            200: ScorecardSerializer,
            400: OpenApiResponse(
                description='{"quarter": ["Unknown quarter \'2026Q5\': …"]}: a bad or future quarter, '
                "or an unknown parameter."
            ),
            404: OpenApiResponse(description="A team you may not see."),
        },
        summary="The quarterly scorecard",
        description="Per workload you may see: spend, tokens, $/M tokens, outcomes and cost per outcome, requests, "
        "error "
        "rate, p99 latency and the SLA verdict, output tokens/s and quality over a UTC calendar quarter, each "
        "with its change from the previous quarter (% for spend, tokens and unit costs; percentage points for "
        "the error rate; ms for p99) and the previous quarter's figures. The current quarter is to date and "
        "compared with the same days of the previous one. The same figures as the Scorecard page, its CSV "
        "and its XLSX.",
    )
    def get(self, request):
        query = ScorecardQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        params, today = query.validated_data, today_utc()
        team = access.get_visible_team_or_404(request.user, params["team"]) if params.get("team") else None
        try:
            quarter = selectors.quarter(params.get("quarter"), today=today)
        except (selectors.QuarterError, PeriodError) as error:  # PeriodError: a quarter outside the reportable years
            raise ValidationError({"quarter": [str(error)]}) from None
        card = selectors.scorecard(request.user, quarter, today=today, team=team)
        return Response(ScorecardSerializer(as_json(card)).data)
