"""REST API v1: one view per operation; querysets scoped by finops.core.access (another team's object answers 404)."""

import datetime as dt

from django.conf import settings
from django.db import transaction
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import generics
from rest_framework.exceptions import NotFound, PermissionDenied, ValidationError
from rest_framework.parsers import MultiPartParser
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import APIView

from finops.alerts.selectors.caps import cap_statuses
from finops.alerts.services import caps as cap_service
from finops.core import access
from finops.models import Account, AttributionRule, CostBasis, IngestRun, MonthlySpend, Provider, ReattributionJob
from finops.performance.api.outcomes import CostPerOutcomeQuerySerializer, CostPerOutcomeSerializer
from finops.performance.selectors import outcomes as outcome_selectors
from finops.sources.services.accounts import AccountInvalid, account_focus_services_set
from finops.spend.selectors import spend, spend_report
from finops.spend.selectors.rules import rule_preview
from finops.spend.services import rules as rule_service
from finops.web.period import today_utc
from ingest.services import QueueUnavailable, sync_now, usage_upload_accept
from ingest.uploads import UploadRefused
from ingest.writing import IngestError

from . import serializers
from .errors import services_down_response
from .renderers import FormatParameterNegotiation, SpendCSVRenderer


class MeView(APIView):
    @extend_schema(responses=serializers.MeSerializer, summary="Who the token or session belongs to")
    def get(self, request):
        user = request.user
        data = {
            "username": user.username,
            "email": user.email,
            "role": "admin" if access.is_admin(user) else user.role,
            "teams": list(access.visible_teams(user).values_list("slug", flat=True)),
        }
        return Response(serializers.MeSerializer(data).data)


class ProviderList(generics.ListAPIView):
    serializer_class = serializers.ProviderSerializer
    queryset = Provider.objects.all()


class TeamList(generics.ListAPIView):
    serializer_class = serializers.TeamSerializer

    def get_queryset(self):
        return access.visible_teams(self.request.user).order_by("slug")


class TeamDetail(generics.RetrieveAPIView):
    serializer_class = serializers.TeamSerializer
    lookup_field = "slug"

    def get_queryset(self):
        return access.visible_teams(self.request.user)


class WorkloadList(generics.ListAPIView):
    serializer_class = serializers.WorkloadSerializer

    def get_queryset(self):
        return access.visible_workloads(self.request.user).order_by("slug")


class WorkloadDetail(generics.RetrieveAPIView):
    serializer_class = serializers.WorkloadSerializer
    lookup_field = "slug"

    def get_queryset(self):
        return access.visible_workloads(self.request.user)


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


class AccountList(generics.ListAPIView):
    serializer_class = serializers.AccountSerializer
    permission_classes = [access.SeesSources]
    queryset = Account.objects.select_related("provider").order_by("name")


class AccountDetail(generics.RetrieveAPIView):
    serializer_class = serializers.AccountSerializer
    permission_classes = [access.SeesSources]
    queryset = Account.objects.select_related("provider")

    @extend_schema(
        request=serializers.FocusServicesSerializer,
        responses=serializers.AccountSerializer,
        summary="Choose a FOCUS file account's services (admins)",
    )
    def patch(self, request, pk):
        """The FOCUS services a file account imports besides, or never, its provider's LLM inference."""
        account = self.get_object()
        body = serializers.FocusServicesSerializer(data=request.data, partial=True)
        body.is_valid(raise_exception=True)
        values = {"include": account.focus_services_include, "exclude": account.focus_services_exclude}
        values |= {key.removeprefix("focus_services_"): value for key, value in body.validated_data.items()}
        try:
            account = account_focus_services_set(account=account, by=request.user, **values)
        except AccountInvalid as invalid:
            raise ValidationError({"detail": str(invalid)}) from None
        return Response(serializers.AccountSerializer(account).data)


class AccountRunList(generics.ListAPIView):
    serializer_class = serializers.IngestRunSerializer
    permission_classes = [access.SeesSources]

    def get_queryset(self):
        account = get_object_or_404(Account, pk=self.kwargs["pk"])
        return account.runs.all()


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


class AccountImportCreate(APIView):
    """Upload an export file for an account; a worker imports it (watch the returned run)."""

    permission_classes = [access.SeesSources]
    parser_classes = [MultiPartParser]

    @extend_schema(
        request={
            "multipart/form-data": {"type": "object", "properties": {"file": {"type": "string", "format": "binary"}}}
        },
        responses={202: serializers.IngestRunSerializer},
        summary="Upload a usage export for import",
    )
    def post(self, request, pk):
        account = get_object_or_404(Account, pk=pk)
        upload = request.FILES.get("file")
        if upload is None:
            raise ValidationError({"file": "attach the export as multipart field `file`"})
        if not account.reads_files:
            raise ValidationError({"detail": f"{account.name} is pulled from its API; files go to file accounts"})
        try:
            with transaction.atomic():
                run = usage_upload_accept(account=account, upload=upload, file_name=upload.name)
        except UploadRefused as refused:
            raise ValidationError({"file": str(refused)}) from None
        return Response(serializers.IngestRunSerializer(run).data, status=202)


class AccountSyncCreate(APIView):
    """Queue a pull of an API account: its scheduled window, or [start, end) in UTC days."""

    permission_classes = [access.SeesSources]

    @extend_schema(
        request=serializers.SyncRequestSerializer,
        responses={202: serializers.IngestRunSerializer(many=True)},
        summary="Sync now",
    )
    def post(self, request, pk):
        account = get_object_or_404(Account, pk=pk)
        body = serializers.SyncRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            runs = sync_now(account=account, **body.validated_data)  # inline tasks: the runs come back finished
        except QueueUnavailable as exc:
            return services_down_response(str(exc))
        except IngestError as exc:
            raise ValidationError({"detail": str(exc)}) from None
        return Response(serializers.IngestRunSerializer(runs, many=True).data, status=202)


