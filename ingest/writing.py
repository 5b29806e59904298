"""Writing a run's lines: price and key each row, stage them, replace the run's windows, roll up.

Streaming: rows are consumed one at a time and never held all in memory on Postgres (COPY into a
temporary staging table, then one set-based replace). SQLite (the demo) takes a plain batch path.
Everything happens in the caller's transaction, so a failure at any row writes nothing.
"""

import datetime as dt
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from django.db import connection
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
)


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
        self.providers = {p.slug: p for p in Provider.objects.all()}
        self.price_books: dict[int, PriceBook] = {}
        self.fx = FxConverter()

    def prepare(self, row: UsageRow) -> tuple:
        provider = self.providers.get(row.provider_slug) if row.provider_slug else self.account.provider
        if provider is None:
            raise IngestError(f"{row.source_ref}: unknown provider {row.provider_slug!r} (add it first)")
        model = normalise_model(row.model_raw)
        day = row.period_start.astimezone(dt.UTC).date()
        cost, currency, basis = row.cost, row.currency, CostBasis.BILLED
        if cost is None:
            book = self.price_books.get(provider.id) or self.price_books.setdefault(provider.id, PriceBook(provider))
            price = book.price_on(model, day)
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
            reporting_cost, basis, row.charge_category, row.latency,
        )


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

    def replace(self, account: Account, windows: list[Window]) -> tuple[int, int]:
        replaced = sum(_stale(account, w).delete()[0] for w in windows)
        UsageLine.objects.bulk_create(self.lines, batch_size=5000)
        return len(self.lines), replaced


class CopyWriter:
    """Postgres: COPY into a temporary staging table, then one DELETE and one INSERT … SELECT."""

    STAGE = "ingest_stage"

    def __init__(self):
        self.cursor = connection.cursor()
        columns = ", ".join(COLUMNS)
        self.cursor.execute(
            f"CREATE TEMP TABLE {self.STAGE} ON COMMIT DROP AS "
            f"SELECT {columns}, line_key AS identity, 0::bigint AS seq FROM {UsageLine._meta.db_table} WITH NO DATA"
        )
        self.copy_cm = self.cursor.cursor.copy(f"COPY {self.STAGE} ({columns}, identity, seq) FROM STDIN")
        self.copy = self.copy_cm.__enter__()
        self.count = 0

    def add(self, values: tuple, identity: str) -> None:
        self.count += 1
        tags, latency = values[11], values[22]
        values = (*values[:11], Jsonb(tags), *values[12:22], None if latency is None else Jsonb(latency))
        self.copy.write_row((*values, identity, self.count))

    def close(self, error: BaseException | None = None) -> None:
        """End the COPY: normally, or (with `error`) by aborting it so the server discards the rows."""
        if self.copy_cm is not None:
            copy_cm, self.copy_cm = self.copy_cm, None
            if error is None:
                copy_cm.__exit__(None, None, None)
            else:
                try:
                    copy_cm.__exit__(type(error), error, error.__traceback__)
                except Exception:  # noqa: BLE001 - the original error is the one to report
                    pass

    def replace(self, account: Account, windows: list[Window]) -> tuple[int, int]:
        self.close()
        replaced = sum(_stale(account, w).delete()[0] for w in windows)
        columns = ", ".join(COLUMNS)
        # The n-th line with the same identity keeps its own key: repeats in a source are kept, not merged.
        self.cursor.execute(
            f"INSERT INTO {UsageLine._meta.db_table} ({columns}, line_key) "
            f"SELECT {columns}, CASE WHEN n = 1 THEN identity ELSE left(identity, 56) || lpad(n::text, 8, '0') END "
            f"FROM (SELECT *, row_number() OVER (PARTITION BY period_start, identity ORDER BY seq) AS n FROM {self.STAGE}) s"
        )
        return self.cursor.rowcount, replaced


def _stale(account: Account, window: Window):
    start, end = window
    return UsageLine.objects.filter(account=account, period_start__gte=start, period_start__lt=end)


def write_rows(*, account: Account, run: IngestRun, rows: Iterable[UsageRow], window: Window | None = None) -> WriteResult:
    """Replace the account's lines in the windows the rows cover (or in `window`, for an API pull).

    Must run inside a transaction. A file's windows are the billing periods its rows name (a restated
    FOCUS month replaces the month) or else the UTC days they start in.
    """
    preparer = LinePreparer(account, run)
    writer = CopyWriter() if connection.vendor == "postgresql" else BatchWriter()
    read, days, periods = 0, set(), set()
    try:
        for row in rows:
            read += 1
            if window is not None:
                if not window[0] <= row.period_start < window[1]:
                    raise IngestError(f"{row.source_ref or 'a line'}: period {row.period_start.isoformat()} lies outside the window read")
            elif row.billing_period_start is not None and row.billing_period_end is not None:
                periods.add((row.billing_period_start, row.billing_period_end))
            else:
                days.add(row.period_start.astimezone(dt.UTC).date())
            writer.add(preparer.prepare(row), row.identity())
    except BaseException as error:
        if isinstance(writer, CopyWriter):
            writer.close(error)
        raise
    windows = [window] if window is not None else merge_windows([*periods, *map(day_window, days)])
    written, replaced = writer.replace(account, windows)
    touched = set().union(*(utc_days(*w) for w in windows)) if windows else set()
    rollup_rebuild(days=touched, account_ids=[account.id])
    return WriteResult(read=read, written=written, replaced=replaced, windows=windows)
