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

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
from django.db import connection

from finops.models import Account, CostBasis, IngestRun, UsageLine
from finops.performance.measures import LINE_COLUMNS
from finops.selectors.prices import costs_from_price
from ingest.connectors.base import GATEWAY_CACHE_HIT, BatchDeclined, RowBatch, UsageRow
from ingest.connectors.gateway.columns import SUMS, GatewayLines

from .writing import (
    COLUMNS,
    IngestError,
    LinePreparer,
    UnsafeModelName,
    WriteResult,
    day_window,
    hour_window,
    new_keys_store,
    replace_and_roll_up,
)

_CSV = pcsv.WriteOptions(include_header=False)
_ID = pa.int64()


class ColumnarWriter:
    def __init__(self, preparer: LinePreparer):
        self.preparer = preparer
        self.cursor = connection.cursor()
        self.copy_sql = f"COPY {UsageLine._meta.db_table} ({', '.join(COLUMNS)}) FROM STDIN (FORMAT csv)"
        self.count = 0
        self._signatures: dict[str, int] = {}  # joined signature columns -> signature id, across batches
        self._tag_ids: dict[int, tuple[dict, int]] = {}  # id(tags) -> (tags, tag set id): readers reuse the dicts

    CACHE_LIMIT = 65536

    def copy(self, csv_text, new_keys: tuple) -> None:
        """COPY one batch's lines (CSV text of `lines`), after storing the tag sets and signatures waiting to be
        (`LinePreparer.take_new`)."""
        new_keys_store(*new_keys)  # not during the COPY: it holds the connection until it ends
        with self.cursor.cursor.copy(self.copy_sql) as copy:
            copy.write(csv_text)

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


# --- gateway logs: hourly lines as columns ---

GATEWAY_CHUNK = 65_536  # lines a COPY


def write_gateway_lines(*, account: Account, run: IngestRun, lines: GatewayLines) -> WriteResult:
    """write_rows for a gateway log's hourly lines held as columns (Postgres only): the lines the row writer stores
    from the same groups — each priced at the price of its model and day (less a contract's discount), attributed
    by its signature, its latency as cells — without a Python object per line. What repeats is decided once per
    distinct value with the row writer's own pieces (LinePreparer: provider, model, tag set, signature and its
    attribution; the price book; `costs_from_price`); the lines are COPYed as CSV in chunks, the next chunk
    prepared in a helper thread meanwhile (as write_batches does), then what they replace is deleted and the days
    rolled up. The gateway's cache hits (a few groups) are written as write_rows writes them.
    BatchDeclined (an unknown provider, a model name or tag the row writer refuses naming the line): the caller
    reads the file record by record."""
    preparer = LinePreparer(account, run)
    writer = ColumnarWriter(preparer)
    combos = _GatewayCombos(preparer, lines.combos)
    hour_starts = {hour: _hour_start(hour) for hour in np.unique(lines.hours).tolist()}
    starts = set(hour_starts.values())
    slots = {hour_window(start) for start in starts}
    cache_hit = combos.cache_hit[lines.combo]
    usage = np.flatnonzero(~cache_hit)
    usage = usage[np.argsort(lines.hours[usage], kind="stable")]  # in time order, as BRIN wants them
    latency = _latency_texts(lines)
    chunks = iter([usage[at : at + GATEWAY_CHUNK] for at in range(0, len(usage), GATEWAY_CHUNK)])

    def prepare_next():
        chunk = next(chunks, None)
        if chunk is None:
            return None
        sink = pa.BufferOutputStream()
        pcsv.write_csv(_gateway_table(preparer, combos, lines, chunk, hour_starts, latency), sink, _CSV)
        return sink.getvalue(), preparer.take_new(), len(chunk)

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="ingest-prepare") as pool:
        pending = pool.submit(prepare_next)
        while (prepared := pending.result()) is not None:
            pending = pool.submit(prepare_next)
            csv_text, new_keys, count = prepared
            writer.copy(csv_text, new_keys)
            writer.count += count
    cache_hits = [
        preparer.cache_hit(row) for row in combos.cache_hit_rows(lines, np.flatnonzero(cache_hit), run.file_name)
    ]
    return replace_and_roll_up(
        account=account,
        run=run,
        writer=writer,
        read=len(lines),
        windows=None,
        periods=set(),
        slots=slots,
        starts=starts,
        cache_hits=cache_hits,
    )


