"""What the daily and the monthly rebuild share: narrowing rows to the accounts and workloads a rebuild is
limited to, and writing a grouped query's rows in one INSERT … SELECT compiled by the ORM (so it runs on
Postgres and on the demo's SQLite alike)."""

from django.db import connection
from django.db.models import Model, Q, QuerySet


def of_workloads(field: str, workload_ids: set) -> Q:
    """Rows of these workloads (`field` names the workload); None among them stands for unattributed."""
    only = Q(**{f"{field}__in": [w for w in workload_ids if w is not None]})
    return only | Q(**{f"{field}__isnull": True}) if None in workload_ids else only


def limited(rows: QuerySet, *, account_ids: list[int] | None, workload_ids: set | None,
            workload_field: str = "workload_id") -> QuerySet:
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
