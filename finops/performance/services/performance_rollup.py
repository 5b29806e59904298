"""The performance rollup (issue 12): SignatureDailyPerformance from the timed usage lines (gateway logs),
DailyPerformance from it and the reported metrics, MonthlyPerformance from DailyPerformance — rebuilt for exactly
the days, accounts and workloads the spend rollup rebuilds (rollup_rebuild calls it, in its transaction), so a
re-attribution or a re-import moves latency with spend.

By signature and day first (issue 23): a re-attribution moves signatures, never lines, so it regroups the
signature-day rows of the moved workloads instead of merging their lines' cells again (`lines_written=False`).

Merged where the rows are (issue 23): a Performance is stored as columns and latency cells (finops.performance.measures,
finops.performance.latency). Each merge groups its rows in SQL, the counters summed per key; on Postgres each
group's cells come back as one bytea that numpy sums bin by bin (latency.merge_sent_cells), written back by a binary
COPY, on a second thread while the next statement runs (finops.performance.services.merged_rows); the demo's SQLite
merges in one `INSERT … SELECT` (`json_each`, `json_group_array`, and a `bit_or` aggregate registered by
finops.core.sqlite_functions).
"""

import datetime as dt

from django.db import connection, transaction
from django.db.models import BigIntegerField, Case, Exists, F, IntegerField, OuterRef, Q, QuerySet, Value, When
from django.db.models.expressions import RawSQL
from django.db.models.functions import Cast, ExtractHour, TruncDate, TruncMonth

from finops.core.months import next_month
from finops.models import (
    Account,
    ConnectorKind,
    DailyPerformance,
    LinesAloneDay,
    MonthlyPerformance,
    ReportedPerformance,
    SignatureDailyPerformance,
    UsageLine,
)
from finops.performance.latency import COUNT_BITS, COUNT_MASK, SENT_HEADER
from finops.performance.measures import COLUMNS
from finops.spend.services.monthly_rollup import month_runs
from finops.spend.services.rollup_rows import aggregate_settings, day_chunks, day_ranges, limited

from .merged_rows import OverlappedCopies, copy_merged, grouped_rows

# Connectors whose lines carry per-request timings; other accounts' lines never do, so an import of them does not
# scan its days again for timings.
TIMED_CONNECTORS = {ConnectorKind.GATEWAY_LOG, ConnectorKind.LITELLM_API}
# Days of lines merged into signature-day rows by one statement (issue 23): chosen when the cells were merged by a
# (group, bin) hash aggregate, whose table a month outgrew (2.7 s of CPU a month of lines merged by weeks against
# 3.2 s by the month on the 10M-line bench); still a bound on what the statement holds, as a scattered gateway log
# puts ~300k lines in a week.
CHUNK_DAYS = 7
# Days of signature-day rows regrouped into daily rows by one statement (issue 23): each statement scans the
# signature-day rows it reads and hashes the signatures it joins them to, once, so fewer statements cost less — a
# scattered log of 1M requests over 23 days (~1M signature-day rows): one statement of 1.6–1.7 s of Postgres CPU
# where four weekly ones took 2.5–2.9 s. A month of them is what the numpy merge holds (~2.5M cells a month on the
# 10M-line bench, ~30 MB).
DAILY_CHUNK_DAYS = 31
KEYS = ("account_id", "provider_id", "model", "workload_id", "team_id")
COUNTERS = COLUMNS[:-1]  # every column but the cells
_MAX = {"summary_p99_ms"}  # a bound: the largest, not the sum


