"""Writing a run's lines: price and key each row, stage them, replace the run's windows, roll up.

Streaming: rows are consumed one at a time and never held all in memory on Postgres (COPY into a
temporary staging table, then one set-based replace). SQLite (the demo) takes a plain batch path.
Everything happens in the caller's transaction, so a failure at any row writes nothing.
"""

import datetime as dt
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal

from django.db import connection
from django.db.models import Max, Min, Q
from psycopg.types.json import Jsonb

from finops.modelids import normalise_model
from finops.models import Account, CostBasis, IngestRun, Provider, UsageLine
from finops.services.fx import FxConverter
from finops.services.prices import PriceBook, Tokens, cost_from_price
from finops.services.rollups import rollup_rebuild

from .providers.base import UsageRow

Window = tuple[dt.datetime, dt.datetime]

# UsageLine columns written by ingestion, in COPY order; `identity` becomes `line_key` at merge time.
COLUMNS = (
    "account_id", "provider_id", "ingest_run_id", "period_start", "period_end", "model", "model_raw", "service_tier",
    "project_ref", "api_key_ref", "user_ref", "tags", "input_tokens", "cached_input_tokens", "cache_write_tokens",
    "output_tokens", "requests", "cost", "currency", "reporting_cost", "cost_basis", "charge_category", "latency",
    "billing_period_start",
)
JSON_COLUMNS = tuple(COLUMNS.index(name) for name in ("tags", "latency"))


MAX_AMOUNT = Decimal(10) ** 20  # NUMERIC(38, 18)
MAX_COUNT = 2**63 - 1  # bigint


class IngestError(Exception):
    """A run cannot complete; the message is shown to the user as it is."""


@dataclass
class WriteResult:
    read: int
    written: int
    replaced: int
    windows: list[Window]


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


class LinePreparer:
    """Row -> column values: provider, normalised model, cost basis, reporting-currency cost."""

    def __init__(self, account: Account, run: IngestRun):
        self.account, self.run = account, run
        # Everything a row may need is loaded now: once the COPY starts, the connection answers nothing else.
        self.providers = {p.slug: p for p in Provider.objects.all()}
        self.account_provider = next(p for p in self.providers.values() if p.id == account.provider_id)
        self.price_books = PriceBook.all_providers()
        self.fx = FxConverter()

    def prepare(self, row: UsageRow) -> tuple:
        self._check_fits(row)
        provider = self.providers.get(row.provider_slug) if row.provider_slug else self.account_provider
        if provider is None:
            raise IngestError(f"{row.source_ref}: unknown provider {row.provider_slug!r} (add it first)")
        model = normalise_model(row.model_raw)
        day = row.period_start.astimezone(dt.UTC).date()
        cost, currency, basis = row.cost, row.currency, CostBasis.BILLED
        if cost is None:
            price = self.price_books[provider.id].price_on(model, day)
            if price is None:
                basis = CostBasis.UNPRICED
            else:
                tokens = Tokens(row.input_tokens, row.cached_input_tokens, row.cache_write_tokens, row.output_tokens)
                cost = cost_from_price(price, tokens, batch=row.service_tier.lower() == "batch")
                currency, basis = price.currency, CostBasis.ESTIMATED
        reporting_cost = None if cost is None else self.fx.to_reporting(cost, currency, day)
        return (
            self.account.id, provider.id, self.run.id, row.period_start, row.period_end, model, row.model_raw,
            row.service_tier, row.project_ref, row.api_key_ref, row.user_ref, row.tags, row.input_tokens,
            row.cached_input_tokens, row.cache_write_tokens, row.output_tokens, row.requests, cost, currency,
            reporting_cost, basis, row.charge_category, row.latency, row.billing_period_start,
        )


    @staticmethod
    def _check_fits(row: UsageRow) -> None:
        """Refuse, naming the line, values the columns cannot hold (rather than a database error mid-COPY)."""
        if row.cost is not None and abs(row.cost) >= MAX_AMOUNT:
            raise IngestError(f"{row.source_ref or 'a line'}: cost {row.cost} is beyond what can be stored (10^20)")
        for name in ("input_tokens", "cached_input_tokens", "cache_write_tokens", "output_tokens", "requests"):
            if getattr(row, name) > MAX_COUNT:
                raise IngestError(f"{row.source_ref or 'a line'}: {name} {getattr(row, name)} is beyond what can be stored")


class BatchWriter:
    """SQLite: lines held in memory (demo-sized), keyed in Python."""

    def __init__(self):
        self.lines: list[UsageLine] = []
        self.occurrences: Counter[str] = Counter()

    def add(self, values: tuple, identity: str) -> None:
        self.occurrences[identity] += 1
        n = self.occurrences[identity]
        line_key = identity if n == 1 else f"{identity[:56]}{n:08d}"
        self.lines.append(UsageLine(**dict(zip(COLUMNS, values)), line_key=line_key))

    def replace(self, stale) -> tuple[int, int]:
        replaced = stale.delete()[0]
        UsageLine.objects.bulk_create(self.lines, batch_size=5000)
        return len(self.lines), replaced


