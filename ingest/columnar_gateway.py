"""The gateway column writer: a gateway log's hourly lines, held as numpy columns from the column reader
(ingest/connectors/gateway/columns.py, `GatewayLines`), stored on Postgres by binary COPY built from the columns
(ingest/copy_binary.py) — no Python object per line, and no text for Postgres to parse.
"""

import datetime as dt
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow as pa

from finops.models import Account, CostBasis, IngestRun
from finops.prices.selectors import costs_from_price
from ingest.connectors.base import GATEWAY_CACHE_HIT, BatchDeclined, UsageRow
from ingest.connectors.gateway.columns import GatewayLines

from . import copy_binary as binary
from .columnar import ColumnarWriter
from .keys import new_keys_encode
from .lines import COLUMNS, IngestError, UnsafeModelName
from .preparing import LinePreparer
from .writing import (
    WriteResult,
    hour_window,
    replace_and_roll_up,
)

GATEWAY_CHUNK = 65_536  # lines a COPY
_HOUR_S = 3600

# How _gateway_rows writes a line: its fields in COPY order, as the runs of columns it encodes together.
_LAYOUT = (
    ("account_id", "provider_id", "ingest_run_id", "period_start", "period_end"),
    ("model", "model_raw", "service_tier", "project_ref", "api_key_ref", "user_ref"),  # per combination
    ("tag_set_id", "input_tokens", "cached_input_tokens", "cache_write_tokens", "output_tokens", "requests"),
    ("cost",),
    ("currency",),
    ("reporting_cost",),
    ("cost_basis",),
    ("charge_category", "errors", "streamed_tokens", "streamed_ms", "timed_tokens", "timed_ms"),
    ("summary_requests", "summary_p99_ms"),
    ("latency",),
    ("billing_period_start", "signature_id", "invoice_id"),
)
assert tuple(name for run in _LAYOUT for name in run) == COLUMNS, "_gateway_rows writes the columns in COPY order"
_FIELD_COUNT = binary.field_count(len(COLUMNS))
_USAGE = binary.text("usage")
_NO_INVOICE = binary.text("")
_NO_TEXT = binary.text("")  # service tier and project: a gateway log names neither


