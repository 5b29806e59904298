"""List endpoints page with `?limit=&offset=` (DRF's LimitOffsetPagination), bounded: a page holds at most
MAX_LIMIT items however large a limit is asked for, and an offset past any real table answers an empty page
instead of an out-of-range database error (`?limit=99999999999999999999` once answered 500).

A limit or offset that is not a whole number (`?offset=null`, `?limit=-5`, `?limit=0`) is a 400 naming the
parameter, as the schema documents them (integers, limit ≥ 1, offset ≥ 0): DRF would quietly serve the first page,
and a script with a paging bug would never learn that it reads the same page again and again."""

from rest_framework.exceptions import ValidationError
from rest_framework.pagination import LimitOffsetPagination

MAX_LIMIT = 1000
MAX_OFFSET = 10**12  # far past any table here, well inside Postgres' bigint


def _whole_number(request, name: str, minimum: int) -> int | None:
    values = request.query_params.getlist(name)
    if not values:
        return None
    if len(values) > 1:
        raise ValidationError({name: ["Give it once."]})
    text = values[0].strip()
    if not (text.isascii() and text.isdigit()) or int(text) < minimum:
        raise ValidationError({name: [f"A whole number, at least {minimum}."]})
    return int(text)


class BoundedLimitOffsetPagination(LimitOffsetPagination):
    max_limit = MAX_LIMIT

    def get_limit(self, request):
        limit = _whole_number(request, self.limit_query_param, 1)
        return self.default_limit if limit is None else min(limit, self.max_limit)

    def get_offset(self, request):
        return min(_whole_number(request, self.offset_query_param, 0) or 0, MAX_OFFSET)

    def get_schema_operation_parameters(self, view):
        parameters = super().get_schema_operation_parameters(view)
        bounds = {self.limit_query_param: {"minimum": 1}, self.offset_query_param: {"minimum": 0}}
        for parameter in parameters:
            parameter["schema"].update(bounds.get(parameter["name"], {}))
        return parameters
