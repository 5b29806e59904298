"""The Sources' API shapes (finops/sources/api.py): providers, accounts (never their secrets), ingest runs."""

import datetime as dt

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from finops.api.serializers import ReportingDateField
from finops.models import Account, IngestRun, Provider


class ProviderSerializer(serializers.ModelSerializer):
    class Meta:
        model = Provider
        fields = ["slug", "name", "builtin"]


class AccountSerializer(serializers.ModelSerializer):
    """Never carries the secret: only its first characters (`credentials_hint`)."""

    provider = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    # Empty for file accounts and for the provider's own API host, so not a URL-formatted string in the schema.
    base_url = serializers.CharField(
        read_only=True, help_text="API base URL (a proxy or regional host); empty: the provider's own."
    )

    class Meta:
        model = Account
        fields = [
            "id",
            "name",
            "provider",
            "connector",
            "base_url",
            "enabled",
            "sync_interval_minutes",
            "credentials_hint",
            "last_sync_at",
            "last_success_at",
            "last_error",
            "last_error_at",
            "focus_services_include",
            "focus_services_exclude",
        ]


class FocusServicesSerializer(serializers.Serializer):
    focus_services_include = serializers.ListField(
        child=serializers.CharField(max_length=200),
        required=False,
        help_text="FOCUS ServiceNames imported besides LLM inference.",
    )
    focus_services_exclude = serializers.ListField(
        child=serializers.CharField(max_length=200), required=False, help_text="FOCUS ServiceNames never imported."
    )


class LeftOutServiceSerializer(serializers.Serializer):
    service = serializers.CharField()
    reason = serializers.CharField(
        help_text="not LLM inference | another provider | excluded by the account's settings"
    )
    currency = serializers.CharField()
    rows = serializers.IntegerField()
    cost = serializers.CharField(help_text="Exact decimal text, in `currency`.")


class LeftOutSerializer(serializers.Serializer):
    rows = serializers.IntegerField()
    services = LeftOutServiceSerializer(many=True)


class IngestRunSerializer(serializers.ModelSerializer):
    account = serializers.SlugRelatedField(slug_field="name", read_only=True)
    left_out = serializers.SerializerMethodField(
        help_text="What a FOCUS import left out (rows and exact cost by service); null when nothing was."
    )
    left_out_summary = serializers.CharField(
        read_only=True, help_text='"left out 1,958 rows, $41,250.23: Amazon EC2 …"'
    )

    @extend_schema_field(LeftOutSerializer(allow_null=True))
    def get_left_out(self, run) -> dict | None:
        return run.left_out or None

    class Meta:
        model = IngestRun
        fields = [
            "id",
            "account",
            "trigger",
            "status",
            "window_start",
            "window_end",
            "file_name",
            "lines_read",
            "lines_written",
            "lines_replaced",
            "lines_rejected",
            "left_out",
            "left_out_summary",
            "error",
            "created_at",
            "started_at",
            "finished_at",
        ]


class SyncRequestSerializer(serializers.Serializer):
    start = ReportingDateField(required=False, help_text="First UTC day; omit both for the scheduled window.")
    end = ReportingDateField(required=False, help_text="UTC day after the last one (exclusive).")

    def validate(self, attrs):
        if ("start" in attrs) != ("end" in attrs):
            raise serializers.ValidationError("give both start and end, or neither")
        if "start" in attrs:
            if attrs["end"] <= attrs["start"]:
                raise serializers.ValidationError({"end": "must be after start (end is exclusive)"})
            as_midnight = lambda day: dt.datetime.combine(day, dt.time(), tzinfo=dt.UTC)  # noqa: E731
            return {"start": as_midnight(attrs["start"]), "end": as_midnight(attrs["end"])}
        return {}