def write_gateway_lines(*, account: Account, run: IngestRun, lines: GatewayLines) -> WriteResult:
    """write_rows for a gateway log's hourly lines held as columns (Postgres only): the lines the row writer stores
    from the same groups — each priced at the price of its model and day (less a contract's discount), attributed
    by its signature, its latency as cells — without a Python object per line. What repeats is decided once per
    distinct value with the row writer's own pieces (LinePreparer: provider, model, tag set, signature and its
    attribution; the price book; `costs_from_price`); the lines are COPYed in binary in chunks, the next chunk
    prepared in a helper thread meanwhile (as write_batches does), then what they replace is deleted and the days
    rolled up. The gateway's cache hits (a few groups) are written as write_rows writes them.
    BatchDeclined (an unknown provider, a model name or tag the row writer refuses naming the line): the caller
    reads the file record by record."""
    preparer = LinePreparer(account, run)
    writer = ColumnarWriter(preparer)
    combos = _GatewayCombos(preparer, lines)
    starts = {_hour_start(hour) for hour in np.unique(lines.hours).tolist()}
    slots = {hour_window(start) for start in starts}
    cache_hit = combos.cache_hit[lines.combo]
    usage = np.flatnonzero(~cache_hit)
    usage = usage[np.argsort(lines.hours[usage], kind="stable")]  # in time order, as BRIN wants them
    cells = _Cells(lines)
    chunks = iter([usage[at : at + GATEWAY_CHUNK] for at in range(0, len(usage), GATEWAY_CHUNK)])

    def prepare_next():
        chunk = next(chunks, None)
        if chunk is None:
            return None
        rows = _gateway_rows(preparer, combos, lines, chunk, cells)
        return rows, new_keys_encode(preparer.take_new()), len(chunk)

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="ingest-prepare") as pool:
        pending = pool.submit(prepare_next)
        while (prepared := pending.result()) is not None:
            pending = pool.submit(prepare_next)
            rows, new_keys, count = prepared
            writer.copy(rows, new_keys)
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
    needs them (in the helper thread: nothing here queries the database). A combination is its row of numbers
    (GatewayLines.combo_rows: core, tags, key, user); what (core, tags) says — provider, model, tag set — is found
    once per distinct pair, the signatures in bulk."""

    def __init__(self, preparer: LinePreparer, lines: GatewayLines):
        self.preparer, self.rows, self.values = preparer, lines.combo_rows, lines.values
        size = len(self.rows)
        cores = np.unique(self.rows[:, 0]).tolist()
        hit = dict(zip(cores, (self.values[core][2] for core in cores)))
        self.cache_hit = np.array([hit[core] for core in self.rows[:, 0].tolist()], dtype=bool).reshape(size)
        self.known = np.zeros(size, dtype=bool)
        self.provider_id = np.zeros(size, dtype=np.int64)
        self.tag_set_id = np.zeros(size, dtype=np.int64)
        self.signature_id = np.zeros(size, dtype=np.int64)
        self.priced_as = np.zeros(size, dtype=np.int64)  # its (provider id, model) pair's number in `priced`
        self.priced: dict[tuple, int] = {}
        # What a combination's (core, tags) says, numbered: `part` per combination, then per part its provider id,
        # normalised model, model as read, tag set id and dict, and its (provider, model)'s number in `priced`.
        self.part = np.zeros(size, dtype=np.int64)
        self._parts: dict[tuple, int] = {}
        self._part_provider, self._part_tag_set, self._part_priced = [], [], []
        self.part_model, self.part_model_raw, self._part_tags = [], [], []

    def resolve(self, wanted: np.ndarray) -> None:
        """Find what the combinations in `wanted` not known yet stand for."""
        new = np.unique(wanted[~self.known[wanted]])
        if not len(new):
            return
        rows = self.rows[new]
        pairs, first, pair_of = np.unique(
            rows[:, 0] * (int(rows[:, 1].max()) + 1) + rows[:, 1], return_index=True, return_inverse=True
        )
        parts = self._parts
        numbers = [parts.setdefault(pair, len(parts)) for pair in zip(*rows[first, :2].T.tolist())]
        for core, tags in list(parts)[len(self._part_provider) :]:  # the parts first seen here
            self._add_part(core, tags)
        part_of = np.array(numbers, dtype=np.int64)[pair_of.reshape(-1)]
        provider_id = np.array(self._part_provider, dtype=np.int64)[part_of]
        tag_set_id = np.array(self._part_tag_set, dtype=np.int64)[part_of]
        values, at = self.values, part_of.tolist()
        self.signature_id[new] = self.preparer.signatures_in_bulk(
            provider_ids=provider_id,
            api_keys=[values[key] for key in rows[:, 2].tolist()],
            users=[values[user] for user in rows[:, 3].tolist()],
            models=[self.part_model[p] for p in at],
            model_raws=[self.part_model_raw[p] for p in at],
            tag_set_ids=tag_set_id,
            tags=[self._part_tags[p] for p in at],
        )
        self.provider_id[new], self.tag_set_id[new] = provider_id, tag_set_id
        self.priced_as[new] = np.array(self._part_priced, dtype=np.int64)[part_of]
        self.part[new] = part_of
        self.known[new] = True

    def _add_part(self, core: int, tags: int) -> None:
        prep = self.preparer
        slug, model_raw, _ = self.values[core]
        provider = prep.providers.get(slug) if slug else prep.account_provider
        if provider is None:
            raise BatchDeclined(f"unknown provider {slug!r}")  # the row writer names the line
        try:
            model = prep.normalised_model(model_raw)
            tag_dict = dict(self.values[tags])
            tag_set_id = prep.tag_set_of(tag_dict)
        except (UnsafeModelName, IngestError) as exc:
            raise BatchDeclined(str(exc)) from None  # the row writer names the line
        self._part_provider.append(provider.id)
        self.part_model.append(model)
        self.part_model_raw.append(model_raw)
        self._part_tag_set.append(tag_set_id)
        self._part_tags.append(tag_dict)
        self._part_priced.append(self.priced.setdefault((provider.id, model), len(self.priced)))

    def cache_hit_rows(self, lines: GatewayLines, groups: np.ndarray, file_name: str):
        """The cache hits' groups as the UsageRows write_rows is given (GatewayLog's `_Groups.rows`)."""
        for g in groups.tolist():
            slug, model_raw, api_key, user, tags, _ = lines.combos[lines.combo[g]]
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


class _Cells:
    """Each group's latency cells (finops.performance.latency): `lines.cells`, held group after group."""

    def __init__(self, lines: GatewayLines):
        self.values = lines.cells
        self.counts = np.bincount(lines.cell_group, minlength=len(lines))
        self.starts = np.cumsum(self.counts) - self.counts

    def of(self, groups: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The cells of `groups`, one group's after another's, and how many each has."""
        counts = self.counts[groups]
        before = np.cumsum(counts) - counts  # where each group's cells start in the answer
        at = np.repeat(self.starts[groups] - before, counts) + np.arange(int(counts.sum()))
        return self.values[at], counts


_UNPRICED_CURRENCY = UsageRow.__dataclass_fields__["currency"].default  # what an unpriced row of the log says


def _gateway_rows(preparer, combos: _GatewayCombos, lines: GatewayLines, chunk, cells: _Cells) -> pa.Buffer:
    """The chunk's lines (group numbers) as binary COPY rows (_LAYOUT): LinePreparer.prepare's values."""
    combo = lines.combo[chunk]
    combos.resolve(combo)
    sums = {name: lines.sum(name)[chunk] for name in ("input", "cached", "cache_write", "output", "requests")}
    tokens = [sums["input"], sums["cached"], sums["cache_write"], sums["output"]]
    cost, currency, reporting, basis = _gateway_costs(preparer, combos, combo, lines.hours[chunk], tokens)
    start = lines.hours[chunk].astype(np.int64) * _HOUR_S
    # A cost in the reporting currency is its own reporting cost: encoded once (the same text, the same field).
    cost_texts, reporting_texts = pa.array(cost, pa.string()), pa.array(reporting, pa.string())
    costs = binary.numerics(cost_texts)
    distinct, of = np.unique(combo, return_inverse=True)
    parts, rows = combos.part[distinct].tolist(), combos.rows[distinct]
    values = combos.values
    names = binary.joined_fields(  # per distinct combination, then per line
        [
            binary.texts(pa.array([combos.part_model[p] for p in parts], pa.string())),
            binary.texts(pa.array([combos.part_model_raw[p] for p in parts], pa.string())),
            _NO_TEXT + _NO_TEXT,
            binary.texts(pa.array([values[key] for key in rows[:, 2].tolist()], pa.string())),
            binary.texts(pa.array([values[user] for user in rows[:, 3].tolist()], pa.string())),
        ]
    ).take(pa.array(of.reshape(-1)))
    return binary.rows(
        [
            _FIELD_COUNT,
            binary.fixed(
                binary.bigint(preparer.account_id),
                combos.provider_id[combo],
                binary.bigint(preparer.run_id),
                binary.timestamptz_us(start),
                binary.timestamptz_us(start + _HOUR_S),
            ),
            names,
            binary.fixed(combos.tag_set_id[combo], *tokens, sums["requests"]),
            costs,
            binary.texts(pa.array(currency, pa.string())),
            costs if reporting_texts.equals(cost_texts) else binary.numerics(reporting_texts),
            binary.texts(pa.array(basis, pa.string())),
            # Performance.line_columns of the group: its counters, no summary-only requests, its cells.
            binary.fixed(
                _USAGE,
                *(
                    lines.sum(name)[chunk]
                    for name in ("errors", "streamed_tokens", "streamed_ms", "timed_tokens", "timed_ms")
                ),
            ),
            binary.NULL + binary.NULL,
            binary.bigint_arrays(*cells.of(chunk)),
            binary.fixed(binary.NULL, combos.signature_id[combo], _NO_INVOICE),
        ]
    )


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
            cost[row] = text = str(amount)
            converted = to_reporting(amount, price.currency, day)
            reporting[row] = text if converted is amount else str(converted)  # the reporting currency's own
            currency[row], basis[row] = price.currency, CostBasis.ESTIMATED.value
    return cost, currency, reporting, basis


_EPOCH_DAY = dt.date(1970, 1, 1)


def _hour_start(hour: int) -> dt.datetime:
    return dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(hours=hour)