class _GatewayCombos:
    """Per distinct (provider, model, api key, user, tags, cache hit) of a log — LinePreparer.prepare's answers
    that do not depend on the hour: provider id, normalised model, tag set and signature, found when a chunk first
    needs them (in the helper thread: nothing here queries the database)."""

    def __init__(self, preparer: LinePreparer, combos: list):
        self.preparer, self.combos = preparer, combos
        size = len(combos)
        self.cache_hit = np.array([combo[5] for combo in combos], dtype=bool).reshape(size)
        self.known = np.zeros(size, dtype=bool)
        self.provider_id = [0] * size
        self.model = [""] * size
        self.tag_set_id = [0] * size
        self.signature_id = [0] * size
        self.priced_as = np.zeros(size, dtype=np.int64)  # its (provider id, model) pair's number in `priced`
        self.priced: dict[tuple, int] = {}
        self._tag_ids: dict[tuple, int] = {}

    def resolve(self, wanted: np.ndarray) -> None:
        prep = self.preparer
        for c in np.unique(wanted[~self.known[wanted]]).tolist():
            slug, model_raw, api_key, user, tags, _ = self.combos[c]
            provider = prep.providers.get(slug) if slug else prep.account_provider
            if provider is None:
                raise BatchDeclined(f"unknown provider {slug!r}")  # the row writer names the line
            try:
                model = prep.normalised_model(model_raw)
                tag_set_id = self._tag_ids.get(tags)
                if tag_set_id is None:
                    tag_set_id = self._tag_ids[tags] = prep.tag_set_of(dict(tags))
            except (UnsafeModelName, IngestError) as exc:
                raise BatchDeclined(str(exc)) from None  # the row writer names the line
            key = (prep.account_id, provider.id, "", api_key, user, model, model_raw, tag_set_id)
            self.signature_id[c] = prep.signature_of(key, dict(tags))
            self.provider_id[c], self.model[c], self.tag_set_id[c] = provider.id, model, tag_set_id
            self.priced_as[c] = self.priced.setdefault((provider.id, model), len(self.priced))
            self.known[c] = True

    def cache_hit_rows(self, lines: GatewayLines, groups: np.ndarray, file_name: str):
        """The cache hits' groups as the UsageRows write_rows is given (GatewayLog's `_Groups.rows`)."""
        for g in groups.tolist():
            slug, model_raw, api_key, user, tags, _ = self.combos[lines.combo[g]]
            start = _hour_start(int(lines.hours[g]))
            yield UsageRow(
                period_start=start,
                period_end=start + dt.timedelta(hours=1),
                model_raw=model_raw,
                input_tokens=int(lines.sum("input")[g]),
                cached_input_tokens=int(lines.sum("cached")[g]),
                cache_write_tokens=int(lines.sum("cache_write")[g]),
                output_tokens=int(lines.sum("output")[g]),
                requests=int(lines.sum("requests")[g]),
                cost=None,
                provider_slug=slug,
                api_key_ref=api_key,
                user_ref=user,
                tags=dict(tags),
                source_ref=f"{file_name} line {lines.first_line[g]}",
                charge_category=GATEWAY_CACHE_HIT,
            )


_UNPRICED_CURRENCY = UsageRow.__dataclass_fields__["currency"].default  # what an unpriced row of the log says


