"""What the metrics and evals endpoints share (issue 12): the batch body, its answer, strict query parameters."""

from rest_framework import serializers
from rest_framework.exceptions import ValidationError

PAGINATION = {"limit", "offset"}


class BatchResultSerializer(serializers.Serializer):
    rows = serializers.IntegerField(help_text="Rows in the batch.")
    created = serializers.IntegerField()
    replaced = serializers.IntegerField(help_text="Rows whose stored figures changed (a correction).")
    unchanged = serializers.IntegerField(help_text="Rows that restated what was stored.")


class StrictQuerySerializer(serializers.Serializer):
    """Query parameters where a typo answers 400 instead of silently widening the answer."""

    allowed_extra: set[str] = set()

    def to_internal_value(self, data):
        unknown = sorted(set(data) - set(self.fields) - self.allowed_extra)
        if unknown:
            raise serializers.ValidationError({name: ["Unknown parameter."] for name in unknown})
        return super().to_internal_value(data)


def rows_of(data, fields: str) -> list:
    """The rows of a batch: a JSON list (or {"rows": [...]}, as outcomes accept)."""
    if isinstance(data, dict) and set(data) == {"rows"}:
        data = data["rows"]
    if not isinstance(data, list):
        raise ValidationError({"errors": [f"expected a JSON list of rows {{{fields}, …}}"]})
    return data