def performance_rollup_rebuild(
    *,
    days: set[dt.date],
    account_ids: list[int] | None = None,
    workload_ids: set | None = None,
    lines_written: bool = True,
    daily_spend: bool = False,
) -> bool:
    """Replace the performance rows of `days` (and their months) with fresh merges, limited like rollup_rebuild:
    `account_ids` given → only those accounts' rows (reported metrics, account null, are left alone);
    `workload_ids` (None standing for unattributed) → only those workloads' rows.

    `lines_written`: lines of those days were written or replaced, so their signature-day rows are merged again
    from the lines first. False when only signatures moved (a re-attribution, a workload changing team) or only
    reported metrics changed: the signature-day rows stand, and the daily rows are regrouped from them.

    `daily_spend` (rollup_rebuild's): write the daily spend rows of those days too, in the same pass over the
    lines as the daily performance rows (finops.performance.services.daily_pass), where it can — Postgres, lines
    written to whole days of timed accounts only (an import), most of them alone in their signature-days (a scattered
    log: the regroup would read them all). Returns whether it did; if not, the caller writes them."""
    if not days or (workload_ids is not None and not workload_ids):
        return False
    if account_ids is not None:
        given = set(account_ids)
        account_ids = list(
            Account.objects.filter(id__in=account_ids, connector__in=TIMED_CONNECTORS).values_list("id", flat=True)
        )
        if not account_ids:
            return False
        daily_spend = daily_spend and set(account_ids) == given
    daily_spend = (
        daily_spend
        and lines_written
        and workload_ids is None
        and account_ids is not None
        and connection.vendor == "postgresql"
    )
    limits = {"account_ids": account_ids, "workload_ids": workload_ids}
    # The spend rollup's planner settings (hash aggregates in memory, no JIT); each level's rows deleted for all its
    # days first, so that no statement between two merges of a level names its table (OverlappedCopies).
    with aggregate_settings(), OverlappedCopies():
        if lines_written:
            for first, last in day_ranges(days):
                _signature_days_delete(first, last, limits)
            alone_first = True  # until a week says most of these lines share their signature-days
            for first, last in day_chunks(days, CHUNK_DAYS):
                alone_first = _signature_days_merge(first, last, limits, alone_first=alone_first)
            # Where most lines share their signature-days (a proxy's log), the regroup reads the few lines alone by
            # the BRIN and the rows of the rest: the one pass, which reads every line for spend anyway, tells each
            # line apart for nothing there (0.89–0.96 s of Postgres CPU against 0.80–0.84 s for 139k lines).
            daily_spend = daily_spend and alone_first
        if daily_spend:
            from .daily_pass import daily_pass  # it builds on this module's merge

            for first, last in day_chunks(days, DAILY_CHUNK_DAYS):
                daily_pass(first, last, account_ids)
        else:
            for first, last in day_ranges(days):
                limited(DailyPerformance.objects.filter(day__gte=first, day__lte=last), **limits).delete()
            for first, last in day_chunks(days, DAILY_CHUNK_DAYS):
                _days_merge(first, last, limits)
        # A month at a time: a month of daily rows is what one merge holds in memory (~8M cells a year at 10M lines).
        # account_id IN (…) never matches the reported rows' null account: they stay when an import rebuilds.
        runs = month_runs(days)
        for first_month, last_month in runs:
            limited(MonthlyPerformance.objects.filter(month__gte=first_month, month__lte=last_month), **limits).delete()
        for first_month, last_month in runs:
            month = first_month
            while month <= last_month:
                _months_merge(month, limits)
                month = next_month(month)
    return daily_spend


def _bounds(first: dt.date, last: dt.date) -> tuple[dt.datetime, dt.datetime]:
    start = dt.datetime.combine(first, dt.time(), tzinfo=dt.UTC)
    return start, dt.datetime.combine(last + dt.timedelta(days=1), dt.time(), tzinfo=dt.UTC)


def _signature_days_delete(first: dt.date, last: dt.date, limits: dict) -> None:
    """The signature-day rows of [first, last] gone, and (whole days) their marks: `_merge_lines` marks again the
    days whose lines it leaves alone."""
    limited(
        SignatureDailyPerformance.objects.filter(day__gte=first, day__lte=last),
        **limits,
        workload_field="signature__workload_id",
    ).delete()
    if limits["workload_ids"] is None:
        marks = LinesAloneDay.objects.filter(day__gte=first, day__lte=last)
        if limits["account_ids"] is not None:
            marks = marks.filter(account_id__in=limits["account_ids"])
        marks.delete()


def _signature_days_merge(first: dt.date, last: dt.date, limits: dict, *, alone_first: bool = True) -> bool:
    """The signature-day rows of [first, last] (deleted before: `_signature_days_delete`) from their lines: every
    line's cells merged once, here.

    `alone_first` (Postgres): the lines alone in their signature-day get no row (`_merge_lines`: their days marked,
    the daily regroup reads them), which pays where most are (a scattered gateway log) and costs a little where most
    share (a proxy's: finding them apart, 0.86–0.91 s of Postgres CPU against 0.72 s for 165k lines in 6,900
    signature-days, session 7). Returns whether the next days should try it: not
    once most of a week's lines shared their signature-days (an import's days are alike)."""
    if connection.vendor == "postgresql" and alone_first:
        return _merge_lines(_lines(*_bounds(first, last), limits, line=True))
    _merge_into(SignatureDailyPerformance, _SIGNATURE_DAY, [_lines(*_bounds(first, last), limits)])
    return False


_SIGNATURE_DAY = ("day", "signature_id", "account_id")


