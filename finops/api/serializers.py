import datetime as dt

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from finops.core.reporting_period import BOUNDS_ERROR, EARLIEST, LATEST
from finops.core.text import storable
from finops.models import Account, IngestRun, Provider, Team, Workload
from finops.spend.selectors import spend_report
from finops.spend.services.rules import rule_tags_problem


class NamedRelatedField(serializers.SlugRelatedField):
    """A related object named by its slug or name. A name no row can have because Postgres cannot even compare it
    (a NUL byte, a lone surrogate) is a 400 like any other bad value; fuzzing found it a 500 (DataError)."""

    def to_internal_value(self, data):
        if isinstance(data, str) and not storable(data):
            raise serializers.ValidationError("Null and lone surrogate characters are not allowed.")
        return super().to_internal_value(data)


class ProviderSerializer(serializers.ModelSerializer):
    class Meta:
        model = Provider
        fields = ["slug", "name", "builtin"]


class TeamSerializer(serializers.ModelSerializer):
    class Meta:
        model = Team
        fields = ["id", "slug", "name", "cost_center"]


class WorkloadSerializer(serializers.ModelSerializer):
    team = NamedRelatedField(slug_field="slug", queryset=Team.objects.all())

    class Meta:
        model = Workload
        fields = ["id", "slug", "name", "team", "latency_profile", "sla_seconds", "batch_window_hours", "outcome_unit"]


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


class MeSerializer(serializers.Serializer):
    username = serializers.CharField()
    email = serializers.EmailField()
    role = serializers.CharField()
    teams = serializers.ListField(child=serializers.CharField())


class ReportingDateField(serializers.DateField):
    """A day the product can report on (finops.core.reporting_period: 2000-01-01 to 2100-01-01, the latter only as an
    exclusive end). Days near 9999 once overflowed the date arithmetic behind a month's end or a comparison (500)."""

    def to_internal_value(self, value):
        day = super().to_internal_value(value)
        if not EARLIEST <= day <= LATEST:
            raise serializers.ValidationError(BOUNDS_ERROR)
        return day


def money_field(**kwargs) -> serializers.DecimalField:
    """Money in an API response: a decimal string with 6 places (micro-units of the currency), never a float."""
    return serializers.DecimalField(max_digits=38, decimal_places=6, coerce_to_string=True, **kwargs)


class SpendQuerySerializer(serializers.Serializer):
    """GET /api/v1/spend's query. A parameter it does not know is refused (a typo such as `teams=` would
    otherwise give the whole company's figures), and so is a filter value naming nothing the user may see."""

    start = ReportingDateField(help_text="First UTC day, inclusive.")
    end = ReportingDateField(help_text="UTC day after the last one (exclusive).")
    group_by = serializers.ChoiceField(choices=list(spend_report.GROUPS))
    # DRF's content negotiation reads `format` (URL_FORMAT_OVERRIDE) to pick the renderer and refuses an unknown
    # one (finops.api.renderers): json, csv, and the browsable `api` when DEBUG is on. Listed here so it is known.
    format = serializers.CharField(required=False)
    team = serializers.CharField(required=False, allow_blank=True)
    workload = serializers.CharField(required=False, allow_blank=True)
    provider = serializers.CharField(required=False, allow_blank=True)
    account = serializers.CharField(required=False, allow_blank=True)
    model = serializers.CharField(required=False, allow_blank=True)
    basis = serializers.CharField(required=False, allow_blank=True)

    def to_internal_value(self, data):
        known = ", ".join(self.fields)
        unknown = {
            name: [f"Unknown parameter “{name}”; the known ones are: {known}."]
            for name in data
            if name not in self.fields
        }
        if unknown:
            raise serializers.ValidationError(unknown)
        if hasattr(data, "getlist"):  # a QueryDict: `team=a&team=b` would silently keep the last one
            repeated = {name: ["Give this parameter once."] for name in data if len(data.getlist(name)) > 1}
            if repeated:
                raise serializers.ValidationError(repeated)
        return super().to_internal_value(data)

    def validate(self, attrs):
        if attrs["end"] <= attrs["start"]:
            raise serializers.ValidationError({"end": "Must be after start (end is exclusive)."})
        filters = {name: attrs[name] for name in spend_report.FILTER_NAMES if attrs.get(name)}
        errors = spend_report.filter_errors(self.context["user"], filters)
        if errors:
            raise serializers.ValidationError(errors)
        return {"start": attrs["start"], "end": attrs["end"], "by": attrs["group_by"], "filters": filters}


