"""Writing a run's lines: price and attribute each row, COPY it in, replace the run's windows, roll up.

Streaming: rows are consumed one at a time and never held all in memory on Postgres (binary COPY straight
into the usage-line table in chunks, then one DELETE of what the new lines replace). SQLite (the demo) takes a
plain batch path. Everything happens in the caller's transaction, so a failure at any row writes nothing,
and the account's write lock (ingest/lease.py) keeps two runs of one account from interleaving.
"""

import datetime as dt
import operator
import zoneinfo
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal

from django.db import connection
from django.db.models import DateTimeField, F, Q, Sum
from django.db.models.functions import TruncDate

from finops.models import Account, GatewayCacheHit, IngestRun, UsageLine
from finops.spend.services.rollups import rollup_rebuild
from ingest.connectors.base import GATEWAY_CACHE_HIT, UsageRow

from .keys import new_keys_store
from .lines import (
    COLUMNS,
    COPY_TYPES,
    TIME_COLUMNS,
    IngestError,
    Window,
    day_of,
)
from .preparing import LinePreparer

_TIMES = operator.itemgetter(*TIME_COLUMNS)


@dataclass
class WriteResult:
    read: int
    written: int
    replaced: int
    windows: list[Window]
    days: set[dt.date] = field(default_factory=set)  # the UTC days whose rollup was rebuilt (written or replaced)
    left_out: dict = field(default_factory=dict)  # a FOCUS import's rows left out (IngestRun.left_out)


def day_window(day: dt.date) -> Window:
    start = dt.datetime.combine(day, dt.time(), tzinfo=dt.UTC)
    return start, start + dt.timedelta(days=1)


def utc_days(start: dt.datetime, end: dt.datetime) -> set[dt.date]:
    """The UTC days the half-open period [start, end) touches."""
    day = start.astimezone(dt.UTC).date()
    last = (end - dt.timedelta(microseconds=1)).astimezone(dt.UTC).date()
    days = set()
    while day <= last:
        days.add(day)
        day += dt.timedelta(days=1)
    return days


def merge_windows(windows: Iterable[Window]) -> list[Window]:
    merged: list[list[dt.datetime]] = []
    for start, end in sorted(windows):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(start, end) for start, end in merged]


class BatchWriter:
    """SQLite: lines held in memory (demo-sized), inserted by one executemany.

    Each value is stored as its field's get_db_prep_save gives it, as bulk_create prepares it (COLUMNS is every
    concrete field of a usage line but its id, so nothing is left to a default): the same stored values. bulk_create
    made a model instance per line and, SQLite allowing 999 parameters a statement, compiled an INSERT for every 24
    lines: the demo's 13,607 lines took 2.8 s of CPU to add and insert that way, 1.3 s with executemany (load 12-19).
    Most values are already what get_db_prep_save hands back (an int, a str, a finite Decimal, None): those are
    passed as they are (`_prepare_as_django_does`), the rest go through Django; the demo's import writing 1.3-1.4 s
    less CPU on SQLite (docs/architecture.md, Habits)."""

    def __init__(self, preparer: LinePreparer):
        self.preparer = preparer
        self.lines: list[tuple] = []

    def add(self, values: tuple) -> None:
        self.lines.append(values)

    def replace(self, stale) -> tuple[int, int]:
        replaced = stale.delete()[0]
        new_keys_store(*self.preparer.take_new(all_of_them=True))
        fields = [UsageLine._meta.get_field(name) for name in COLUMNS]
        quote = connection.ops.quote_name
        sql = (
            f"INSERT INTO {quote(UsageLine._meta.db_table)} ({', '.join(quote(f.column) for f in fields)}) "
            f"VALUES ({', '.join(['%s'] * len(fields))})"
        )
        prepare = [_prepare_as_django_does(field) for field in fields]
        prepared = [[p(value) for p, value in zip(prepare, values, strict=True)] for values in self.lines]
        if prepared:
            with connection.cursor() as cursor:
                cursor.executemany(sql, prepared)
        return len(self.lines), replaced


# The values a field's get_db_prep_save hands back unchanged (None too, for every kind here), by the field's internal
# type (a foreign key's: its target's): Django's integer fields return int(value), its text fields str(value), its
# decimal fields Decimal(value) once they have checked it is finite, and the backend adapts none of them. That is
# Django 5.2's behaviour (449,196 values of a demo load checked equal): a Django upgrade checks it again.
_AS_IS = {
    "AutoField": int,
    "BigAutoField": int,
    "IntegerField": int,
    "BigIntegerField": int,
    "PositiveBigIntegerField": int,
    "CharField": str,
    "DecimalField": Decimal,
    "FloatField": float,
}