def _merge_lines(lines: QuerySet) -> bool:
    """The signature-day rows of `lines` (Postgres; `_lines(…, line=True)`: each line's ctid first), for the
    (day, signature) groups of several lines only, merged (`_merge_into`'s numpy merge and COPY); a line alone in its
    (day, signature) gets no row: its (account, day) is marked (LinesAloneDay) and the daily regroup reads the line
    itself (`_lines_alone`), whose columns are already what a merge of one row gives (its cells sorted by bin, one
    cell a bin: finops.performance.latency's `cells_of` and `cells_array`, which every line writer uses).

    Why (issue 23): where a gateway log's requests do not share a line (its keys, users and teams drawn apart),
    nearly every line is alone in its signature-day. Grouping them all and sending each through Python cost ~1 s of
    Python and 2.1 s of Postgres CPU per 300k lines; inserting each as a row of its own (session 7) still 1.5 s of
    Postgres, most of it the insert (the heap and two btrees, ~6 buffers a row); finding the groups of several by a
    hash aggregate of the keys alone and inserting only those, ~0.6 s less per 300k lines with the daily regroup's
    reading of the lines counted (docs/ingestion.md, session 8). Only the keys and the line's ctid are held for
    that (not every line's counters and cells: a week of a scattered log is ~90k lines of ~390 bytes), and the few
    lines of groups of several are read again by their ctids (a TID scan), not by a second scan of the table.
    Returns whether at least half of the lines were alone."""
    select, params = lines.query.sql_with_params()
    keys = ", ".join(_SIGNATURE_DAY)
    names = ", ".join(("line", *_SIGNATURE_DAY, "hours", *COLUMNS))
    columns = ", ".join((*_SIGNATURE_DAY, "hours", *COUNTERS, "latency"))
    statement = f"""WITH k AS MATERIALIZED (SELECT line, {keys} FROM ({select}) AS r({names})),
        shared AS (SELECT {keys} FROM k GROUP BY {keys} HAVING count(*) > 1),
        marked AS (INSERT INTO {LinesAloneDay._meta.db_table} (account_id, day)
                   SELECT DISTINCT account_id, day FROM k ON CONFLICT DO NOTHING)
        SELECT {keys}, bit_or(hours) AS hours, {_sums()},
               string_agg(substring(array_send(latency) FROM {SENT_HEADER + 1}), ''::bytea) AS cells,
               count(*) AS shared_lines, (SELECT count(*) FROM k) AS all_lines
          FROM ({select}) AS r({names})
         WHERE r.line = ANY(ARRAY(SELECT k.line FROM k JOIN shared USING ({keys})))
         GROUP BY {keys}"""
    merged = grouped_rows(statement, [*params, *params])
    copy_merged(SignatureDailyPerformance, columns, [row[:-2] for row in merged])
    return not merged or 2 * sum(row[-2] for row in merged) <= merged[0][-1]


def _days_merge(first: dt.date, last: dt.date, limits: dict) -> None:
    """The daily rows of [first, last] (deleted before): the signature-day rows grouped by their signatures' workload
    and team (and account, provider, model), with the reported hours, merged in one statement."""
    start, end = _bounds(first, last)
    sources = [_signature_days(first, last, limits)]
    alone = _lines_alone(first, last, limits)
    if alone is not None:
        sources.append(alone)
    if limits["account_ids"] is None:  # reported metrics have no account
        reported = ReportedPerformance.objects.filter(hour__gte=start, hour__lt=end)
        if limits["workload_ids"] is not None:
            reported = reported.filter(workload_id__in=[w for w in limits["workload_ids"] if w is not None])
        sources.append(_reported(reported))
    _merge_into(DailyPerformance, ("day", *KEYS), sources)


def _months_merge(month: dt.date, limits: dict) -> None:
    """The monthly rows of `month` (deleted before) from its daily rows."""
    daily = limited(DailyPerformance.objects.filter(day__gte=month, day__lt=next_month(month)), **limits)
    rows = daily.annotate(month_of=TruncMonth("day", output_field=DailyPerformance._meta.get_field("day")))
    _merge_into(
        MonthlyPerformance,
        ("month", *KEYS),
        [rows.values_list("month_of", *KEYS, Value(0, BigIntegerField()), *COLUMNS).order_by()],
        hours=False,
    )


# --- the rows merged: (period, *keys, hours, *COLUMNS) ---


def _hour_bit(field: str):
    """1 << the UTC hour of `field`: the hours mask of one line or reported hour."""
    return Value(1, output_field=IntegerField()).bitleftshift(Cast(ExtractHour(field), IntegerField()))


