"""What the API's serializers share across domains: a related object named by slug, the days the product reports on,
money as a decimal string, and the channels a cap or a contract chose (finops/alerts/ owns channels; the contracts'
serializers use these too, and no domain imports another's serializers). Each domain's own shapes are in its package
(`finops/<domain>/serializers.py`, or beside its API)."""

from rest_framework import serializers

from finops.core.reporting_period import BOUNDS_ERROR, EARLIEST, LATEST
from finops.core.text import storable


class NamedRelatedField(serializers.SlugRelatedField):
    """A related object named by its slug or name. A name no row can have because Postgres cannot even compare it
    (a NUL byte, a lone surrogate) is a 400 like any other bad value; fuzzing found it a 500 (DataError)."""

    def to_internal_value(self, data):
        if isinstance(data, str) and not storable(data):
            raise serializers.ValidationError("Null and lone surrogate characters are not allowed.")
        return super().to_internal_value(data)


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
