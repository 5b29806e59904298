"""REST API v1, the organisation: who the caller is (`/api/v1/me`), teams and workloads. Querysets scoped by
finops.core.access (another team's object answers 404). A workload's cost per outcome is
finops/performance/api/outcomes.py."""

from drf_spectacular.utils import extend_schema
from rest_framework import generics
from rest_framework.response import Response
from rest_framework.views import APIView

from finops.core import access
from finops.org import serializers


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