def _lines(start: dt.datetime, end: dt.datetime, limits: dict, *, line: bool = False) -> QuerySet:
    """The timed lines of [start, end) as rows to merge by (day, signature, account). A line's requests with
    per-request data are its own `requests` (less any summary's); it holds no report's summary errors
    (finops.performance.measures.LINE_COLUMNS). No join: the signature is the line's own column. `line`: each row
    starts with the line's ctid (Postgres: `_merge_lines` reads the lines it needs again by it)."""
    zero = Value(0, BigIntegerField())
    ctid = (RawSQL(f"{connection.ops.quote_name(UsageLine._meta.db_table)}.ctid", ()),) if line else ()
    return (
        _timed_lines(start, end, limits)
        .values_list(
            *ctid,
            "day_of",
            "signature_id",
            "account_id",
            "hours_of",
            "requests_of",
            *COLUMNS[1:-3],
            zero,
            zero,
            "latency",  # summary_errors, summary_counted: a report's only
        )
        .order_by()
    )


def _lines_alone(first: dt.date, last: dt.date, limits: dict) -> QuerySet | None:
    """The lines of [first, last] with no signature-day row on a day marked LinesAloneDay (`_merge_lines` left them
    alone), as rows to regroup like `_signature_days`'; None when no day of those accounts is marked (no line read).
    A line of a marked day that has a row (a group of several, or merged whole) is that row's, never read twice."""
    marks = LinesAloneDay.objects.filter(day__gte=first, day__lte=last)
    if limits["account_ids"] is not None:
        marks = marks.filter(account_id__in=limits["account_ids"])
    accounts = sorted(set(marks.values_list("account_id", flat=True)))
    if not accounts:
        return None
    # Only the marked accounts' lines: the line table's BRIN on (account, period) narrows the scan to them.
    lines = _timed_lines(*_bounds(first, last), {**limits, "account_ids": accounts})
    marked = LinesAloneDay.objects.filter(account_id=OuterRef("account_id"), day=OuterRef("day_of"))
    has_row = SignatureDailyPerformance.objects.filter(
        day__gte=first,
        day__lte=last,
        day=OuterRef("day_of"),
        signature_id=OuterRef("signature_id"),
        account_id=OuterRef("account_id"),
    )
    zero = Value(0, BigIntegerField())
    return (
        lines.filter(Exists(marked), ~Exists(has_row))
        .values_list(
            "day_of",
            "signature__account_id",
            "signature__provider_id",
            "signature__model",
            "signature__workload_id",
            "signature__team_id",
            "hours_of",
            "requests_of",
            *COLUMNS[1:-3],
            zero,
            zero,
            "latency",
        )
        .order_by()
    )


def _timed_lines(start: dt.datetime, end: dt.datetime, limits: dict) -> QuerySet:
    """The timed lines of [start, end), annotated with their day, hour bit and measured requests."""
    lines = limited(
        UsageLine.objects.filter(
            Q(errors__isnull=False) | Q(summary_requests__isnull=False), period_start__gte=start, period_start__lt=end
        ),
        **limits,
        workload_field="signature__workload_id",
    )
    zero = Value(0, BigIntegerField())
    measured = Case(
        When(errors__isnull=True, then=zero),
        default=F("requests") - _or_zero("summary_requests"),
        output_field=BigIntegerField(),
    )
    return lines.annotate(day_of=TruncDate("period_start"), hours_of=_hour_bit("period_start"), requests_of=measured)


def _signature_days(first: dt.date, last: dt.date, limits: dict) -> QuerySet:
    rows = limited(
        SignatureDailyPerformance.objects.filter(day__gte=first, day__lte=last),
        **limits,
        workload_field="signature__workload_id",
    )
    return rows.values_list(
        "day",
        "signature__account_id",
        "signature__provider_id",
        "signature__model",
        "signature__workload_id",
        "signature__team_id",
        "hours",
        *COLUMNS,
    ).order_by()


def _reported(rows: QuerySet) -> QuerySet:
    return (
        rows.annotate(
            day_of=TruncDate("hour"),
            hours_of=_hour_bit("hour"),
            account_of=Value(None, BigIntegerField()),
            team_of=F("workload__team_id"),
        )
        .values_list("day_of", "account_of", "provider_id", "model", "workload_id", "team_of", "hours_of", *COLUMNS)
        .order_by()
    )


def _or_zero(name: str):
    return Case(When(**{f"{name}__isnull": True}, then=Value(0)), default=F(name), output_field=BigIntegerField())


# --- the merge ---