def _prepare_as_django_does(field):
    """A function giving what `field.get_db_prep_save(value, connection)` gives, without Django's per-value calls
    (~4 µs a value, ~30 values a line) for a value it would hand back as it is: None, or a value of exactly the type
    the field keeps (`_AS_IS`; a bool is not an int here, nor a non-finite Decimal a Decimal: Django changes or
    refuses those). A datetime goes through Django (SQLite stores it as text in UTC), remembered per value: the
    lines of a file share a few hundred periods."""
    prep = field.get_db_prep_save
    kind = _AS_IS.get((field.target_field if field.is_relation else field).get_internal_type())
    if kind is Decimal:
        return lambda value: (
            value if value is None or (type(value) is Decimal and value.is_finite()) else prep(value, connection)
        )
    if kind is not None:
        return lambda value: value if value is None or type(value) is kind else prep(value, connection)
    if isinstance(field, DateTimeField):
        known: dict = {}

        def moment(value):
            if value is None or value.tzinfo is None:  # a naive one: Django warns, every time
                return prep(value, connection)
            try:
                return known[value]
            except KeyError:
                prepared = known[value] = prep(value, connection)
                return prepared

        return moment
    return lambda value: prep(value, connection)


class CopyWriter:
    """Postgres: binary COPY straight into the usage-line table, in chunks; then the replaced lines are deleted.

    Rows are copied in chunks: while a COPY is open the connection answers nothing else, and preparing
    a row (or the connector producing it) may need a query, as does storing the chunk's new tag sets.
    Memory stays bounded by the chunk. Binary COPY spares formatting every value as text here and parsing
    it again in Postgres.
    """

    CHUNK = 20_000

    def __init__(self, preparer: LinePreparer):
        self.preparer = preparer
        self.cursor = connection.cursor()
        self.copy_sql = f"COPY {UsageLine._meta.db_table} ({', '.join(COLUMNS)}) FROM STDIN (FORMAT BINARY)"
        self.buffer: list[tuple] = []
        self.count = 0
        # A naive datetime means the connection's time zone, as Postgres reads one in a text COPY.
        self.naive_zone = zoneinfo.ZoneInfo(connection.timezone_name)

    def add(self, values: tuple) -> None:
        self.count += 1
        start, end, billing_start = _TIMES(values)
        if start.tzinfo is None or end.tzinfo is None or (billing_start is not None and billing_start.tzinfo is None):
            values = tuple(
                v.replace(tzinfo=self.naive_zone) if i in TIME_COLUMNS and v is not None and v.tzinfo is None else v
                for i, v in enumerate(values)
            )
        self.buffer.append(values)
        if len(self.buffer) >= self.CHUNK:
            self.flush()

    def flush(self) -> None:
        new_keys_store(*self.preparer.take_new())
        if self.buffer:
            with self.cursor.cursor.copy(self.copy_sql) as copy:
                copy.set_types(COPY_TYPES)
                write = copy.write_row
                for row in self.buffer:
                    write(row)
            self.buffer = []

    def replace(self, stale) -> tuple[int, int]:
        self.flush()
        new_keys_store(*self.preparer.take_new(all_of_them=True))
        return self.count, stale.delete()[0]  # nothing cascades from usage lines: Django issues one DELETE


def _stale(account: Account, run: IngestRun, windows: list[Window], billing_starts: set[dt.datetime]):
    """The account's lines a write replaces: those starting in `windows`, and those of the billing periods,
    but for the run's own lines (already written when this is asked).

    A FOCUS line charged in one month may be billed in the next; replacing by billing period catches it.
    A line of another billing period is that period's export to restate, even when charged in `windows`:
    replacing it here would lose it (June's late line charged 31 May, deleted by re-importing May).
    """
    if not windows and not billing_starts:
        return UsageLine.objects.none()
    in_scope = Q()
    for start, end in windows:
        in_scope |= Q(period_start__gte=start, period_start__lt=end)
    if billing_starts:
        mine = Q(billing_period_start__in=billing_starts)
        in_scope = mine | (in_scope & (Q(billing_period_start__isnull=True) | mine)) if windows else mine
    return UsageLine.objects.filter(in_scope, account=account).exclude(ingest_run=run)


