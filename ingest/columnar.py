"""Writing RowBatches (columns from a batch reader) on Postgres: the same lines write_rows stores, in bulk.

Each batch becomes one binary COPY straight into the usage-line table, built column by column
(ingest/copy_binary.py): no Python object per line, and no text for Postgres to parse. What repeats is decided
once per distinct value, with the row writer's own pieces: the provider of a slug, the normalised model, the tag
set's id, the line signature and its attribution (LinePreparer). Amounts stay decimal text from the file to
Postgres' NUMERIC (sent as its base-10,000 digits), so nothing passes through a float; amounts in another currency
are converted one by one with the dated rate, exactly as write_rows does.
"""

import datetime as dt
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from django.db import connection

from finops.models import Account, CostBasis, IngestRun, UsageLine
from finops.performance.measures import LINE_COLUMNS
from finops.spend.models.usage import tags_text
from ingest.connectors.base import BatchDeclined, RowBatch

from . import copy_binary
from .keys import new_keys_encode
from .lines import COLUMNS, UnsafeModelName
from .preparing import LinePreparer
from .writing import (
    WriteResult,
    day_window,
    new_keys_store,
    replace_ahead,
    replace_and_roll_up,
)

_ID = pa.int64()
_PG_EPOCH_US = copy_binary.PG_EPOCH_S * 1_000_000
# The binary rows' constant fields (ColumnarWriter.lines writes the columns in this order).
_LAYOUT = (
    ("account_id", "provider_id", "ingest_run_id", "period_start", "period_end"),
    ("model", "model_raw", "service_tier", "project_ref", "api_key_ref", "user_ref"),
    ("tag_set_id", "input_tokens", "cached_input_tokens", "cache_write_tokens", "output_tokens", "requests"),
    ("cost", "currency", "reporting_cost", "cost_basis", "charge_category"),
    LINE_COLUMNS,
    ("billing_period_start", "signature_id", "invoice_id"),
)
assert tuple(name for run in _LAYOUT for name in run) == COLUMNS, "ColumnarWriter.lines writes COPY order"
_FIELD_COUNT = copy_binary.field_count(len(COLUMNS))
_BILLED = copy_binary.text(CostBasis.BILLED.value)
_NO_PERFORMANCE = copy_binary.NULL * len(LINE_COLUMNS)
_NO_INVOICE = copy_binary.text("")
AHEAD = 2  # batches prepared (or being prepared) ahead of the one being COPYed (write_batches)


