"""REST API v1, attribution rules and their re-attributions: every write goes through finops.spend.services.rules
(the rule form and apply_config use it too); a change queues a re-attribution the caller can follow."""

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import generics
from rest_framework.response import Response
from rest_framework.views import APIView

from finops.core import access
from finops.models import AttributionRule, ReattributionJob
from finops.spend import serializers
from finops.spend.selectors.rules import rule_preview
from finops.spend.services import rules as rule_service


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