class SpendRowSerializer(serializers.Serializer):
    """One group of the spend report (describes the response; the rows are formatted by spend_report.as_json)."""

    group = serializers.CharField(
        allow_null=True,
        help_text='Slug, account name, model id ("" = taxes, credits, fees), ISO day or YYYY-MM month; '
        "null = unattributed.",
    )
    label = serializers.CharField(
        help_text="The group as a person reads it: “Unattributed”, “(no model: taxes, credits, fees)”."
    )
    currency = serializers.CharField(help_text="The reporting currency every money field is in.")
    cost = money_field(
        allow_null=True,
        help_text="Σ cost of the priced (billed + estimated) usage; null when the group has no priced usage.",
    )
    billed_cost = money_field(allow_null=True, help_text="Provider-billed part of cost; null when there is none.")
    estimated_cost = money_field(
        allow_null=True, help_text="Part of cost estimated from catalog prices; null when there is none."
    )
    priced_tokens = serializers.IntegerField(help_text="All tokens (every class) of priced usage.")
    unpriced_tokens = serializers.IntegerField(
        help_text="All tokens (every class) with no known price: not in cost, not in usd_per_mtok."
    )
    input_tokens = serializers.IntegerField(help_text="All input: uncached + cached + cache write.")
    cached_input_tokens = serializers.IntegerField()
    cache_write_tokens = serializers.IntegerField()
    output_tokens = serializers.IntegerField()
    requests = serializers.IntegerField()
    usd_per_mtok = money_field(
        allow_null=True, help_text="cost / priced_tokens × 10⁶ (sum over sum); null without priced tokens."
    )


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


class RuleSerializer(serializers.ModelSerializer):
    """A rule in the API: the same shape as config's `rules:` entries (workload slug, priority, match)."""

    workload = NamedRelatedField(slug_field="slug", queryset=Workload.objects.all())
    account = NamedRelatedField(slug_field="name", queryset=Account.objects.all(), required=False, allow_null=True)
    provider = NamedRelatedField(slug_field="slug", queryset=Provider.objects.all(), required=False, allow_null=True)
    tags = serializers.DictField(child=serializers.CharField(max_length=255), required=False)

    class Meta:
        from finops.models import AttributionRule

        model = AttributionRule
        fields = [
            "id",
            "workload",
            "priority",
            "account",
            "provider",
            "project",
            "api_key",
            "user",
            "model",
            "tags",
            "updated_at",
        ]
        read_only_fields = ["id", "updated_at"]

    def validate_tags(self, tags):
        if problem := rule_tags_problem(tags):
            raise serializers.ValidationError(problem)
        return tags


class RulePreviewRequestSerializer(RuleSerializer):
    """A rule to preview: a new one, or with `id` an edit of that rule (its current claims are not counted twice)."""

    id = serializers.IntegerField(
        required=False, allow_null=True, min_value=1, help_text="The rule being edited, if any."
    )

    def validate_id(self, value):
        from finops.models import AttributionRule

        if value is not None and not AttributionRule.objects.filter(pk=value).exists():
            raise serializers.ValidationError("No such rule.")
        return value


class RulePreviewSourceSerializer(serializers.Serializer):
    source = serializers.CharField(help_text="Who claims these lines now: a rule, “unattributed”, or “this rule”.")
    lines = serializers.IntegerField()
    tokens = serializers.IntegerField()
    cost = money_field(allow_null=True, help_text="Reporting currency; null when none of these lines has a price.")


class RulePreviewSerializer(serializers.Serializer):
    days = serializers.IntegerField()
    lines = serializers.IntegerField()
    cost = money_field(
        allow_null=True, help_text="Reporting currency; null when lines are claimed and none has a price."
    )
    sources = RulePreviewSourceSerializer(many=True)


class ReattributionJobSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.CharField()
    done = serializers.IntegerField()
    total = serializers.IntegerField()
    percent = serializers.IntegerField()
    lines_changed = serializers.IntegerField()
    error = serializers.CharField(allow_blank=True)


class RuleDeletedSerializer(serializers.Serializer):
    reattribution = ReattributionJobSerializer(
        allow_null=True, help_text="The re-attribution the deletion queued (null: none needed)."
    )


def CHANNEL_IDS_FIELD():  # noqa: N802 - a field factory, named like the fields it makes
    return serializers.ListField(
        child=serializers.IntegerField(),
        required=False,
        help_text="Ids of the channels its alerts also go to (GET /api/v1/channels): a team lead chooses among their "
        "team's. Omit to keep the chosen ones; [] chooses none.",
    )


class ChosenChannelSerializer(serializers.Serializer):
    """A chosen channel by name only: its destination is shown to its editors at /api/v1/channels."""

    id = serializers.IntegerField()
    name = serializers.CharField()


def chosen_channels(owner) -> list[dict]:
    from finops.alerts.services.channels import channels_chosen

    return [{"id": c.id, "name": c.name} for c in channels_chosen(owner)]


