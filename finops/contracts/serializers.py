"""The contract API's request and response shapes (finops/contracts/api.py): the same service as apply_config and
the contract form; this only parses JSON types and shows a contract's figures as its page does."""

from rest_framework import serializers

from finops.api.reported import refuse_blank
from finops.api.serializers import (
    CHANNEL_IDS_FIELD,
    ChosenChannelSerializer,
    ReportingDateField,
    chosen_channels,
    money_field,
)


class ContractTermSerializer(serializers.Serializer):
    start = serializers.DateField()
    end = serializers.DateField(help_text="The day after the last: the term is [start, end), UTC days.")
    commitment = money_field()
    commitment_basis = serializers.ChoiceField(choices=["term", "monthly", "yearly"])
    prepaid = money_field()


class ContractSerializer(serializers.Serializer):
    """A contract as the API returns it: its fields and its figures today (finops.contracts.selectors)."""

    id = serializers.IntegerField()
    name = serializers.CharField()
    provider = serializers.CharField(help_text="Provider slug.")
    accounts = serializers.ListField(
        child=serializers.CharField(), help_text="Account names covered; empty: every account of the provider."
    )
    start = serializers.DateField(help_text="First UTC day of the current term.")
    end = serializers.DateField(help_text="The day after the last: the term is [start, end), UTC days.")
    commitment = money_field(help_text="The committed amount on `commitment_basis`, in `currency`.")
    commitment_basis = serializers.ChoiceField(choices=["term", "monthly", "yearly"])
    prepaid = money_field()
    currency = serializers.CharField()
    discount_pct = serializers.DecimalField(max_digits=7, decimal_places=4, coerce_to_string=True)
    auto_renew = serializers.BooleanField()
    renewal_term_months = serializers.IntegerField()
    notice_days = serializers.IntegerField()
    notice_alert_days = serializers.ListField(child=serializers.IntegerField())
    owner = serializers.CharField()
    notes = serializers.CharField()
    document_url = serializers.CharField()
    channels = ChosenChannelSerializer(many=True, help_text="The channels its alerts go to; none: the defaults.")
    past_terms = ContractTermSerializer(many=True, help_text="Terms archived by renewals in place, newest first.")
    notice_deadline = serializers.DateField(help_text="end − notice_days: after it an auto-renewing contract renews.")
    days_to_notice_deadline = serializers.IntegerField(help_text="Negative once the deadline has passed.")
    consumed = money_field(help_text="Covered spend from the term's start to today, in `currency`.")
    expected_to_date = money_field(help_text="Each commitment period's amount × the share of its days gone.")
    projected = money_field(
        help_text="Consumed + the forecast of the days left (finops.forecast.projection), per period."
    )
    shortfall = money_field(help_text="Σ per period max(0, committed − projected): committed money left unused.")
    overage = money_field(help_text="Σ per period max(0, projected − committed).")
    renewal_baseline = money_field(
        allow_null=True,
        help_text="Last 3 complete months' average × renewal_term_months; null without spend in those months.",
    )
    renewal_advice = money_field(
        allow_null=True,
        help_text="“Renew at or below this”; null when the renewed commitment would not exceed the baseline.",
    )
    status = serializers.ChoiceField(
        choices=["notice_passed", "shortfall", "overage", "on_track", "ended", "not_started"]
    )
    status_label = serializers.CharField()

    @staticmethod
    def from_status(status) -> dict:
        contract = status.contract
        fields = {
            name: getattr(contract, name)
            for name in (
                "id",
                "name",
                "start",
                "end",
                "commitment",
                "commitment_basis",
                "prepaid",
                "currency",
                "discount_pct",
                "auto_renew",
                "renewal_term_months",
                "notice_days",
                "notice_alert_days",
                "owner",
                "notes",
                "document_url",
            )
        }
        figures = {
            name: getattr(status, name)
            for name in (
                "notice_deadline",
                "days_to_notice_deadline",
                "consumed",
                "expected_to_date",
                "projected",
                "shortfall",
                "overage",
                "renewal_baseline",
                "renewal_advice",
                "status",
                "status_label",
            )
        }
        return {
            **fields,
            **figures,
            "provider": contract.provider.slug,
            "accounts": sorted(a.name for a in contract.accounts.all()),
            "channels": chosen_channels(contract),
            "past_terms": [
                {
                    "start": t.start,
                    "end": t.end,
                    "commitment": t.commitment,
                    "commitment_basis": t.commitment_basis,
                    "prepaid": t.prepaid,
                }
                for t in contract.past_terms.all()
            ],
        }


class ContractWriteSerializer(serializers.Serializer):
    """What a client sends to create or change a contract; finops.contracts.services validates the values (the
    same rules as `apply_config`) and names every bad field at once; this only parses the JSON types."""

    name = serializers.CharField(required=False, allow_blank=True, trim_whitespace=False)
    provider = serializers.CharField(required=False, allow_blank=True, help_text="Provider slug.")
    accounts = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        help_text="Account names of that provider; empty: every account of the provider.",
    )
    start = ReportingDateField(required=False, help_text="First UTC day of the term.")
    end = ReportingDateField(required=False, help_text="The day after the last (the term is [start, end)).")
    commitment = money_field(required=False, help_text='A decimal string ≥ 0: "120000".')
    commitment_basis = serializers.CharField(required=False, help_text="term | monthly | yearly (default term).")
    prepaid = money_field(required=False, help_text='A decimal string ≥ 0 (default "0").')
    currency = serializers.CharField(required=False, allow_blank=True, help_text="ISO 4217 code (default USD).")
    discount_pct = serializers.DecimalField(max_digits=12, decimal_places=4, required=False, help_text="0–100.")
    auto_renew = serializers.BooleanField(required=False)
    renewal_term_months = serializers.IntegerField(required=False, help_text="1–120 (default 12).")
    notice_days = serializers.IntegerField(required=False, help_text="Not longer than the term (default 60).")
    notice_alert_days = serializers.ListField(
        child=serializers.IntegerField(),
        required=False,
        allow_null=True,
        help_text="Positive whole days before the notice deadline.",
    )
    owner = serializers.CharField(required=False, allow_blank=True, help_text="An email address.")
    notes = serializers.CharField(required=False, allow_blank=True, trim_whitespace=False)
    document_url = serializers.CharField(required=False, allow_blank=True)
    channels = CHANNEL_IDS_FIELD()


class ContractRenewSerializer(serializers.Serializer):
    start = ReportingDateField(help_text="On or after the current term's end.")
    end = ReportingDateField()
    commitment = money_field(required=False, help_text="Default: the current commitment.")
    commitment_basis = serializers.CharField(required=False, help_text="Default: the current basis.")
    prepaid = money_field(required=False, help_text='Default: "0".')


class RenewalsQuerySerializer(serializers.Serializer):
    within_days = serializers.IntegerField(
        min_value=1,
        max_value=3660,
        required=False,
        default=183,
        help_text="Notice deadlines in [today, today + within_days).",
    )

    def to_internal_value(self, data):
        unknown = sorted(set(data) - set(self.fields))
        if unknown:
            raise serializers.ValidationError({name: ["Unknown parameter."] for name in unknown})
        refuse_blank(self.fields, data)
        return super().to_internal_value(data)
