import datetime as dt

from rest_framework import serializers

from finops.models import Account, IngestRun, Provider, Team, Workload


class ProviderSerializer(serializers.ModelSerializer):
    class Meta:
        model = Provider
        fields = ["slug", "name", "builtin"]


class TeamSerializer(serializers.ModelSerializer):
    class Meta:
        model = Team
        fields = ["id", "slug", "name", "cost_center"]


class WorkloadSerializer(serializers.ModelSerializer):
    team = serializers.SlugRelatedField(slug_field="slug", queryset=Team.objects.all())

    class Meta:
        model = Workload
        fields = ["id", "slug", "name", "team", "latency_profile", "sla_seconds", "outcome_unit"]


class AccountSerializer(serializers.ModelSerializer):
    """Never carries the secret: only its first characters (`credentials_hint`)."""

    provider = serializers.SlugRelatedField(slug_field="slug", read_only=True)

    class Meta:
        model = Account
        fields = [
            "id", "name", "provider", "connector", "base_url", "enabled", "sync_interval_minutes",
            "credentials_hint", "last_sync_at", "last_success_at", "last_error", "last_error_at",
        ]


class IngestRunSerializer(serializers.ModelSerializer):
    account = serializers.SlugRelatedField(slug_field="name", read_only=True)

    class Meta:
        model = IngestRun
        fields = [
            "id", "account", "trigger", "status", "window_start", "window_end", "file_name", "lines_read", "lines_written",
            "lines_replaced", "lines_rejected", "error", "created_at", "started_at", "finished_at",
        ]


class MeSerializer(serializers.Serializer):
    username = serializers.CharField()
    email = serializers.EmailField()
    role = serializers.CharField()
    teams = serializers.ListField(child=serializers.CharField())


class SpendQuerySerializer(serializers.Serializer):
    start = serializers.DateField()
    end = serializers.DateField()
    group_by = serializers.ChoiceField(choices=["provider", "account", "model", "day", "team", "workload"])

    def to_internal_value(self, data):
        values = super().to_internal_value(data)
        return {"start": values["start"], "end": values["end"], "by": values["group_by"]}


class SpendRowSerializer(serializers.Serializer):
    group = serializers.CharField(allow_null=True, help_text="Slug, name, model id or ISO day; null = unattributed.")
    cost = serializers.CharField(help_text="Decimal string, reporting currency.")
    billed_cost = serializers.CharField()
    estimated_cost = serializers.CharField()
    unpriced_tokens = serializers.IntegerField()
    input_tokens = serializers.IntegerField(help_text="All input: uncached + cached + cache write.")
    cached_input_tokens = serializers.IntegerField()
    cache_write_tokens = serializers.IntegerField()
    output_tokens = serializers.IntegerField()
    requests = serializers.IntegerField()
    usd_per_mtok = serializers.CharField(allow_null=True)


class SyncRequestSerializer(serializers.Serializer):
    start = serializers.DateField(required=False, help_text="First UTC day; omit both for the scheduled window.")
    end = serializers.DateField(required=False, help_text="UTC day after the last one (exclusive).")

    def validate(self, attrs):
        if ("start" in attrs) != ("end" in attrs):
            raise serializers.ValidationError("give both start and end, or neither")
        if "start" in attrs:
            if attrs["end"] <= attrs["start"]:
                raise serializers.ValidationError({"end": "must be after start (end is exclusive)"})
            as_midnight = lambda day: dt.datetime.combine(day, dt.time(), tzinfo=dt.UTC)  # noqa: E731
            return {"start": as_midnight(attrs["start"]), "end": as_midnight(attrs["end"])}
        return {}


class RuleSerializer(serializers.ModelSerializer):
    """A rule in the API: the same shape as config's `rules:` entries (workload slug, priority, match)."""

    workload = serializers.SlugRelatedField(slug_field="slug", queryset=Workload.objects.all())
    account = serializers.SlugRelatedField(slug_field="name", queryset=Account.objects.all(), required=False, allow_null=True)
    provider = serializers.SlugRelatedField(slug_field="slug", queryset=Provider.objects.all(), required=False, allow_null=True)
    tags = serializers.DictField(child=serializers.CharField(max_length=255), required=False)

    class Meta:
        from finops.models import AttributionRule

        model = AttributionRule
        fields = ["id", "workload", "priority", "account", "provider", "project", "api_key", "user", "model", "tags", "updated_at"]
        read_only_fields = ["id", "updated_at"]

    def validate_tags(self, tags):
        bad = [key for key in tags if not key or "__" in key]
        if bad:
            raise serializers.ValidationError(f"tag keys must be non-empty and without '__': {bad}")
        return tags


class RulePreviewSerializer(serializers.Serializer):
    days = serializers.IntegerField()
    lines = serializers.IntegerField()
    cost = serializers.DecimalField(max_digits=38, decimal_places=6)
    sources = serializers.ListField(child=serializers.DictField())


class ReattributionJobSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.CharField()
    done = serializers.IntegerField()
    total = serializers.IntegerField()
    percent = serializers.IntegerField()
    lines_changed = serializers.IntegerField()
    error = serializers.CharField(allow_blank=True)
