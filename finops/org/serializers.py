"""The organisation's API shapes (finops/org/api.py): who is signed in, teams, workloads."""

from rest_framework import serializers

from finops.api.serializers import NamedRelatedField
from finops.models import Team, Workload


class TeamSerializer(serializers.ModelSerializer):
    class Meta:
        model = Team
        fields = ["id", "slug", "name", "cost_center"]


class WorkloadSerializer(serializers.ModelSerializer):
    team = NamedRelatedField(slug_field="slug", queryset=Team.objects.all())

    class Meta:
        model = Workload
        fields = ["id", "slug", "name", "team", "latency_profile", "sla_seconds", "batch_window_hours", "outcome_unit"]


class MeSerializer(serializers.Serializer):
    username = serializers.CharField()
    email = serializers.EmailField()
    role = serializers.CharField()
    teams = serializers.ListField(child=serializers.CharField())