class ColumnarWriter:
    def __init__(self, preparer: LinePreparer):
        self.preparer = preparer
        self.cursor = connection.cursor()
        self.copy_sql = f"COPY {UsageLine._meta.db_table} ({', '.join(COLUMNS)}) FROM STDIN (FORMAT binary)"
        self.count = 0
        self._signatures: dict[str, int] = {}  # joined signature columns -> signature id, across batches
        self._tag_ids: dict[int, tuple[dict, int]] = {}  # id(tags) -> (tags, tag set id): readers reuse the dicts

    CACHE_LIMIT = 65536

    def copy(self, data, new_keys: tuple) -> None:
        """COPY one batch's lines (binary rows: `lines`, or the gateway writer's), after storing the tag sets and
        signatures waiting to be (`LinePreparer.take_new`)."""
        new_keys_store(*new_keys)  # not during the COPY: it holds the connection until it ends
        with self.cursor.cursor.copy(self.copy_sql) as copy:
            # psycopg sends what it is given: the rows between the format's signature and trailer.
            copy.write(copy_binary.SIGNATURE)
            copy.write(data)
            copy.write(copy_binary.TRAILER)

    def lines(self, batch: RowBatch) -> pa.Buffer:
        """The batch's usage lines as binary COPY rows (ingest/copy_binary.py), columns in COPY order: nothing for
        Postgres to parse (a CSV COPY had it read every timestamp and amount from text)."""
        prep = self.preparer
        providers = [self._provider_id(slug) for slug in batch.provider_slug.unique().to_pylist()]
        provider_id = _lookup(batch.provider_slug, providers, _ID)
        try:
            model = _mapped(batch.model_raw, prep.normalised_model)
        except UnsafeModelName:
            raise BatchDeclined("a model name holding a control character") from None  # the row writer names the line
        tag_ids = [self._tag_set_id(tags) for tags in batch.tag_sets]
        tag_set_id = pc.take(pa.array(tag_ids, _ID), batch.tag_set_of)
        signature_id = self._signature_ids(batch, provider_id, model, tag_set_id, dict(zip(tag_ids, batch.tag_sets)))
        cost, reporting_cost = copy_binary.numerics(batch.cost), self._reporting_cost(batch)
        # In the reporting currency the reporting cost is the cost itself: its fields are the same bytes.
        reporting_cost = cost if reporting_cost is batch.cost else copy_binary.numerics(reporting_cost)
        return copy_binary.rows(
            [
                _FIELD_COUNT,
                copy_binary.fixed(
                    copy_binary.bigint(prep.account_id),
                    provider_id.to_numpy(),
                    copy_binary.bigint(prep.run_id),
                    _pg_us(batch.period_start),
                    _pg_us(batch.period_end),
                ),
                *(
                    _texts(column)
                    for column in (
                        model,
                        batch.model_raw,
                        batch.service_tier,
                        batch.project_ref,
                        batch.api_key_ref,
                        batch.user_ref,
                    )
                ),
                copy_binary.bigints(tag_set_id),
                *(
                    copy_binary.bigints(column)
                    for column in (
                        batch.input_tokens,
                        batch.cached_input_tokens,
                        batch.cache_write_tokens,
                        batch.output_tokens,
                        batch.requests,
                    )
                ),
                cost,
                _texts(batch.currency),
                reporting_cost,
                _BILLED,
                _texts(batch.charge_category),
                _NO_PERFORMANCE,  # FOCUS lines measure no latency
                copy_binary.bigints(pc.subtract(batch.billing_period_start.cast(_ID), _PG_EPOCH_US)),
                copy_binary.bigints(signature_id),
                _texts(batch.invoice_id) if batch.invoice_id is not None else _NO_INVOICE,
            ]
        )

    def _tag_set_id(self, tags: dict) -> int:
        known = self._tag_ids.get(id(tags))
        if known is not None and known[0] is tags:  # the very dict (held here, so its id is not reused)
            return known[1]
        if len(self._tag_ids) >= self.CACHE_LIMIT:
            self._tag_ids.clear()
        # Its text built directly, not through tags_json's cache: this writer asks once per set (the id cache above),
        # and a per-resource file's tens of thousands of distinct sets only filled and emptied that cache.
        identity = self.preparer.tag_set_of(tags, text=tags_text(tags))
        self._tag_ids[id(tags)] = (tags, identity)
        return identity

    def _provider_id(self, slug: str) -> int:
        provider = self.preparer.providers.get(slug) if slug else self.preparer.account_provider
        if provider is None:
            raise BatchDeclined(f"unknown provider {slug!r}")  # the row writer names the line
        return provider.id

    def _reporting_cost(self, batch: RowBatch) -> pa.Array:
        """The cost itself where it is in the reporting currency; else converted, line by line, at its day's rate."""
        fx = self.preparer.fx
        foreign = pc.not_equal(batch.currency, fx.reporting_currency)
        if not pc.any(foreign).as_py():
            return batch.cost
        converted = batch.cost.to_pylist()
        for i in pc.indices_nonzero(foreign).to_pylist():
            day = batch.period_start[i].as_py().astimezone(dt.UTC).date()
            converted[i] = str(fx.to_reporting(Decimal(converted[i]), batch.currency[i].as_py(), day))
        return pa.array(converted, pa.string())

    def _signature_ids(self, batch, provider_id, model, tag_set_id, tags_of: dict) -> pa.Array:
        """Signature per line (and so workload and team), decided once per distinct combination."""
        columns = [
            provider_id.cast(pa.string()),
            batch.project_ref,
            batch.api_key_ref,
            batch.user_ref,
            model,
            batch.model_raw,
            tag_set_id.cast(pa.string()),
        ]
        encoded = pc.dictionary_encode(pc.binary_join_element_wise(*columns, "\x1f"))
        ids = []
        for key in encoded.dictionary.to_pylist():
            try:
                ids.append(self._signatures[key])
            except KeyError:
                parts = key.split("\x1f")
                if len(parts) != len(columns):
                    raise BatchDeclined("a value holding the key separator") from None
                p, j, k, u, m, r, t = parts
                if len(self._signatures) >= self.CACHE_LIMIT:
                    self._signatures.clear()
                ids.append(
                    self._signatures.setdefault(
                        key,
                        self.preparer.signature_of(
                            (self.preparer.account_id, int(p), j, k, u, m, r, int(t)), tags_of[int(t)]
                        ),
                    )
                )
        return pc.take(pa.array(ids, _ID), encoded.indices)

    def replace(self, stale) -> tuple[int, int]:
        """Store the last new keys, delete `stale` (None: nothing left to delete, see writing.replace_ahead)."""
        new_keys_store(*self.preparer.take_new(all_of_them=True))  # the prep thread has finished
        return self.count, 0 if stale is None else stale.delete()[0]


