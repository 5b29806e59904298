"""The config file's sections and the shape of each entry (docs/config.md).

Each section is a list of mappings validated by a DRF serializer; keys not listed are errors,
so a typo (`cost_centre`) is caught instead of silently ignored. References between entries
(a workload's team) are checked in apply.py, against the file and the database together.
"""

import zoneinfo
from decimal import Decimal

from rest_framework import serializers

from finops.core.text import name_check
from finops.models import ConnectorKind, Offering, RoutingPolicy, User, Workload
from finops.org.models.org import Membership
from finops.spend.services.rules import rule_tags_problem

DECIMAL = {"max_digits": 20, "decimal_places": 10, "min_value": 0}


class StrictSerializer(serializers.Serializer):
    def to_internal_value(self, data):
        if not isinstance(data, dict):
            raise serializers.ValidationError({"entry": "must be a mapping of field: value"})
        unknown = sorted(set(data) - set(self.fields))
        if unknown:
            raise serializers.ValidationError(
                {name: f"unknown field (allowed: {', '.join(self.fields)})" for name in unknown}
            )
        return super().to_internal_value(data)


class ProviderEntry(StrictSerializer):
    slug = serializers.SlugField(max_length=64)
    name = serializers.CharField(max_length=120)


class TeamEntry(StrictSerializer):
    name = serializers.CharField(max_length=120, validators=[name_check])
    slug = serializers.SlugField(max_length=64)
    cost_center = serializers.CharField(max_length=64, required=False, allow_blank=True, default="")


class WorkloadEntry(StrictSerializer):
    name = serializers.CharField(max_length=120, validators=[name_check])
    slug = serializers.SlugField(max_length=64)
    team = serializers.SlugField()
    latency_profile = serializers.ChoiceField(choices=Workload.LatencyProfile.values)
    sla_seconds = serializers.DecimalField(
        max_digits=8, decimal_places=2, min_value=0, required=False, allow_null=True, default=None
    )
    # Batch workloads only: the hours a UTC day's work must fit in (judged instead of latency); refused on another
    # profile rather than ignored, so a typo'd profile does not silently drop the verdict.
    batch_window_hours = serializers.IntegerField(
        min_value=1, max_value=24, required=False, allow_null=True, default=None
    )
    outcome_unit = serializers.CharField(max_length=64, required=False, allow_blank=True, default="")
    # The most one outcome should cost (reporting currency); a complete month above it raises `outcome_cost`.
    target_cost_per_outcome = serializers.DecimalField(
        max_digits=38, decimal_places=18, min_value=Decimal("0.000001"), required=False, allow_null=True, default=None
    )
    # The channels its alerts also go to, by name (/alerts/channels/); absent: the chosen ones stay, []: none.
    channels = serializers.ListField(
        child=serializers.CharField(max_length=120), required=False, allow_null=True, default=None
    )

    def validate(self, attrs):
        if attrs.get("batch_window_hours") is not None and attrs["latency_profile"] != Workload.LatencyProfile.BATCH:
            raise serializers.ValidationError({"batch_window_hours": Workload.BATCH_WINDOW_ON_NON_BATCH})
        return attrs


class AccountEntry(StrictSerializer):
    name = serializers.CharField(max_length=120)
    provider = serializers.SlugField()
    connector = serializers.ChoiceField(choices=ConnectorKind.values)
    base_url = serializers.URLField(required=False, allow_blank=True, default="")
    credentials_env = serializers.RegexField(r"^[A-Za-z_][A-Za-z0-9_]*$", max_length=128, required=False, default="")
    enabled = serializers.BooleanField(required=False, default=True)
    sync_interval_minutes = serializers.IntegerField(min_value=5, max_value=7 * 24 * 60, required=False, default=60)
    # FOCUS ServiceNames to import besides the provider's LLM inference, or never (ingest/connectors/focus/scope.py).
    focus_services_include = serializers.ListField(
        child=serializers.CharField(max_length=200), required=False, default=list
    )
    focus_services_exclude = serializers.ListField(
        child=serializers.CharField(max_length=200), required=False, default=list
    )


class PriceEntry(StrictSerializer):
    provider = serializers.SlugField()
    model = serializers.CharField(max_length=200)
    effective_from = serializers.DateField(required=False, default=None)
    effective_to = serializers.DateField(required=False, allow_null=True, default=None)
    input_per_mtok = serializers.DecimalField(**DECIMAL)
    output_per_mtok = serializers.DecimalField(**DECIMAL)
    cached_input_per_mtok = serializers.DecimalField(**DECIMAL, required=False, allow_null=True, default=None)
    cache_write_per_mtok = serializers.DecimalField(**DECIMAL, required=False, allow_null=True, default=None)
    batch_input_per_mtok = serializers.DecimalField(**DECIMAL, required=False, allow_null=True, default=None)
    batch_output_per_mtok = serializers.DecimalField(**DECIMAL, required=False, allow_null=True, default=None)

    def validate(self, attrs):
        if attrs["effective_from"] and attrs["effective_to"] and attrs["effective_to"] <= attrs["effective_from"]:
            raise serializers.ValidationError({"effective_to": "must be after effective_from"})
        return attrs