def hour_window(moment: dt.datetime) -> Window:
    start = moment.astimezone(dt.UTC).replace(minute=0, second=0, microsecond=0)
    return start, start + dt.timedelta(hours=1)


def write_rows(
    *,
    account: Account,
    run: IngestRun,
    rows: Iterable[UsageRow],
    window: Window | None = None,
    granularity: str = "day",
) -> WriteResult:
    """Replace the account's lines in what the rows cover (or in `window`, for an API pull), then roll up.

    Must run inside a transaction. What a file covers: the billing periods its rows name (a restated
    FOCUS month replaces the month), else the UTC days — or hours, for hourly gateway logs — they start in.
    """
    preparer = LinePreparer(account, run)
    writer = CopyWriter(preparer) if connection.vendor == "postgresql" else BatchWriter(preparer)
    read, slots, periods, cache_hits = 0, set(), set(), []
    starts: set[dt.datetime] = set()  # every period a row starts in: its day needs rolling up, window or not
    blank_rows: dict[dt.date, str] = {}  # day -> the first row of nothing (no token, request or cost) on it
    days_with_usage: set[dt.date] = set()
    window_of = hour_window if granularity == "hour" else (lambda moment: day_window(day_of(moment)))
    slot_of = _cached(window_of)  # rows share a few hundred periods: each one's window is found once
    for row in rows:
        read += 1
        if window is not None:
            if not window[0] <= row.period_start < window[1]:
                raise IngestError(
                    f"{row.source_ref or 'a line'}: period {row.period_start.isoformat()} lies outside the window read"
                )
        elif row.billing_period_start is not None and row.billing_period_end is not None:
            periods.add((row.billing_period_start, row.billing_period_end))
        else:
            slots.add(slot_of(row.period_start))
        starts.add(row.period_start)
        if row.charge_category == GATEWAY_CACHE_HIT:  # served by the gateway's cache: no provider usage
            cache_hits.append(preparer.cache_hit(row))
            continue
        if (
            row.input_tokens
            or row.cached_input_tokens
            or row.cache_write_tokens
            or row.output_tokens
            or row.requests
            or row.cost
        ):
            days_with_usage.add(day_of(row.period_start))
        else:
            blank_rows.setdefault(day_of(row.period_start), row.source_ref or "a row")
        writer.add(preparer.prepare(row))
    if window is None:  # a file: never let a day of blank rows replace a day of tokens
        refuse_blank_days(
            {day: ref for day, ref in blank_rows.items() if day not in days_with_usage},
            account=account,
            run=run,
            periods=periods,
            slots=slots,
        )
    return replace_and_roll_up(
        account=account,
        run=run,
        writer=writer,
        read=read,
        windows=[window] if window is not None else None,
        periods=periods,
        slots=slots,
        starts=starts,
        cache_hits=cache_hits,
    )


def _cached(function, limit: int = 8192):
    """`function` of one argument, remembered for up to `limit` distinct arguments at a time (memory stays flat)."""
    known: dict = {}

    def cached(argument):
        try:
            return known[argument]
        except KeyError:
            if len(known) >= limit:
                known.clear()
            value = known[argument] = function(argument)
            return value

    return cached


def refuse_blank_days(
    blank_days: dict[dt.date, str], *, account: Account, run: IngestRun, periods: set[Window], slots: set[Window]
) -> None:
    """IngestError when a file would replace a day of stored tokens with rows of nothing (no token, no request, no
    cost): the mark of rows a reader failed to read, never what a provider means (a day without usage is a day
    without rows). Readers refuse such rows themselves (a short row, an unclosed quote, an empty token cell);
    this is the write path's own guard, for every reader. Asked before anything is replaced, so the run fails
    inside its transaction and the stored day, its lines and its rollups stay as they were."""
    if not blank_days:
        return
    stale = _stale(account, run, merge_windows([*periods, *slots]), {start for start, _ in periods})
    stored = dict(
        stale.annotate(day=TruncDate("period_start", tzinfo=dt.UTC))
        .filter(day__in=blank_days)
        .values("day")
        .annotate(
            tokens=Sum(F("input_tokens") + F("cached_input_tokens") + F("cache_write_tokens") + F("output_tokens"))
        )
        .order_by()
        .values_list("day", "tokens")
    )
    for day in sorted(blank_days):
        if stored.get(day):
            raise IngestError(
                f"{blank_days[day]}: a row with no tokens, requests or cost would replace {stored[day]:,} "
                "stored tokens "
                f"of {day.isoformat()}; nothing was imported (a row that could not be read is not a zero: check the "
                "file's columns on that line)"
            )


