"""Any half-open period [start, end) read from the two rollups (issue 4 page bench): whole UTC months from
MonthlySpend, and each partial month at an edge whichever way reads fewer daily rows — its days in the period
from DailySpend, or its MonthlySpend row minus its days outside the period.

A year ending today is then ~19k monthly rows plus about a week of daily rows, not ~534k daily rows at 10M
lines. The sums are the same: MonthlySpend is DailySpend summed by month (finops.spend.services.monthly_rollup), every
measure is a sum, and integers and Decimals add and subtract exactly. Callers keep a group only where its net
line count is positive (a group whose lines all lie outside the period nets to zero lines).
"""

import datetime as dt
import decimal
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.core.exceptions import EmptyResultSet
from django.db import connections
from django.db.models import Q, QuerySet

from finops.core.months import month_of, next_month
from finops.models import DailySpend, MonthlySpend

Days = tuple[dt.date, dt.date]  # half-open [first, end)


@dataclass
class Plan:
    months: list[dt.date] = field(default_factory=list)  # whole months added from MonthlySpend
    add_days: list[Days] = field(default_factory=list)  # days added from DailySpend
    subtract_days: list[Days] = field(default_factory=list)  # days taken away from DailySpend (of months in `months`)


def _data_days(first: dt.date, end: dt.date, today: dt.date) -> int:
    """Days of [first, end) that can hold spend: none after today (a cost estimate only, never a correctness one)."""
    return max(0, (min(end, today + dt.timedelta(days=1)) - first).days)


def plan(start: dt.date, end: dt.date, *, today: dt.date) -> Plan:
    """How to read [start, end): month by month, a whole month from MonthlySpend; a partial one either as its
    days (DailySpend) or as the month minus its other days, whichever has fewer days that can hold data."""
    result = Plan()
    month = month_of(start)
    while month < end:
        following = next_month(month)
        first, stop = max(start, month), min(end, following)
        outside = [r for r in ((month, first), (stop, following)) if r[0] < r[1]]
        if not outside:
            result.months.append(month)
        elif sum(_data_days(a, b, today) for a, b in outside) < _data_days(first, stop, today):
            result.months.append(month)
            result.subtract_days += outside
        else:
            result.add_days.append((first, stop))
        month = following
    return result


def _days(ranges: list[Days]) -> Q:
    where = Q()
    for first, end in ranges:
        where |= Q(day__gte=first, day__lt=end)
    return where


def parts(
    daily: QuerySet[DailySpend], monthly: QuerySet[MonthlySpend], start: dt.date, end: dt.date, *, today: dt.date
) -> list[tuple[QuerySet, int]]:
    """(rows, sign) to aggregate alike and add up (sign 1) or take away (sign -1): exactly the period's spend.
    `daily` and `monthly` are the rows the caller may see, filtered alike and not yet narrowed to a period."""
    how = plan(start, end, today=today)
    found = []
    if how.months:
        found.append((monthly.filter(month__in=how.months), 1))
    if how.add_days:
        found.append((daily.filter(_days(how.add_days)), 1))
    if how.subtract_days:
        found.append((daily.filter(_days(how.subtract_days)), -1))
    return found


def add_up(signed_rows: Iterable[tuple[dict, int]], keys: tuple[str, ...], sums: tuple[str, ...]) -> list[dict]:
    """Rows with the same keys merged, each of `sums` added (or, with sign -1, taken away); None counts as
    nothing, like SQL's SUM. Decimal money is exact: NUMERIC(38, 18) sums can need more than 28 digits."""
    merged: dict[tuple, dict] = {}
    with decimal.localcontext(prec=80):
        for row, sign in signed_rows:
            key = tuple(row[k] for k in keys)
            total = merged.setdefault(key, {**{k: row[k] for k in keys}, **{name: None for name in sums}})
            for name in sums:
                if row[name] is not None:
                    value = row[name] if sign > 0 else -row[name]
                    total[name] = value if total[name] is None else total[name] + value
    return list(merged.values())


