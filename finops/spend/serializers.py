"""The spend API's shapes (finops/spend/api/): the spend report's query and rows, attribution rules, their preview
and the re-attributions they queue."""

from rest_framework import serializers

from finops.api.serializers import NamedRelatedField, ReportingDateField, money_field
from finops.models import Account, Provider, Workload
from finops.spend.selectors import spend_report
from finops.spend.services.rules import rule_tags_problem


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