@dataclass
class Replaced:
    """Lines of a file deleted before its first COPY (`replace_ahead`): what they covered, how many, their UTC days."""

    windows: list[Window]
    billing_starts: set[dt.datetime]
    count: int
    days: set[dt.date]


def replace_ahead(*, account: Account, run: IngestRun, periods: set[Window], slots: set[Window]) -> Replaced | None:
    """Delete, before any of the run's lines is stored, what a file's first batch shows it replaces (its billing
    `periods`, and the `slots` of its rows without one); None, deleting nothing, when the batch names no billing
    period. After the COPY the same DELETE, and the query of the replaced lines' days, read every line the run
    has just written too (the usage-line table's only index on period is a BRIN: a range holding new lines is
    read whole), 0.25–0.8 s per 1M new lines each (load 4–11), after everything else. Deleted first they read only
    the old lines.

    Only with a billing period: what a file replaces can then only grow with its later batches (their billing
    periods add lines billed in them, their windows add lines without a billing period), so nothing deleted here
    is outside what the whole file replaces. A batch without one would replace every line of its days, which a
    later batch naming a billing period narrows to that period's (`_stale`)."""
    if not periods:
        return None
    windows, billing_starts = merge_windows([*periods, *slots]), {start for start, _ in periods}
    stale = _stale(account, run, windows, billing_starts)
    days = _days_of(stale)
    return Replaced(windows, billing_starts, stale.delete()[0], days)


def _days_of(lines) -> set[dt.date]:
    """The UTC days `lines` start on."""
    return set(
        lines.annotate(day=TruncDate("period_start", tzinfo=dt.UTC)).values_list("day", flat=True).order_by().distinct()
    )


def replace_and_roll_up(
    *,
    account: Account,
    run: IngestRun,
    writer,
    read: int,
    windows: list[Window] | None,
    periods: set[Window],
    slots: set[Window],
    starts: set[dt.datetime],
    cache_hits: list[GatewayCacheHit] = (),
    ahead: Replaced | None = None,
) -> WriteResult:
    """After the new lines are in: delete the lines they replace, roll up every day touched, say what happened.

    `windows`: what an API pull read; None for a file, which covers its billing `periods`, else its `slots`.
    `starts`: every period a new line starts in (its day needs rolling up, window or not).
    `cache_hits`: the gateway cache hits read (GatewayCacheHit), which replace the account's in the same windows.
    `ahead`: what `replace_ahead` deleted before the lines were written; when it covered what the file replaces,
    nothing is deleted (nor read) here.
    """
    if windows is None:
        windows = merge_windows([*periods, *slots])
    billing_starts = {start for start, _ in periods}
    if ahead is not None and ahead.windows == windows and ahead.billing_starts == billing_starts:
        stale, old_days = None, set()
    else:
        stale = _stale(account, run, windows, billing_starts)
        # rollup_rebuild rebuilds exactly the days given: every day of a line written or replaced, not just the
        # first and last (a FOCUS month's late lines fall on days outside its window, not always adjacent).
        old_days = _days_of(stale)
    written, replaced = writer.replace(stale)
    if ahead is not None:
        replaced, old_days = replaced + ahead.count, old_days | ahead.days
    _cache_hits_replace(account, run, windows, cache_hits)
    touched = set().union(*(utc_days(*w) for w in windows)) if windows else set()
    touched |= {day_of(m) for m in starts} | old_days
    rollup_rebuild(days=touched, account_ids=[account.id])
    return WriteResult(read=read, written=written, replaced=replaced, windows=windows, days=touched)


def _cache_hits_replace(account: Account, run: IngestRun, windows: list[Window], cache_hits) -> None:
    """The account's gateway cache hits in `windows` are replaced by the run's, as its usage lines are (after the
    writer stored the run's new signatures)."""
    if windows:
        in_scope = Q()
        for start, end in windows:
            in_scope |= Q(period_start__gte=start, period_start__lt=end)
        GatewayCacheHit.objects.filter(in_scope, account=account).exclude(ingest_run=run).delete()
    GatewayCacheHit.objects.bulk_create(cache_hits, batch_size=5000)