class CapWriteSerializer(serializers.Serializer):
    """What a client sends to create or change a cap; finops.alerts.services.caps validates the values (the same rules
    as the form and `apply_config`), this only parses the JSON types."""

    name = serializers.CharField(max_length=120)
    scope = serializers.CharField(help_text="org, team, workload, provider or account.")
    target = serializers.CharField(
        required=False,
        allow_null=True,
        allow_blank=True,
        help_text="The team, workload or provider slug, or the account name; null for org.",
    )
    period = serializers.CharField(required=False, help_text="month (default) or quarter: UTC calendar periods.")
    amount = money_field(help_text='Budget per period in the reporting currency, a decimal string: "5000.00".')
    thresholds = serializers.ListField(
        child=serializers.IntegerField(),
        required=False,
        help_text="Whole percentages 1–1000 that alert; default [50, 80, 100].",
    )
    alert_on_forecast = serializers.BooleanField(
        required=False, help_text="Alert when forecast to exceed (default true)."
    )
    recipients = serializers.ListField(
        child=serializers.CharField(),
        help_text=("Email addresses and roles: role:team_leads, role:finance, role:admins."),
    )
    webhook_url = serializers.CharField(
        required=False,
        allow_blank=True,
        write_only=True,
        help_text=(
            "Where every alert is POSTed (http or https, a public address unless an admin allows the network). "
            'Write-only: answers show `webhook`, its scheme and host. Omit to keep the current one; "" removes it.'
        ),
    )
    webhook_secret = serializers.CharField(
        required=False,
        allow_blank=True,
        write_only=True,
        help_text=(
            "The webhook's HMAC-SHA256 signing secret; stored encrypted, never returned. Omit to keep the current one."
        ),
    )
    channels = CHANNEL_IDS_FIELD()


class CapSerializer(serializers.Serializer):
    """A cap as the API returns it: its settings and its spend this period (cap_status)."""

    id = serializers.IntegerField()
    name = serializers.CharField()
    scope = serializers.CharField()
    target = serializers.CharField(allow_null=True)
    scope_label = serializers.CharField()
    period = serializers.CharField()
    amount = money_field()
    currency = serializers.CharField()
    thresholds = serializers.ListField(child=serializers.IntegerField())
    alert_on_forecast = serializers.BooleanField()
    recipients = serializers.ListField(child=serializers.CharField())
    webhook = serializers.CharField(
        allow_null=True,
        help_text=(
            'The webhook\'s scheme and host (never its path, query or credentials), "" without one; null for a user '
            "who may not edit the cap (they see no webhook at all)."
        ),
    )
    webhook_secret_set = serializers.BooleanField(
        allow_null=True,
        help_text=("Whether a signing secret is stored (the secret itself is never returned); null as for `webhook`."),
    )
    channels = ChosenChannelSerializer(many=True, help_text="The channels it chose besides its recipients and webhook.")
    period_start = serializers.DateField()
    period_end = serializers.DateField(help_text="Exclusive.")
    spent = money_field(help_text="Priced spend in scope this period, today's partial day included.")
    unpriced_tokens = serializers.IntegerField(help_text="Tokens in scope with no known cost: not in spent.")
    percent = serializers.DecimalField(
        max_digits=30, decimal_places=2, coerce_to_string=True, help_text="spent / amount × 100."
    )
    crossed = serializers.ListField(child=serializers.IntegerField(), help_text="Thresholds at or below the spend.")
    forecast = money_field(allow_null=True, help_text="Forecast spend at period end; null without enough history.")
    forecast_method = serializers.CharField()
    daily_rate = money_field(allow_null=True)
    days_left = serializers.IntegerField()
    status = serializers.ChoiceField(choices=["ok", "warning", "forecast", "breached"])
    status_label = serializers.CharField()

    @staticmethod
    def from_status(status, user) -> dict:
        from django.conf import settings

        from finops.alerts.services.caps import cap_target_identifier, webhook_shown
        from finops.core import access

        cap = status.cap
        editor = access.can_write_cap(user, cap)
        return {
            "id": cap.id,
            "name": cap.name,
            "scope": cap.scope,
            "target": cap_target_identifier(cap),
            "scope_label": cap.scope_label(),
            "period": cap.period,
            "amount": cap.amount,
            "currency": settings.FINOPS_REPORTING_CURRENCY,
            "thresholds": cap.thresholds,
            "alert_on_forecast": cap.alert_on_forecast,
            "recipients": cap.recipients,
            "webhook": webhook_shown(cap) if editor else None,
            "webhook_secret_set": bool(cap.webhook_secret_ciphertext) if editor else None,
            "channels": chosen_channels(cap),
            "period_start": status.period_start,
            "period_end": status.period_end,
            "spent": status.spent,
            "unpriced_tokens": status.unpriced_tokens,
            "percent": status.percent,
            "crossed": status.crossed,
            "forecast": status.forecast,
            "forecast_method": status.forecast_method,
            "daily_rate": status.daily_rate,
            "days_left": status.days_left,
            "status": status.status,
            "status_label": status.status_label,
        }