# SQLite (the demo): a row's cells (k.latency) one per row, grouped by group and bin, gathered again per group.
_SQLITE_CELLS = "JOIN json_each(k.latency) AS c"


def _merge_into(model, period_and_keys: tuple[str, ...], sources: list[QuerySet], *, hours: bool = True) -> None:
    """INSERT INTO `model` the rows of `sources` (values_lists of period, keys, hours mask, COLUMNS) merged per period
    and key: counters summed (summary_p99_ms: the largest), cells merged bin by bin, the hours or-ed.

    Postgres groups the rows, sums their counters and hands each group's cells over as one bytea (string_agg of
    array_send: no per-cell work there); finops.performance.latency.merge_sent_cells sums them by bin with numpy
    and the rows are written by COPY. The demo's SQLite merges in SQL (json_each, json_group_array)."""
    selects, params = [], []
    for rows in sources:
        select, more = rows.query.sql_with_params()
        selects.append(select)
        params += more
    names = ", ".join((*period_and_keys, "hours", *COLUMNS))
    keys = ", ".join(period_and_keys)
    sums = _sums()
    hour_bits = "bit_or(hours) AS hours, " if hours else ""
    columns = ", ".join((*period_and_keys, *(("hours",) if hours else ()), *COUNTERS, "latency"))
    rows = f"r({names}) AS ({' UNION ALL '.join(selects)})"
    if connection.vendor != "postgresql":
        _merge_in_sql(model, rows, keys, hour_bits, sums, columns, params)
        return
    statement = f"""WITH {rows}
        SELECT {keys}, {hour_bits}{sums},
               string_agg(substring(array_send(latency) FROM {SENT_HEADER + 1}), ''::bytea) AS cells
          FROM r GROUP BY {keys}"""
    copy_merged(model, columns, grouped_rows(statement, params))


def _sums() -> str:
    """The counters of a group, summed (summary_p99_ms: the largest). bigint, not sum's numeric: the rows go back by
    binary COPY (the SQLite merge casts nothing: it sums integers)."""
    as_int = "bigint" if connection.vendor == "postgresql" else "integer"
    return ", ".join(
        f"max({name}) AS {name}" if name in _MAX else f"CAST(coalesce(sum({name}), 0) AS {as_int}) AS {name}"
        for name in COUNTERS
    )


def _merge_in_sql(model, rows: str, keys: str, hour_bits: str, sums: str, columns: str, params: list) -> None:
    """The merge as one statement (SQLite). Each group is numbered first (dense_rank over the key), so that the
    cells are grouped by two integers, not by the six columns of the key."""
    cell = "c.value"
    statement = f"""WITH {rows},
        k AS MATERIALIZED (SELECT r.*, dense_rank() OVER (ORDER BY {keys}) AS grp FROM r),
        sums AS (SELECT grp, {keys}, {hour_bits}{sums} FROM k GROUP BY grp, {keys}),
        bins AS (SELECT k.grp, (({cell} >> {COUNT_BITS}) << {COUNT_BITS}) | CAST(sum({cell} & {COUNT_MASK}) AS integer)
                        AS cell
                   FROM k {_SQLITE_CELLS} GROUP BY k.grp, ({cell} >> {COUNT_BITS})),
        merged AS (SELECT b.grp, json_group_array(b.cell) AS latency FROM bins AS b GROUP BY b.grp)
        INSERT INTO {model._meta.db_table} ({columns})
        SELECT {", ".join(f"sums.{name}" for name in columns.split(", ")[:-1])}, merged.latency
          FROM sums LEFT JOIN merged ON merged.grp = sums.grp"""
    with connection.cursor() as cursor:
        cursor.execute(statement, params)


def lines_alone_keep(*, day: dt.date) -> None:
    """Before the lines of `day` are pruned (ingest/retention.py): its lines alone in their signature-day, which have
    no row of their own (LinesAloneDay), get one — the day's signature-day rows merged again, whole — and its marks
    go, so that the daily rows of a pruned day can still be regrouped (reported metrics of its workloads) without
    the lines. The same rows, the same figures."""
    accounts = list(LinesAloneDay.objects.filter(day=day).values_list("account_id", flat=True))
    if not accounts:
        return
    limits = {"account_ids": accounts, "workload_ids": None}
    with transaction.atomic(), aggregate_settings():
        _signature_days_delete(day, day, limits)
        _signature_days_merge(day, day, limits, alone_first=False)


def reported_changed(*, workload_ids: set[int], days: set[dt.date]) -> None:
    """After reported metrics of these workloads and days were written: rebuild those rows."""
    performance_rollup_rebuild(days=days, workload_ids=workload_ids, lines_written=False)
