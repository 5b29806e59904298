"""Writing RowBatches (columns from a batch reader) on Postgres: the same lines write_rows stores, in bulk.

Each batch becomes one CSV COPY straight into the usage-line table, written by pyarrow: no Python object per
line. What repeats is decided once per distinct value, with the row writer's own pieces: the provider of a
slug, the normalised model, the tag set's id, the line signature and its attribution (LinePreparer). Amounts stay
decimal text from the file to Postgres' NUMERIC, so nothing passes through a float; amounts in another
currency are converted one by one with the dated rate, exactly as write_rows does.
"""

import datetime as dt
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
from django.db import connection

from finops.models import Account, CostBasis, IngestRun, UsageLine
from finops.performance.measures import LINE_COLUMNS
from ingest.connectors.base import BatchDeclined, RowBatch

from . import copy_binary
from .writing import (
    COLUMNS,
    LinePreparer,
    UnsafeModelName,
    WriteResult,
    day_window,
    new_keys_store,
    replace_and_roll_up,
)

_CSV = pcsv.WriteOptions(include_header=False)
_ID = pa.int64()


class ColumnarWriter:
    def __init__(self, preparer: LinePreparer, *, binary: bool = False):
        """`binary`: the batches are binary COPY rows (ingest/copy_binary.py), not CSV text."""
        self.preparer, self.binary = preparer, binary
        self.cursor = connection.cursor()
        copy_format = "binary" if binary else "csv"
        self.copy_sql = f"COPY {UsageLine._meta.db_table} ({', '.join(COLUMNS)}) FROM STDIN (FORMAT {copy_format})"
        self.count = 0
        self._signatures: dict[str, int] = {}  # joined signature columns -> signature id, across batches
        self._tag_ids: dict[int, tuple[dict, int]] = {}  # id(tags) -> (tags, tag set id): readers reuse the dicts

    CACHE_LIMIT = 65536

    def copy(self, data, new_keys: tuple) -> None:
        """COPY one batch's lines (CSV text of `lines`, or binary rows), after storing the tag sets and signatures
        waiting to be (`LinePreparer.take_new`)."""
        new_keys_store(*new_keys)  # not during the COPY: it holds the connection until it ends
        with self.cursor.cursor.copy(self.copy_sql) as copy:
            if self.binary:  # psycopg sends what it is given: the rows between the format's signature and trailer
                copy.write(copy_binary.SIGNATURE)
                copy.write(data)
                copy.write(copy_binary.TRAILER)
            else:
                copy.write(data)

    def lines(self, batch: RowBatch) -> pa.Table:
        """The batch as usage-line columns, in COPY order."""
        prep, n = self.preparer, len(batch)
        providers = [self._provider_id(slug) for slug in batch.provider_slug.unique().to_pylist()]
        provider_id = _lookup(batch.provider_slug, providers, _ID)
        try:
            model = _mapped(batch.model_raw, prep.normalised_model)
        except UnsafeModelName:
            raise BatchDeclined("a model name holding a control character") from None  # the row writer names the line
        tag_ids = [self._tag_set_id(tags) for tags in batch.tag_sets]
        tag_set_id = pc.take(pa.array(tag_ids, _ID), batch.tag_set_of)
        signature_id = self._signature_ids(batch, provider_id, model, tag_set_id, dict(zip(tag_ids, batch.tag_sets)))
        constant = lambda value, kind: pa.array([value] * n, kind)  # noqa: E731
        values = {
            "account_id": constant(prep.account_id, _ID),
            "provider_id": provider_id,
            "ingest_run_id": constant(prep.run_id, _ID),
            "period_start": _as_text(batch.period_start),
            "period_end": _as_text(batch.period_end),
            "model": model,
            "model_raw": batch.model_raw,
            "service_tier": batch.service_tier,
            "project_ref": batch.project_ref,
            "api_key_ref": batch.api_key_ref,
            "user_ref": batch.user_ref,
            "tag_set_id": tag_set_id,
            "input_tokens": batch.input_tokens,
            "cached_input_tokens": batch.cached_input_tokens,
            "cache_write_tokens": batch.cache_write_tokens,
            "output_tokens": batch.output_tokens,
            "requests": batch.requests,
            "cost": batch.cost,
            "currency": batch.currency,
            "reporting_cost": self._reporting_cost(batch),
            "cost_basis": constant(CostBasis.BILLED.value, pa.string()),
            "charge_category": batch.charge_category,
            **{name: pa.nulls(n, pa.string()) for name in LINE_COLUMNS},  # FOCUS lines measure no latency
            "billing_period_start": _as_text(batch.billing_period_start),
            "signature_id": signature_id,
            "invoice_id": batch.invoice_id if batch.invoice_id is not None else constant("", pa.string()),
        }
        return pa.table([values[name] for name in COLUMNS], names=list(COLUMNS))

    def _tag_set_id(self, tags: dict) -> int:
        known = self._tag_ids.get(id(tags))
        if known is not None and known[0] is tags:  # the very dict (held here, so its id is not reused)
            return known[1]
        if len(self._tag_ids) >= self.CACHE_LIMIT:
            self._tag_ids.clear()
        identity = self.preparer.tag_set_of(tags)
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
        new_keys_store(*self.preparer.take_new(all_of_them=True))  # the prep thread has finished
        return self.count, stale.delete()[0]


def write_batches(*, account: Account, run: IngestRun, batches) -> WriteResult:
    """write_rows for RowBatches of a file (Postgres only): replace what the file covers, then roll up.

    Two stages overlap: a helper thread reads and prepares the next batch (pyarrow releases the GIL, and
    nothing it does touches the database: prices, rates, rules and providers were loaded first) while this
    thread COPYs the current one, so Python and Postgres each keep a core busy. One batch ahead at most.
    """
    preparer = LinePreparer(account, run)
    writer = ColumnarWriter(preparer)
    batches = iter(batches)
    read, periods, slots, starts = 0, set(), set(), set()

    def prepare_next():
        batch = next(batches, None)
        if batch is None:
            return None
        sink = pa.BufferOutputStream()
        pcsv.write_csv(writer.lines(batch), sink, _CSV)
        new_keys = preparer.take_new()
        _cover(batch, periods, slots, starts)  # here too: the COPY thread does nothing but COPY
        return sink.getvalue(), new_keys, len(batch)

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="ingest-prepare") as pool:
        pending = pool.submit(prepare_next)
        while (prepared := pending.result()) is not None:
            pending = pool.submit(prepare_next)
            csv_text, new_keys, lines = prepared
            writer.copy(csv_text, new_keys)
            read += lines
    writer.count = read
    return replace_and_roll_up(
        account=account, run=run, writer=writer, read=read, windows=None, periods=periods, slots=slots, starts=starts
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


def _as_text(moments: pa.Array) -> pa.Array:
    """Timestamps as ISO text, formatted once per distinct value (Arrow's CSV writer formats each: 3× slower)."""
    encoded = pc.dictionary_encode(moments)
    texts = [None if m is None else m.isoformat() for m in encoded.dictionary.to_pylist()]
    return pc.take(pa.array(texts, pa.string()), encoded.indices)
