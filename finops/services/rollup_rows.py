"""What the daily and the monthly rebuild share: narrowing rows to the accounts and workloads a rebuild is
limited to, and writing a grouped query's rows in one INSERT … SELECT compiled by the ORM (so it runs on
Postgres and on the demo's SQLite alike)."""

import datetime as dt

from django.db import connection
from django.db.models import Model, Q, QuerySet


def of_workloads(field: str, workload_ids: set) -> Q:
    """Rows of these workloads (`field` names the workload); None among them stands for unattributed."""
    only = Q(**{f"{field}__in": [w for w in workload_ids if w is not None]})
    return only | Q(**{f"{field}__isnull": True}) if None in workload_ids else only


def limited(
    rows: QuerySet, *, account_ids: list[int] | None, workload_ids: set | None, workload_field: str = "workload_id"
) -> QuerySet:
    """`rows` of these accounts and workloads only (None: no limit)."""
    if account_ids is not None:
        rows = rows.filter(account_id__in=account_ids)
    if workload_ids is not None:
        rows = rows.filter(of_workloads(workload_field, workload_ids))
    return rows


def insert_select(model: type[Model], columns: tuple[str, ...], rows: QuerySet) -> None:
    """INSERT INTO the model's table (`columns`) the rows of `rows`, a values_list in that column order."""
    select_sql, params = rows.query.sql_with_params()
    names = ", ".join(connection.ops.quote_name(c) for c in columns)
    with connection.cursor() as cursor:
        cursor.execute(f"INSERT INTO {connection.ops.quote_name(model._meta.db_table)} ({names}) {select_sql}", params)


def day_ranges(days: set[dt.date]) -> list[tuple[dt.date, dt.date]]:
    """Consecutive days grouped into inclusive (first, last) ranges, oldest first."""
    ranges: list[list[dt.date]] = []
    for day in sorted(days):
        if ranges and day == ranges[-1][1] + dt.timedelta(days=1):
            ranges[-1][1] = day
        else:
            ranges.append([day, day])
    return [(first, last) for first, last in ranges]


# A run of consecutive days is rebuilt this many days at a time: a month of a large organisation's groups fits
# in the aggregate's memory (below), where a whole year's would spill to disk or fall back to a sort.
CHUNK_DAYS = 31
AGGREGATE_WORK_MEM = "128MB"


def day_chunks(days: set[dt.date]) -> list[tuple[dt.date, dt.date]]:
    """Runs of consecutive days, cut into pieces of at most CHUNK_DAYS: what one INSERT … SELECT rebuilds."""
    chunks = []
    for first, last in day_ranges(days):
        while first <= last:
            chunk_last = min(last, first + dt.timedelta(days=CHUNK_DAYS - 1))
            chunks.append((first, chunk_last))
            first = chunk_last + dt.timedelta(days=1)
    return chunks