class FxRateEntry(StrictSerializer):
    day = serializers.DateField()
    currency = serializers.RegexField(r"^[A-Za-z]{3}$", error_messages={"invalid": "must be a 3-letter ISO 4217 code"})
    rate = serializers.DecimalField(max_digits=20, decimal_places=10, min_value=0)


class UserEntry(StrictSerializer):
    username = serializers.RegexField(r"^[\w.@+-]+$", max_length=150)
    email = serializers.EmailField(required=False, allow_blank=True, default="")
    role = serializers.ChoiceField(choices=User.Role.values, required=False, default=User.Role.MEMBER)
    team = serializers.SlugField(required=False, default=None)
    team_role = serializers.ChoiceField(choices=Membership.Role.values, required=False, default=Membership.Role.MEMBER)
    time_zone = serializers.CharField(max_length=64, required=False, allow_blank=True, default="")

    def validate_time_zone(self, name):
        if name and name not in zoneinfo.available_timezones():
            raise serializers.ValidationError(f"{name!r} is not an IANA time zone (e.g. Europe/Paris)")
        return name


class RuleMatch(StrictSerializer):
    account = serializers.CharField(max_length=120, required=False)
    provider = serializers.SlugField(required=False)
    project = serializers.CharField(max_length=255, required=False)
    api_key = serializers.CharField(max_length=255, required=False)
    user = serializers.CharField(max_length=255, required=False)
    model = serializers.CharField(max_length=200, required=False, help_text="glob: * and ?")
    tag = serializers.DictField(child=serializers.CharField(max_length=255), required=False)

    def validate_tag(self, tags):
        if problem := rule_tags_problem(tags):
            raise serializers.ValidationError(problem)
        return tags


class RuleEntry(StrictSerializer):
    workload = serializers.SlugField()
    priority = serializers.IntegerField(min_value=0)
    match = RuleMatch(required=False)


class CapScopeField(serializers.Field):
    """`org`, or a mapping naming exactly one target: {team: SLUG} | {workload: SLUG} | {provider: SLUG} |
    {account: NAME}."""

    KINDS = ("team", "workload", "provider", "account")

    def to_internal_value(self, data):
        if data == "org":
            return ("org", None)
        if isinstance(data, dict) and len(data) == 1:
            ((kind, target),) = data.items()
            if kind in self.KINDS and isinstance(target, str) and target:
                return (kind, target)
        raise serializers.ValidationError(
            "must be org, or one of {team: SLUG}, {workload: SLUG}, {provider: SLUG}, {account: NAME}"
        )

    def to_representation(self, value):
        kind, target = value
        return "org" if kind == "org" else {kind: target}


class CapEntry(StrictSerializer):
    name = serializers.CharField(max_length=120)
    scope = CapScopeField()
    period = serializers.ChoiceField(choices=["month", "quarter"], required=False, default="month")
    amount = serializers.DecimalField(max_digits=38, decimal_places=18, min_value=0)
    thresholds = serializers.ListField(child=serializers.IntegerField(), required=False, default=None, allow_null=True)
    forecast = serializers.BooleanField(required=False, default=True)
    recipients = serializers.ListField(child=serializers.CharField())
    # Absent: the cap keeps its webhook (an export never carries the URL, write-only like the secret); "" removes it.
    webhook_url = serializers.URLField(required=False, allow_blank=True, default=None)
    webhook_secret_env = serializers.RegexField(r"^[A-Za-z_][A-Za-z0-9_]*$", max_length=128, required=False, default="")
    # The channels its alerts also go to, by name (/alerts/channels/); absent: the chosen ones stay, []: none.
    channels = serializers.ListField(
        child=serializers.CharField(max_length=120), required=False, allow_null=True, default=None
    )


