"""List endpoints page with `?limit=&offset=` (DRF's LimitOffsetPagination), bounded: a page holds at most
MAX_LIMIT items however large a limit is asked for, and an offset past any real table answers an empty page
instead of an out-of-range database error (`?limit=99999999999999999999` once answered 500)."""

from rest_framework.pagination import LimitOffsetPagination

MAX_LIMIT = 1000
MAX_OFFSET = 10**12  # far past any table here, well inside Postgres' bigint


class BoundedLimitOffsetPagination(LimitOffsetPagination):
    max_limit = MAX_LIMIT

    def get_offset(self, request):
        return min(super().get_offset(request), MAX_OFFSET)
