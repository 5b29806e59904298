"""A fingerprint of everything the what-if and the Savings page read (issue 28: both answer within 200 ms at 10M
lines by computing once per change): what they precompute is kept in the cache under it.

It holds the rollups' newest row ids (every rebuild of a day deletes its rows and inserts new ones, daily and
monthly, spend and performance) and the monthly rollups' row counts (a month emptied), and the rows of the small
tables the comparison reads (offerings, prices and exchange rates, contracts with their terms and the accounts they
cover, eval scores, routing policies and their allowed sets, families, workloads, providers), so an import, a
re-attribution or an edit changes it. Reading it costs one query on Postgres.
"""

import datetime as dt
import hashlib

from django.db import connection
from django.db.models import Count, Max

from finops.models import (
    Contract,
    ContractTerm,
    DailyPerformance,
    DailySpend,
    EvalScore,
    FxRate,
    ModelFamily,
    ModelPrice,
    MonthlyPerformance,
    MonthlySpend,
    Offering,
    Provider,
    ReportedPerformance,
    RoutingPolicy,
    Workload,
)

# Newest id of each (and the row count of the monthly ones and of reported metrics, which are replaced in place).
BIG_TABLES = (DailySpend, MonthlySpend, DailyPerformance, MonthlyPerformance, ReportedPerformance)
SMALL_TABLES = (
    Offering,
    ModelPrice,
    Contract,
    Contract.accounts.through,
    ContractTerm,
    EvalScore,  # the quality evidence and floors (POST /api/v1/evals)
    FxRate,
    RoutingPolicy,
    RoutingPolicy.allowed.through,
    ModelFamily,
    Workload,
    Provider,
)


def fingerprint(today: dt.date) -> str:
    """Everything the what-if's catalogue and savings() read, cheaply (module docstring), for `today`: on Postgres
    one query, each small table hashed where it lies; elsewhere (the demo's SQLite) read through the ORM."""
    if connection.vendor == "postgresql":
        # The newest id by the primary key's index; the monthly rollups' (small) row counts catch a month emptied.
        parts = [f"(SELECT max(id) FROM {m._meta.db_table})" for m in BIG_TABLES]
        parts += [
            f"(SELECT count(*) FROM {m._meta.db_table})"
            for m in (MonthlySpend, MonthlyPerformance, ReportedPerformance)
        ]
        parts += [
            f"(SELECT md5(coalesce(string_agg(t::text, '|' ORDER BY t.id), '')) FROM {m._meta.db_table} t)"
            for m in SMALL_TABLES
        ]
        with connection.cursor() as cursor:
            cursor.execute("SELECT " + ", ".join(parts))
            found = cursor.fetchone()
    else:
        found = [m.objects.aggregate(top=Max("id"), n=Count("id")) for m in BIG_TABLES]
        found += [list(m.objects.order_by("id").values_list()) for m in SMALL_TABLES]
    return hashlib.sha256(repr((today, found)).encode()).hexdigest()
