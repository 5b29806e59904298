"""What the metrics and evals endpoints share (issue 12): the batch body, its answer, strict query parameters."""

from django.core.exceptions import PermissionDenied
from rest_framework import serializers
from rest_framework.exceptions import PermissionDenied as ApiPermissionDenied
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from finops.core import access
from finops.performance.services.reported_rows import BatchInvalid

PAGINATION = {"limit", "offset"}


class BatchResultSerializer(serializers.Serializer):
    rows = serializers.IntegerField(help_text="Rows in the batch.")
    created = serializers.IntegerField()
    replaced = serializers.IntegerField(help_text="Rows whose stored figures changed (a correction).")
    unchanged = serializers.IntegerField(help_text="Rows that restated what was stored.")


class StrictQuerySerializer(serializers.Serializer):
    """Query parameters where a typo answers 400 instead of silently widening the answer: an unknown parameter, and
    a known one given empty (`?workload=`), which DRF would otherwise read as absent and answer for every workload."""

    allowed_extra: set[str] = set()

    def to_internal_value(self, data):
        unknown = sorted(set(data) - set(self.fields) - self.allowed_extra)
        if unknown:
            raise serializers.ValidationError({name: ["Unknown parameter."] for name in unknown})
        refuse_blank(self.fields, data)
        return super().to_internal_value(data)


def refuse_blank(fields, data) -> None:
    """A query parameter given empty (`?workload=`, `?within_days=`) is a 400: DRF reads an empty optional value as
    absent, so the answer would silently widen (every workload) or fall back to a default the caller did not ask for."""
    blank = sorted(
        name
        for name, field in fields.items()
        if name in data and data.get(name) == "" and not getattr(field, "allow_blank", False)
    )
    if blank:
        raise serializers.ValidationError(
            {name: ["Empty: give a value, or leave the parameter out."] for name in blank}
        )


def rows_of(data, fields: str) -> list:
    """The rows of a batch: a JSON list (or {"rows": [...]}, as outcomes accept)."""
    if isinstance(data, dict) and set(data) == {"rows"}:
        data = data["rows"]
    if not isinstance(data, list):
        raise ValidationError({"errors": [f"expected a JSON list of rows {{{fields}, …}}"]})
    return data


def batch_posted(record, request, fields: str) -> Response:
    """POST of a batch to `record` (a service taking `by` and `rows`): 201 with what it did; 400 naming every bad
    row (nothing applied); 403 for a user who may write none."""
    if not access.can_report_anything(request.user):
        raise ApiPermissionDenied("Finance (and users of no team) post no measurements.")
    try:
        result = record(by=request.user, rows=rows_of(request.data, fields))
    except BatchInvalid as exc:
        raise ValidationError({"errors": exc.errors}) from None
    except PermissionDenied as exc:
        raise ApiPermissionDenied(str(exc)) from None
    return Response(result.as_dict(), status=201)
