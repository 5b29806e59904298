"""The daily spend rows and the daily performance rows of an import's days from one pass over its lines (Postgres;
issue 23). rollup_rebuild's daily spend statement and the performance rollup's daily regroup each scanned the
days' lines and hashed their signatures (on a scattered gateway log of 300k lines, ~250k signatures: ~0.5 s of
Postgres CPU each for the scan and the hash, docs/ingestion.md); here one statement groups the lines once, by the
spend rollup's dimensions and the signature's keys together, inserts the DailySpend rows from those groups, and
hands the performance merge (`_merge_into`'s: counters summed, cells merged bin by bin by numpy, binary COPY) the
same groups' sums of the lines alone in their signature-day (`_lines_alone`'s lines), beside the signature-day rows.

Only for lines just written to whole days of timed accounts (an import): a re-attribution limits workloads and
regroups without the lines, and reported metrics (no account) are merged by `_days_merge`. The figures are the
same as the two statements': sums of sums, the hours or-ed twice, the cells concatenated twice before the merge.
"""

import datetime as dt

from django.db import connection

from finops.models import (
    DailyPerformance,
    DailySpend,
    LinesAloneDay,
    LineSignature,
    SignatureDailyPerformance,
    UsageLine,
)
from finops.performance.latency import SENT_HEADER
from finops.performance.measures import COLUMNS
from finops.spend.services.rollup_rows import limited

from .merged_rows import copy_merged, grouped_rows
from .performance_rollup import COUNTERS, KEYS, _signature_days, _sums

# DailySpend's columns, as finops.spend.services.rollups' DIMENSIONS and MEASURES: each the line's own column but
# workload and team, the signature's.
_SPEND_DIMENSIONS = (
    "account_id",
    "provider_id",
    "model",
    "workload_id",
    "team_id",
    "currency",
    "cost_basis",
    "charge_category",
)
_SPEND_SUMS = (
    "input_tokens",
    "cached_input_tokens",
    "cache_write_tokens",
    "output_tokens",
    "requests",
    "cost",
    "reporting_cost",
)
_SIGNATURE_OF = {"workload_id", "team_id"}
# A line's performance columns as the daily regroup reads them (performance_rollup._lines_alone): its measured
# requests (none without per-request data, less any summary's), its own counters, no report's summary errors.
_LINE_PERFORMANCE = {
    "requests": "CASE WHEN l.errors IS NULL THEN 0 ELSE l.requests - coalesce(l.summary_requests, 0) END",
    "summary_errors": "0",
    "summary_counted": "0",
}


def daily_pass(first: dt.date, last: dt.date, account_ids: list[int]) -> None:
    """The DailySpend and DailyPerformance rows of `account_ids` on [first, last] (whole days, every workload), from
    their lines and signature-day rows; the rows they replace deleted first."""
    start = dt.datetime.combine(first, dt.time(), tzinfo=dt.UTC)
    end = dt.datetime.combine(last + dt.timedelta(days=1), dt.time(), tzinfo=dt.UTC)
    limits = {"account_ids": account_ids, "workload_ids": None}
    limited(DailySpend.objects.filter(day__gte=first, day__lte=last), **limits).delete()
    limited(DailyPerformance.objects.filter(day__gte=first, day__lte=last), **limits).delete()
    rows, params = _signature_days(first, last, limits).query.sql_with_params()
    spend_keys = ", ".join(f"spend_{name}" for name in _SPEND_DIMENSIONS)
    performance_keys = ", ".join(f"performance_{name}" for name in KEYS)
    signature_keys = ", ".join(("day", *KEYS, "hours", *COLUMNS))
    sent = f"substring(array_send(latency) FROM {SENT_HEADER + 1})"
    alone = "(l.errors IS NOT NULL OR l.summary_requests IS NOT NULL) AND m.account_id IS NOT NULL AND d.day IS NULL"
    performance = ", ".join(
        f"max(l.{name}) FILTER (WHERE {alone}) AS p_{name}"
        if name == "summary_p99_ms"
        else f"sum({_LINE_PERFORMANCE.get(name, f'l.{name}')}) FILTER (WHERE {alone}) AS p_{name}"
        for name in COUNTERS
    )
    day = "(l.period_start AT TIME ZONE 'UTC')::date"
    table = {model: connection.ops.quote_name(model._meta.db_table) for model in _TABLES}
    spend_of = ", ".join(
        f"{'s' if name in _SIGNATURE_OF else 'l'}.{name} AS spend_{name}" for name in _SPEND_DIMENSIONS
    )
    spend_columns = ", ".join(("day", *_SPEND_DIMENSIONS, *_SPEND_SUMS, "line_count"))
    statement = f"""WITH g AS (
          SELECT {day} AS day,
                 {spend_of},
                 {", ".join(f"s.{name} AS performance_{name}" for name in KEYS)},
                 {", ".join(f"sum(l.{name}) AS {name}" for name in _SPEND_SUMS)}, count(l.id) AS line_count,
                 count(*) FILTER (WHERE {alone}) AS alone_lines,
                 bit_or(1 << CAST(EXTRACT(HOUR FROM l.period_start AT TIME ZONE 'UTC') AS integer))
                     FILTER (WHERE {alone}) AS hours,
                 {performance},
                 string_agg(substring(array_send(l.latency) FROM {SENT_HEADER + 1}), ''::bytea)
                     FILTER (WHERE {alone}) AS cells
            FROM {table[UsageLine]} l
            JOIN {table[LineSignature]} s ON s.id = l.signature_id
            LEFT JOIN (SELECT DISTINCT account_id, day FROM {table[LinesAloneDay]}
                        WHERE day >= %s AND day <= %s AND account_id = ANY(%s)) m
                   ON m.account_id = l.account_id AND m.day = {day}
            LEFT JOIN (SELECT DISTINCT day, signature_id, account_id FROM {table[SignatureDailyPerformance]}
                        WHERE day >= %s AND day <= %s AND account_id = ANY(%s)) d
                   ON d.day = {day} AND d.signature_id = l.signature_id AND d.account_id = l.account_id
           WHERE l.period_start >= %s AND l.period_start < %s AND l.account_id = ANY(%s)
           GROUP BY 1, {spend_keys}, {performance_keys}),
        spend AS (INSERT INTO {table[DailySpend]} ({spend_columns})
                  SELECT day, {spend_keys}, {", ".join(f"sum({name})" for name in _SPEND_SUMS)}, sum(line_count)
                    FROM g GROUP BY day, {spend_keys}),
        r(day, {", ".join(KEYS)}, hours, {", ".join(COUNTERS)}, cells) AS (
          SELECT day, {performance_keys}, hours, {", ".join(f"p_{name}" for name in COUNTERS)}, cells
            FROM g WHERE alone_lines > 0
          UNION ALL
          SELECT day, {", ".join(KEYS)}, hours, {", ".join(COUNTERS)}, {sent}
            FROM ({rows}) AS rows({signature_keys}))
        SELECT day, {", ".join(KEYS)}, bit_or(hours) AS hours, {_sums()}, string_agg(cells, ''::bytea) AS cells
          FROM r GROUP BY day, {", ".join(KEYS)}"""
    ids = list(account_ids)
    columns = ", ".join(("day", *KEYS, "hours", *COUNTERS, "latency"))
    copy_merged(
        DailyPerformance,
        columns,
        grouped_rows(statement, [first, last, ids, first, last, ids, start, end, ids, *params]),
    )


_TABLES = (UsageLine, LineSignature, LinesAloneDay, SignatureDailyPerformance, DailySpend)