class CopyWriter:
    """Postgres: COPY into a temporary staging table, then one DELETE and one INSERT … SELECT.

    Rows are copied in chunks: while a COPY is open the connection answers nothing else, and preparing
    a row (or the connector producing it) may need a query. Memory stays bounded by the chunk.
    """

    STAGE = "ingest_stage"
    CHUNK = 20_000

    def __init__(self):
        self.cursor = connection.cursor()
        columns = ", ".join(COLUMNS)
        # ON COMMIT DROP is not enough inside a savepoint (nested atomic blocks, tests): drop it explicitly too.
        self.cursor.execute(f"DROP TABLE IF EXISTS {self.STAGE}")
        self.cursor.execute(
            f"CREATE TEMP TABLE {self.STAGE} ON COMMIT DROP AS "
            f"SELECT {columns}, line_key AS identity, 0::bigint AS seq FROM {UsageLine._meta.db_table} WITH NO DATA"
        )
        self.copy_sql = f"COPY {self.STAGE} ({columns}, identity, seq) FROM STDIN"
        self.buffer: list[tuple] = []
        self.count = 0

    def add(self, values: tuple, identity: str) -> None:
        self.count += 1
        values = tuple(Jsonb(v) if i in JSON_COLUMNS and v is not None else v for i, v in enumerate(values))
        self.buffer.append((*values, identity, self.count))
        if len(self.buffer) >= self.CHUNK:
            self.flush()

    def flush(self) -> None:
        if self.buffer:
            with self.cursor.cursor.copy(self.copy_sql) as copy:
                for row in self.buffer:
                    copy.write_row(row)
            self.buffer = []

    def replace(self, stale) -> tuple[int, int]:
        self.flush()
        replaced = stale.delete()[0]  # nothing cascades from usage lines: Django issues one DELETE
        columns = ", ".join(COLUMNS)
        # The n-th line with the same identity keeps its own key: repeats in a source are kept, not merged.
        self.cursor.execute(
            f"INSERT INTO {UsageLine._meta.db_table} ({columns}, line_key) "
            f"SELECT {columns}, CASE WHEN n = 1 THEN identity ELSE left(identity, 56) || lpad(n::text, 8, '0') END "
            f"FROM (SELECT *, row_number() OVER (PARTITION BY period_start, identity ORDER BY seq) AS n FROM {self.STAGE}) s"
        )
        written = self.cursor.rowcount
        self.cursor.execute(f"DROP TABLE {self.STAGE}")
        return written, replaced


def _stale(account: Account, windows: list[Window], billing_starts: set[dt.datetime]):
    """The account's lines a write replaces: those starting in `windows`, and those of the billing periods.

    A FOCUS line charged in one month may be billed in the next; replacing by billing period catches it.
    """
    if not windows and not billing_starts:
        return UsageLine.objects.none()
    in_scope = Q()
    for start, end in windows:
        in_scope |= Q(period_start__gte=start, period_start__lt=end)
    if billing_starts:
        in_scope |= Q(billing_period_start__in=billing_starts)
    return UsageLine.objects.filter(in_scope, account=account)


def _day_of(moment: dt.datetime) -> dt.date:
    return moment.astimezone(dt.UTC).date()


def hour_window(moment: dt.datetime) -> Window:
    start = moment.astimezone(dt.UTC).replace(minute=0, second=0, microsecond=0)
    return start, start + dt.timedelta(hours=1)


def write_rows(
    *, account: Account, run: IngestRun, rows: Iterable[UsageRow], window: Window | None = None, granularity: str = "day"
) -> WriteResult:
    """Replace the account's lines in what the rows cover (or in `window`, for an API pull), then roll up.

    Must run inside a transaction. What a file covers: the billing periods its rows name (a restated
    FOCUS month replaces the month), else the UTC days — or hours, for hourly gateway logs — they start in.
    """
    preparer = LinePreparer(account, run)
    writer = CopyWriter() if connection.vendor == "postgresql" else BatchWriter()
    read, slots, periods = 0, set(), set()
    first = last = None
    slot_of = hour_window if granularity == "hour" else (lambda moment: day_window(_day_of(moment)))
    for row in rows:
        read += 1
        if window is not None:
            if not window[0] <= row.period_start < window[1]:
                raise IngestError(f"{row.source_ref or 'a line'}: period {row.period_start.isoformat()} lies outside the window read")
        elif row.billing_period_start is not None and row.billing_period_end is not None:
            periods.add((row.billing_period_start, row.billing_period_end))
        else:
            slots.add(slot_of(row.period_start))
        first = row.period_start if first is None or row.period_start < first else first
        last = row.period_start if last is None or row.period_start > last else last
        writer.add(preparer.prepare(row), row.identity())
    if isinstance(writer, CopyWriter):
        writer.flush()  # the last chunk, so the queries below see every row staged
    windows = [window] if window is not None else merge_windows([*periods, *slots])
    stale = _stale(account, windows, {start for start, _ in periods})
    old_span = stale.aggregate(first=Min("period_start"), last=Max("period_start"))
    written, replaced = writer.replace(stale)
    touched = set().union(*(utc_days(*w) for w in windows)) if windows else set()
    touched |= {_day_of(m) for m in (first, last, old_span["first"], old_span["last"]) if m is not None}
    rollup_rebuild(days=touched, account_ids=[account.id])
    return WriteResult(read=read, written=written, replaced=replaced, windows=windows)