class ContractEntry(StrictSerializer):
    """Types only; finops.contracts.services validates the values (the same rules as the API)."""

    name = serializers.CharField(max_length=120)
    provider = serializers.SlugField()
    accounts = serializers.ListField(child=serializers.CharField(max_length=120), required=False, default=list)
    start = serializers.DateField()
    end = serializers.DateField()
    commitment = serializers.DecimalField(max_digits=38, decimal_places=18)
    commitment_basis = serializers.ChoiceField(choices=["term", "monthly", "yearly"], required=False, default="term")
    prepaid = serializers.DecimalField(max_digits=38, decimal_places=18, required=False, default=Decimal(0))
    currency = serializers.CharField(max_length=16, required=False, default="USD")
    discount_pct = serializers.DecimalField(max_digits=38, decimal_places=18, required=False, default=Decimal(0))
    auto_renew = serializers.BooleanField(required=False, default=False)
    renewal_term_months = serializers.IntegerField(required=False, default=12)
    notice_days = serializers.IntegerField(required=False, default=60)
    notice_alert_days = serializers.ListField(
        child=serializers.IntegerField(), required=False, default=None, allow_null=True
    )
    owner = serializers.CharField(required=False, allow_blank=True, default="")
    notes = serializers.CharField(required=False, allow_blank=True, default="", trim_whitespace=False)
    document_url = serializers.CharField(required=False, allow_blank=True, default="")
    # The channels its alerts also go to, by name (/alerts/channels/); absent: the chosen ones stay, []: none.
    channels = serializers.ListField(
        child=serializers.CharField(max_length=120), required=False, allow_null=True, default=None
    )


# Applied in this order, so an entry can refer to one of an earlier section.
SECTIONS = {
    "providers": (ProviderEntry, "slug"),
    "teams": (TeamEntry, "slug"),
    "workloads": (WorkloadEntry, "slug"),
    "accounts": (AccountEntry, "name"),
    "prices": (PriceEntry, "model"),
    "fx_rates": (FxRateEntry, "currency"),
    "users": (UserEntry, "username"),
    "rules": (RuleEntry, "priority"),
    "caps": (CapEntry, "name"),
    "contracts": (ContractEntry, "name"),
}


FAMILY_SLUG = r"^[a-z0-9][a-z0-9._-]*$"
FAMILY_HELP = {"invalid": "must be lower-case letters, digits, dots, hyphens or underscores (e.g. llama-3.3-70b)"}


class FamilyEntry(StrictSerializer):
    slug = serializers.RegexField(FAMILY_SLUG, max_length=100, error_messages=FAMILY_HELP)
    name = serializers.CharField(max_length=120, required=False, allow_blank=True, default="")
    aliases = serializers.ListField(child=serializers.CharField(max_length=200), required=False, default=list)


class OfferingEntry(StrictSerializer):
    provider = serializers.SlugField()
    model = serializers.CharField(max_length=200)
    family = serializers.RegexField(
        FAMILY_SLUG, max_length=100, required=False, allow_blank=True, default="", error_messages=FAMILY_HELP
    )
    input_per_mtok = serializers.DecimalField(**DECIMAL, required=False, allow_null=True, default=None)
    cached_input_per_mtok = serializers.DecimalField(**DECIMAL, required=False, allow_null=True, default=None)
    cache_write_per_mtok = serializers.DecimalField(**DECIMAL, required=False, allow_null=True, default=None)
    output_per_mtok = serializers.DecimalField(**DECIMAL, required=False, allow_null=True, default=None)
    blended_per_mtok = serializers.DecimalField(**DECIMAL, required=False, allow_null=True, default=None)
    output_tokens_per_s = serializers.DecimalField(
        max_digits=12, decimal_places=3, min_value=0, required=False, allow_null=True, default=None
    )
    ttft_seconds = serializers.DecimalField(
        max_digits=10, decimal_places=3, min_value=0, required=False, allow_null=True, default=None
    )
    context_window = serializers.IntegerField(min_value=1, required=False, allow_null=True, default=None)
    tier = serializers.ChoiceField(choices=Offering.Tier.values, required=False, default=Offering.Tier.STANDARD)
    requests_per_minute = serializers.IntegerField(min_value=1, required=False, allow_null=True, default=None)
    tokens_per_minute = serializers.IntegerField(min_value=1, required=False, allow_null=True, default=None)


class OfferingRef(StrictSerializer):
    provider = serializers.SlugField()
    model = serializers.CharField(max_length=200)
    tier = serializers.ChoiceField(choices=Offering.Tier.values, required=False, default=Offering.Tier.STANDARD)


class RoutingEntry(StrictSerializer):
    workload = serializers.SlugField()
    primary = OfferingRef()
    fallback = OfferingRef(required=False, default=None, allow_null=True)
    constraint = serializers.ChoiceField(
        choices=RoutingPolicy.Constraint.values, required=False, default=RoutingPolicy.Constraint.COST
    )
    allowed = serializers.ListField(child=OfferingRef(), required=False, default=list)


# Issue 13: model families, offerings and routing policies (after workloads and providers, which they name);
# applied by finops/config/offerings.py.
OFFERING_SECTIONS = {
    "families": (FamilyEntry, "slug"),
    "offerings": (OfferingEntry, "model"),
    "routing": (RoutingEntry, "workload"),
}
SECTIONS.update(OFFERING_SECTIONS)