class RunDetail(generics.RetrieveAPIView):
    serializer_class = serializers.IngestRunSerializer
    permission_classes = [access.SeesSources]
    queryset = IngestRun.objects.all()


def _job_payload(job):
    return rule_service.reattribution_progress(job) if job else None


class RuleList(generics.ListCreateAPIView):
    serializer_class = serializers.RuleSerializer
    permission_classes = [access.SeesRules]
    queryset = AttributionRule.objects.select_related("workload", "account", "provider").order_by("priority", "id")

    def create(self, request, *args, **kwargs):
        body = self.get_serializer(data=request.data)
        body.is_valid(raise_exception=True)
        rule, job = rule_service.rule_create(by=request.user, source="api", **body.validated_data)
        return Response({**self.get_serializer(rule).data, "reattribution": _job_payload(job)}, status=201)


@extend_schema_view(
    delete=extend_schema(
        responses={202: serializers.RuleDeletedSerializer},
        summary="Delete a rule",
        description="Deleted at once; the lines it claimed are re-attributed in the background (follow "
        "`reattribution`).",
    )
)
class RuleDetail(generics.RetrieveUpdateDestroyAPIView):
    serializer_class = serializers.RuleSerializer
    permission_classes = [access.SeesRules]
    queryset = AttributionRule.objects.select_related("workload", "account", "provider")

    def update(self, request, *args, **kwargs):
        rule = self.get_object()
        body = self.get_serializer(rule, data=request.data, partial=kwargs.get("partial", False))
        body.is_valid(raise_exception=True)
        rule, job = rule_service.rule_update(rule=rule, by=request.user, source="api", **body.validated_data)
        return Response({**self.get_serializer(rule).data, "reattribution": _job_payload(job)})

    def destroy(self, request, *args, **kwargs):
        job = rule_service.rule_delete(rule=self.get_object(), by=request.user, source="api")
        return Response({"reattribution": _job_payload(job)}, status=202)


class RulePreview(APIView):
    """What a rule (new, or an edit of rule `id`) would claim in the last 30 days, and from whom. Saves nothing."""

    permission_classes = [access.SeesRules]

    @extend_schema(
        request=serializers.RulePreviewRequestSerializer,
        responses=serializers.RulePreviewSerializer,
        summary="Preview a rule",
    )
    def post(self, request):
        body = serializers.RulePreviewRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        fields = dict(body.validated_data)
        candidate = AttributionRule(id=fields.pop("id", None), **fields)
        return Response(serializers.RulePreviewSerializer(rule_preview(candidate=candidate)).data)


class ReattributionJobDetail(APIView):
    permission_classes = [access.SeesRules]

    @extend_schema(responses=serializers.ReattributionJobSerializer, summary="Progress of a re-attribution")
    def get(self, request, pk):
        return Response(_job_payload(get_object_or_404(ReattributionJob, pk=pk)))


# --- spend caps: the same service as the cap form and apply_config ---


def _cap_payload(caps, user):
    statuses = cap_statuses(list(caps), today=today_utc())
    return [serializers.CapSerializer(serializers.CapSerializer.from_status(s, user)).data for s in statuses]


def _cap_write(call, **kwargs):
    try:
        return call(**kwargs)
    except cap_service.CapInvalid as exc:
        raise ValidationError(exc.errors) from None


class CapList(APIView):
    """Caps the user may see (members: their teams' caps), with this period's spend, forecast and status."""

    @extend_schema(responses=serializers.CapSerializer(many=True), summary="List caps")
    def get(self, request):
        return Response(_cap_payload(access.visible_caps(request.user), request.user))

    @extend_schema(
        request=serializers.CapWriteSerializer, responses={201: serializers.CapSerializer}, summary="Create a cap"
    )
    def post(self, request):
        if not access.can_create_caps(request.user):
            raise PermissionDenied("Only admins and team leads create caps.")
        body = serializers.CapWriteSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        cap = _cap_write(cap_service.cap_create, by=request.user, **body.validated_data)
        return Response(_cap_payload([cap], request.user)[0], status=201)


class CapDetail(APIView):
    """One cap; another team's cap answers 404. PUT replaces every field, PATCH the fields given."""

    def _cap(self, request, pk):
        return get_object_or_404(access.visible_caps(request.user), pk=pk)

    def _writable(self, request, pk):
        cap = self._cap(request, pk)
        if not access.can_write_cap(request.user, cap):
            raise PermissionDenied("Only admins and the cap's team lead change it.")
        return cap

    @extend_schema(responses=serializers.CapSerializer, summary="A cap and its spend this period")
    def get(self, request, pk):
        return Response(_cap_payload([self._cap(request, pk)], request.user)[0])

    def _update(self, request, pk, partial):
        cap = self._writable(request, pk)
        body = serializers.CapWriteSerializer(data=request.data, partial=partial)
        body.is_valid(raise_exception=True)
        cap = _cap_write(cap_service.cap_update, cap=cap, by=request.user, **body.validated_data)
        return Response(_cap_payload([cap], request.user)[0])

    @extend_schema(request=serializers.CapWriteSerializer, responses=serializers.CapSerializer, summary="Replace a cap")
    def put(self, request, pk):
        return self._update(request, pk, partial=False)

    @extend_schema(request=serializers.CapWriteSerializer, responses=serializers.CapSerializer, summary="Change a cap")
    def patch(self, request, pk):
        return self._update(request, pk, partial=True)

    @extend_schema(responses={204: None}, summary="Delete a cap")
    def delete(self, request, pk):
        cap_service.cap_delete(cap=self._writable(request, pk), by=request.user)
        return Response(status=204)