def write_batches(*, account: Account, run: IngestRun, batches) -> WriteResult:
    """write_rows for RowBatches of a file (Postgres only): replace what the file covers, then roll up.

    Three stages overlap, each in its own thread: reading the next batches (Arrow's CSV parsing and the reader's
    columns), preparing their lines (the line columns and binary rows), and this thread's COPY of the current
    one. Reading and preparing release the GIL in Arrow and touch no database (prices, rates, rules and providers
    were loaded first), so on two cores the file's Python runs beside itself as well as beside Postgres: in one
    helper (reading, then preparing, one batch ahead) they were the import's critical path, and the COPY waited
    on them (1M hourly lines: 4.7 s of their CPU against ~4 s of Postgres' for the COPY). At most AHEAD
    batches are prepared ahead of the COPY, each read one step before, so memory stays bounded.

    What the first batch shows the file replaces is deleted before its COPY (writing.replace_ahead), while the
    helpers go on with the next batches: deleted after the COPY, that DELETE read every new line too.
    """
    preparer = LinePreparer(account, run)
    writer = ColumnarWriter(preparer)
    batches = iter(batches)
    read, periods, slots, starts = 0, set(), set(), set()
    ahead = None

    def prepare(reading):
        batch = reading.result()
        if batch is None:
            return None
        rows = writer.lines(batch)
        new_keys = new_keys_encode(preparer.take_new())  # here, not in the COPY thread
        cover = set(), set(), set()
        _cover(batch, *cover)  # here too: the COPY thread does nothing but COPY
        return rows, new_keys, len(batch), cover

    with (
        ThreadPoolExecutor(max_workers=1, thread_name_prefix="ingest-read") as readers,
        ThreadPoolExecutor(max_workers=1, thread_name_prefix="ingest-prepare") as preparers,
    ):
        # One thread each, tasks run in order: the reader's generator and the preparer's state see the batches in
        # file order. A read after the last batch finds the generator exhausted and gives None too.
        def submitted():
            return preparers.submit(prepare, readers.submit(next, batches, None))

        pending = deque(submitted() for _ in range(AHEAD))
        while (prepared := pending.popleft().result()) is not None:
            pending.append(submitted())
            rows, new_keys, lines, (batch_periods, batch_slots, batch_starts) = prepared
            if not read:  # nothing of the run is stored yet
                ahead = replace_ahead(account=account, run=run, periods=batch_periods, slots=batch_slots)
            periods |= batch_periods
            slots |= batch_slots
            starts |= batch_starts
            writer.copy(rows, new_keys)
            read += lines
    writer.count = read
    return replace_and_roll_up(
        account=account,
        run=run,
        writer=writer,
        read=read,
        windows=None,
        periods=periods,
        slots=slots,
        starts=starts,
        ahead=ahead,
    )


def _cover(batch: RowBatch, periods: set, slots: set, starts: set) -> None:
    """What a file's batch covers (as write_rows records it): billing periods, else the UTC days its lines start in."""
    covered = pc.and_(pc.is_valid(batch.billing_period_start), pc.is_valid(batch.billing_period_end))
    billed = pa.table({"s": batch.billing_period_start, "e": batch.billing_period_end}).filter(covered)
    periods.update(zip(*(c.to_pylist() for c in billed.group_by(["s", "e"]).aggregate([]).columns)))
    starts.update(pc.unique(batch.period_start).to_pylist())
    loose = pc.unique(batch.period_start.filter(pc.invert(covered))).to_pylist()
    slots.update(day_window(moment.astimezone(dt.UTC).date()) for moment in loose)


def _mapped(column: pa.Array, function) -> pa.Array:
    """`function` of each value, computed once per distinct value."""
    encoded = pc.dictionary_encode(column)
    return pc.take(pa.array([function(v) for v in encoded.dictionary.to_pylist()], pa.string()), encoded.indices)


def _lookup(column: pa.Array, answers: list, kind) -> pa.Array:
    """Per row, the answer of its value, `answers` being in `column.unique()` order."""
    return pc.take(pa.array(answers, kind), pc.index_in(column, column.unique()))


def _pg_us(moments: pa.Array) -> np.ndarray:
    """Timestamps without nulls as timestamptz values (µs since 2000-01-01 UTC) for copy_binary.fixed."""
    return pc.subtract(moments.cast(_ID), _PG_EPOCH_US).to_numpy()


def _texts(column: pa.Array) -> pa.BinaryArray:
    """A text field per row, encoded once per distinct value (a batch repeats its models, refs and currencies);
    NULL where null."""
    encoded = pc.dictionary_encode(column)
    fields = copy_binary.texts(encoded.dictionary.fill_null("")).take(encoded.indices)
    return fields if not column.null_count else pc.if_else(pc.is_valid(column), fields, pa.scalar(copy_binary.NULL))