def _gateway_table(preparer, combos: _GatewayCombos, lines: GatewayLines, chunk, hour_starts, latency) -> pa.Table:
    """The chunk's lines (group numbers) as usage-line columns, in COPY order: LinePreparer.prepare's values."""
    combo = lines.combo[chunk]
    combos.resolve(combo)
    n, of = len(chunk), combo.tolist()
    tokens = [lines.sum(name)[chunk] for name in ("input", "cached", "cache_write", "output")]
    cost, currency, reporting, basis = _gateway_costs(preparer, combos, combo, lines.hours[chunk], tokens)
    hours, hour_of = np.unique(lines.hours[chunk], return_inverse=True)
    hour_of = pa.array(hour_of.reshape(-1))
    texts = [hour_starts[h] for h in hours.tolist()]
    constant = lambda value, kind: pa.array([value] * n, kind)  # noqa: E731
    per_combo = lambda values, kind: pa.array([values[c] for c in of], kind)  # noqa: E731
    sums = {name: pa.array(lines.sum(name)[chunk]) for name in SUMS}
    values = {
        "account_id": constant(preparer.account_id, _ID),
        "provider_id": per_combo(combos.provider_id, _ID),
        "ingest_run_id": constant(preparer.run_id, _ID),
        "period_start": pa.array([t.isoformat() for t in texts], pa.string()).take(hour_of),
        "period_end": pa.array([(t + dt.timedelta(hours=1)).isoformat() for t in texts], pa.string()).take(hour_of),
        "model": per_combo(combos.model, pa.string()),
        "model_raw": pa.array([combos.combos[c][1] for c in of], pa.string()),
        "service_tier": constant("", pa.string()),
        "project_ref": constant("", pa.string()),
        "api_key_ref": pa.array([combos.combos[c][2] for c in of], pa.string()),
        "user_ref": pa.array([combos.combos[c][3] for c in of], pa.string()),
        "tag_set_id": per_combo(combos.tag_set_id, _ID),
        "input_tokens": sums["input"],
        "cached_input_tokens": sums["cached"],
        "cache_write_tokens": sums["cache_write"],
        "output_tokens": sums["output"],
        "requests": sums["requests"],
        "cost": pa.array(cost, pa.string()),
        "currency": pa.array(currency, pa.string()),
        "reporting_cost": pa.array(reporting, pa.string()),
        "cost_basis": pa.array(basis, pa.string()),
        "charge_category": constant("usage", pa.string()),
        # Performance.line_columns of the group: its counters, no summary-only requests, its cells.
        "errors": sums["errors"],
        "streamed_tokens": sums["streamed_tokens"],
        "streamed_ms": sums["streamed_ms"],
        "timed_tokens": sums["timed_tokens"],
        "timed_ms": sums["timed_ms"],
        "summary_requests": pa.nulls(n, _ID),
        "summary_p99_ms": pa.nulls(n, pa.float64()),
        "latency": latency.take(pa.array(chunk)),
        "billing_period_start": pa.nulls(n, pa.string()),
        "signature_id": per_combo(combos.signature_id, _ID),
        "invoice_id": constant("", pa.string()),
    }
    return pa.table([values[name] for name in COLUMNS], names=list(COLUMNS))


def _gateway_costs(preparer, combos: _GatewayCombos, combo: np.ndarray, hours: np.ndarray, tokens: list) -> tuple:
    """(cost, currency, reporting cost, basis) of each line, as text: LinePreparer.prepare's pricing, found once per
    distinct (provider, model, day) and computed line by line in Decimal (costs_from_price)."""
    n = len(combo)
    cost, reporting = [None] * n, [None] * n
    currency, basis = [_UNPRICED_CURRENCY] * n, [CostBasis.UNPRICED.value] * n
    days = hours // 24
    key = combos.priced_as[combo] << 24 | days  # days since the epoch fit 24 bits until the year 47,900
    unique, inverse = np.unique(key, return_inverse=True)
    order = np.argsort(inverse.reshape(-1), kind="stable")
    bounds = np.searchsorted(inverse.reshape(-1)[order], np.arange(len(unique) + 1)).tolist()
    pairs = {number: pair for pair, number in combos.priced.items()}
    discounted, to_reporting = preparer.discounts.discounted, preparer.fx.to_reporting
    for u, value in enumerate(unique.tolist()):
        provider_id, model = pairs[value >> 24]
        day = _EPOCH_DAY + dt.timedelta(days=value & 0xFFFFFF)
        price = preparer.price_books[provider_id].price_on(model, day)
        if price is None:
            continue
        rows = order[bounds[u] : bounds[u + 1]]
        priced = costs_from_price(price, *(t[rows].tolist() for t in tokens))
        for row, amount in zip(rows.tolist(), priced):
            amount = discounted(amount, provider_id, day)  # a contract's discount off list (issue 11)
            cost[row], reporting[row] = str(amount), str(to_reporting(amount, price.currency, day))
            currency[row], basis[row] = price.currency, CostBasis.ESTIMATED.value
    return cost, currency, reporting, basis


def _latency_texts(lines: GatewayLines) -> pa.Array:
    """Each group's cells as Postgres array text (`{c1,c2}`), null where it timed nothing: Performance.line_columns'
    `latency`, written by Arrow rather than a join per line."""
    counts = np.bincount(lines.cell_group, minlength=len(lines))
    offsets = pa.array(np.concatenate([[0], np.cumsum(counts)]).astype(np.int32))
    joined = pc.binary_join(pa.ListArray.from_arrays(offsets, pa.array(lines.cells).cast(pa.string())), ",")
    texts = pc.binary_join_element_wise(pa.scalar("{"), joined, pa.scalar("}"), "")
    return pc.if_else(pa.array(counts > 0), texts, pa.scalar(None, pa.string()))


_EPOCH_DAY = dt.date(1970, 1, 1)


def _hour_start(hour: int) -> dt.datetime:
    return dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(hours=hour)
