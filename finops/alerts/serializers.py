"""The caps' API shapes (finops/alerts/api/caps.py): what a client writes, and a cap with its spend this period."""

from rest_framework import serializers

from finops.api.serializers import CHANNEL_IDS_FIELD, ChosenChannelSerializer, chosen_channels, money_field


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