def added(
    grouped: list[tuple[QuerySet, int]], keys: tuple[str, ...], sums: tuple[str, ...], *, each: bool = False
) -> list[dict] | dict[str, list[dict]]:
    """add_up of the parts' grouped reads (each `.values(*keys).annotate(**sums)`, alike), done by Postgres in one
    statement: the parts' GROUP BYs as subqueries under UNION ALL (a part of sign -1 negated), summed again by
    `keys`. The same sums (SUM skips NULLs, NUMERIC adds exactly), one round trip, and a row per group rather than
    per part: the overview's 30 days as an admin were two reads of ~1,200 workload × model rows, and Django's
    per-value conversion of both plus add_up cost ~20 ms of Python a request (issue 23). Each value is converted
    as the ORM converts the parts' own (the first part's converters: every part selects the same columns).
    Elsewhere (SQLite, the demo) the parts are read and added up in Python.

    `each`: not by all of `keys` together but by each key on its own ({key: rows with that key and the sums}), in
    the same statement (GROUPING SETS): the overview reads its workload table and its model table from one read by
    workload × model, and regrouping ~1,400 rows twice in Python, each value converted, cost more than the ~210
    rows of the two groupings (issue 23). The same sums as add_up of the parts by that key alone."""
    connection = connections[grouped[0][0].db]
    columns = (*keys, *sums)
    compiled = []
    for rows, sign in grouped:
        part = rows.query.get_compiler(rows.db)
        try:
            compiled.append((part, part.as_sql(), sign))
        except EmptyResultSet:  # a filter nothing can match (a member of no team): the part has no rows
            continue
    if not compiled:
        return {key: [] for key in keys} if each else []
    # Anything but exactly `columns` (no keys: `.values()` selects every field) is added up as it always was.
    if connection.vendor != "postgresql" or any(
        [alias for _, _, alias in part.select] != list(columns) for part, _, _ in compiled
    ):
        signed = [(row, sign) for rows, sign in grouped for row in rows]
        if each:
            return {key: add_up(signed, (key,), sums) for key in keys}
        return add_up(signed, keys, sums)
    quote = connection.ops.quote_name
    selects, params = [], []
    for _, (sql, part_params), sign in compiled:
        negate = "-" if sign < 0 else ""
        outer = [quote(k) for k in keys] + [f"{negate}{quote(s)}" for s in sums]
        selects.append(f"SELECT {', '.join(outer)} FROM ({sql}) AS part{len(selects)}")
        params.extend(part_params)
    outer = [*(quote(k) for k in keys), *(f"SUM({quote(s)})" for s in sums)]
    if each:
        # GROUPING(k1, …, kn) is a bit mask, bit n-1-i set where key i is not grouped by: it tells a row of one
        # grouping from the other's (a key's own value may be NULL: no workload, no model).
        group_by = f" GROUP BY GROUPING SETS ({', '.join(f'({quote(k)})' for k in keys)})"
        outer.append(f"GROUPING({', '.join(quote(k) for k in keys)})")
    else:
        group_by = f" GROUP BY {', '.join(quote(k) for k in keys)}" if keys else ""
    statement = f"SELECT {', '.join(outer)} FROM ({' UNION ALL '.join(selects)}) AS parts{group_by}"
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        rows = cursor.fetchall()
    compiler = compiled[0][0]
    converters = compiler.get_converters([expression for expression, _, _ in compiler.select])
    if converters:
        rows = compiler.apply_converters(rows, converters)  # by position: the GROUPING column, last, has none
    if not each:
        return [dict(zip(columns, row, strict=True)) for row in rows]
    found: dict[str, list[dict]] = {key: [] for key in keys}
    last = len(keys) - 1
    masks = {(1 << len(keys)) - 1 - (1 << (last - i)): (i, key) for i, key in enumerate(keys)}
    width = len(keys)
    for row in rows:
        i, key = masks[row[-1]]
        found[key].append({key: row[i], **dict(zip(sums, row[width:-1], strict=True))})
    return found
