"""LiteLLM_SpendLogs CSV exports read as columns (pyarrow, numpy), for speed: the same hourly groups gateway/log.py
reads record by record.

A record costs the row reader 20–40 µs of Python (csv, json.loads of its metadata, datetimes, a Performance.add); a
gateway log is millions of records. Here a block of ~4 MB is read at a time (memory stays flat however long the
log): tokens, times and latencies are Arrow / numpy arrays; the `metadata` JSON column is parsed by Arrow's JSON
reader with a fixed schema (only the fields gateway/log.py reads); what repeats (model, provider, tags, status) is
interpreted once per distinct combination by gateway/log.py's own `_litellm_request`, and who sent a request (the
key, user and team cells, and their metadata fallbacks) by its own `litellm_identity`, each part of the answer once
per distinct value of its own cells, so the two readers cannot disagree on what a record names
(gateway/combinations.py: apart, because keys, users and teams need not come together — 300 × 50 × 7 of them make
nearly a combination per request, and reading the whole record for each cost ~60 µs a request). Latency buckets
are finops.performance.latency's, found by a search over the exact bucket boundaries (computed with `bucket_of`
itself), so the distributions are the row reader's, count for count, and the stored Performance JSON is byte for
byte the same.

Which inputs go to columns (the decision, written down in docs/ingestion.md too):
- a LiteLLM_SpendLogs CSV (the export of the table, the biggest input a customer has), read from a stream that can
  be read again. JSON (`/spend/logs` arrays, the v2 envelope) and JSONL stay with the row reader: they come from
  API pages and logging callbacks, are record-shaped, and their records vary in shape too much for fixed columns.
- on every database. What comes out is the hourly groups: on Postgres as columns (`column_lines`, GatewayLines),
  which ingest/columnar_gateway.py's gateway column writer prices, attributes and COPYs without a Python object per line
  (a log whose requests do not collapse has a line per request); on SQLite (the demo) as groups
  (`column_groups`), written by the row writer.

The column reader only takes what it can read exactly. Anything else raises `Declined` and the file is read
again row by row (gateway_log.GatewayLog.parse), which reads it or refuses it naming the line — so every limit and
error of the row reader (text_input.py's line bound and NUL refusal, a bad number, a cache larger than the prompt,
an end before the start) holds for both. Declined: a quoted or padded header, a NUL, a line break inside a value,
a blank line between records, a time that is not plain UTC ISO 8601 (`YYYY-MM-DD[T ]HH:MM:SS[.ffffff][Z]`), a
count that is not plain digits, a metadata field of another JSON type than LiteLLM writes, LiteLLM's free-form
`spend_logs_metadata` (its keys become tags: read per record), a latency above MAX_MS.
tests/ingest/test_gateway_columns.py holds the two readers to the same lines, rollups and distributions.
"""

import csv
import datetime as dt
import functools
import io
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv

from finops.performance.latency import ZERO_INDEX, LatencyDistribution, cells_array
from finops.performance.measures import Performance
from ingest.connectors.base import BatchDeclined as Declined
from ingest.connectors.focus.format import Prefixed, read_up_to
from ingest.connectors.gateway.code_counts import CodeCounts
from ingest.connectors.gateway.combinations import COMBO_BITS as _COMBO_BITS
from ingest.connectors.gateway.combinations import Combinations, combo_tuples
from ingest.connectors.gateway.metadata import META_NAMES, MetadataFields, _Metadata
from ingest.connectors.gateway.values import (
    BOUNDS,
    CACHE_READS,
    CACHE_WRITES,
    SLOTS,
    CheckedBytes,
    count_column,
    latencies,
    times,
)

BLOCK_BYTES = 1 << 22  # ~12k records of a LiteLLM export a batch
# The CSV columns a record's interpretation reads (gateway_log._litellm_request / _failed), besides numbers and times.
NAMED = (
    "model",
    "model_group",
    "custom_llm_provider",
    "api_key",
    "user",
    "team_id",
    "end_user",
    "request_tags",
    "status",
    "status_code",
    "error",
    "cache_hit",
)
# Arrow numbers the NAMED cells of a block as it converts them (a dictionary per batch, values in the order first
# met, as pc.dictionary_encode gives them): gateway/combinations.py reads them as numbers, and hashing the cells
# again there (9 columns a batch) was ~0.4 s of the proxy's reader's ~5.5 s of CPU at 1M.
_NAMED_TYPE = pa.dictionary(pa.int32(), pa.string())
TIMES = ("startTime", "endTime", "completionStartTime")
COUNTS = ("prompt_tokens", "completion_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
_US_PER_HOUR = 3_600_000_000
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
# What is summed per hourly group, in this order (GatewayLines.sums' rows).
SUMS = (
    "input",
    "cached",
    "cache_write",
    "output",
    "requests",
    "errors",
    "streamed_tokens",
    "streamed_ms",
    "timed_tokens",
    "timed_ms",
)


def column_groups(stream, *, file_name: str, interpret, identify=None):
    """[(key, first line, (input, cached, cache write, output, requests), Performance)] of a LiteLLM_SpendLogs CSV,
    key being gateway_log's (hour, provider, model, api key, user, sorted tag items); raise Declined for anything
    unusual. `interpret(record)` is gateway_log._litellm_request; `identify`, (gateway_log.litellm_identity, the
    record cells and the metadata fields it reads), lets those cells be interpreted apart from the others."""
    return _accumulated(stream, interpret, identify).result()


def column_lines(stream, *, file_name: str, interpret, identify=None) -> "GatewayLines":
    """The same groups as column_groups, left as columns (GatewayLines) for the gateway column writer
    (ingest/columnar_gateway.py): no Python object per group."""
    return _accumulated(stream, interpret, identify).lines()


@dataclass
class GatewayLines:
    """A log's hourly groups as columns, one entry per group: what column_groups' groups hold, for a writer that
    never makes a row of them. Group g is `combos[combo[g]]` (provider, model, api key, user, sorted tag items,
    cache hit) in UTC hour `hours[g]` (hours since the epoch), first met on file line `first_line[g]`. A combination
    is also its row of `combo_rows`: the numbers in `values` of its (provider, model, cache hit), sorted tag items,
    api key and user (a writer finds what they say once per distinct number). Its sums are
    `sums[:, g]` in SUMS order, its latency distributions the stored cells (finops.performance.latency)
    `cells[cell_group == g]`, in cells_of's order."""

    hours: np.ndarray
    combo: np.ndarray
    first_line: np.ndarray
    sums: np.ndarray
    cells: np.ndarray
    cell_group: np.ndarray
    combo_rows: np.ndarray
    values: list

    def __len__(self) -> int:
        return len(self.hours)

    @functools.cached_property
    def combos(self) -> list[tuple]:
        return combo_tuples(self.combo_rows, self.values)

    def sum(self, name: str) -> np.ndarray:
        return self.sums[SUMS.index(name)]


def _accumulated(stream, interpret, identify) -> "_Accumulator":
    checked = CheckedBytes(stream)
    binary = io.BufferedReader(checked, 1 << 16)
    prefix = read_up_to(binary, 1 << 16)
    if prefix.startswith(b"\xef\xbb\xbf"):
        prefix = prefix[3:]
    if prefix.lstrip()[:1] in (b"[", b"{", b""):
        raise Declined("JSON, JSONL or empty: the row reader reads it")
    first_line = prefix.split(b"\n", 1)[0]
    if b'"' in first_line or len(first_line) == len(prefix):
        raise Declined("a quoted or very long header")
    try:
        header = next(csv.reader([first_line.decode("utf-8").rstrip("\r")]))
    except (UnicodeDecodeError, csv.Error) as exc:
        raise Declined(str(exc)) from None
    if any(name != name.strip() for name in header) or len(set(header)) != len(header):
        raise Declined("padded or repeated column names")
    if not {"startTime", "prompt_tokens", "completion_tokens", "model"} <= set(header):
        raise Declined("not a LiteLLM_SpendLogs CSV: the row reader says why")
    wanted = [name for name in (*NAMED, *TIMES, *COUNTS, "metadata") if name in header]
    groups = _Accumulator(interpret, [name for name in NAMED if name in header], identify)
    try:
        reader = pcsv.open_csv(
            Prefixed(prefix, binary),
            read_options=pcsv.ReadOptions(block_size=BLOCK_BYTES),
            parse_options=pcsv.ParseOptions(newlines_in_values=True),
            convert_options=pcsv.ConvertOptions(
                column_types={name: _NAMED_TYPE if name in NAMED else pa.string() for name in header},
                include_columns=wanted,
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
            ),
        )
        # The next block read and its metadata parsed in a helper thread while this one is counted: Arrow's CSV and
        # JSON readers (most of that thread's time) let go of the GIL, and on a quiet machine the reader was one
        # busy core of two (a proxy's 1M: ~2.9 s of CPU there, ~2.3 s here). One block ahead: memory stays flat.
        # The pool's exit waits for the block being read, so the stream is not read after this returns or raises.
        parsed = _parsed_batches(reader, checked, groups.metadata)
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="gateway-read") as pool:
            pending = pool.submit(next, parsed, None)
            while (item := pending.result()) is not None:
                pending = pool.submit(next, parsed, None)
                groups.add(*item)
    except (pa.ArrowException, UnicodeDecodeError) as exc:
        raise Declined(str(exc)) from None
    checked.check()
    if not checked.one_line_per_record(groups.rows_seen):
        raise Declined("a line break inside a value: the row reader counts the lines")
    return groups


def _parsed_batches(reader, checked: CheckedBytes, metadata: _Metadata):
    """(batch, its metadata's fields) of each block that holds records (the helper thread's part of the reading)."""
    for batch in reader:
        checked.check()
        if batch.num_rows:
            yield (
                batch,
                metadata.read(batch.column("metadata") if "metadata" in batch.schema.names else None, len(batch)),
            )


class _Accumulator:
    """Per hour-group sums and distribution counts, as numpy arrays (grown as groups appear), across batches."""

    MERGE_AT = 1 << 16  # new latency codes kept aside at least up to this many before they are merged in
    SUMS = SUMS  # result() unpacks them in this order

    def __init__(self, interpret, named: list[str], identify=None):
        self.interpret, self.named = interpret, named
        # What a record's cells say, numbered per distinct combination of them (gateway/combinations.py).
        self.combinations = Combinations(self._interpret_cells, named, META_NAMES, identify)
        self.metadata = _Metadata()
        self.known = np.zeros(0, dtype=np.int64)  # hour << bits | combo id of each group, sorted
        self.known_ids = np.zeros(0, dtype=np.int64)  # … and its group id
        # Group id -> its hour << COMBO_BITS | combo id, and the row it was first met on, one array per batch that
        # met new groups: a scattered log meets a group per row, and a Python tuple and append per group cost ~1 s of
        # the 3.7 s of CPU its reader took for 300k rows (load 12).
        self.group_pairs: list[np.ndarray] = []
        self.group_rows: list[np.ndarray] = []
        self.group_count = 0
        self.sums = np.zeros((len(self.SUMS), 1024), dtype=np.int64)
        # Latency counts by code (group * 2 + kind) * SLOTS + slot, kind 0 end to end and 1 time to first token.
        self.latency = CodeCounts(self.MERGE_AT)
        self.fresh_from = 0  # the first group new in the batch being counted
        self.rows_seen = 0

    # --- one batch ---

    def add(self, batch: pa.RecordBatch, meta: "MetadataFields | None") -> None:
        """Count a batch, `meta` its metadata's fields (`self.metadata.read`)."""
        n = batch.num_rows
        columns = {name: batch.column(name) for name in batch.schema.names}
        for name in ("prompt_tokens", "completion_tokens"):  # empty: a record not read; the row reader names it
            if pc.all(pc.not_equal(columns[name], ""), skip_nulls=False).as_py() is not True:
                raise Declined(f"an empty {name}: the row reader names the record")
        prompt = count_column(columns["prompt_tokens"], empty=0)
        output = count_column(columns["completion_tokens"], empty=0)
        cached = _coalesce(
            n,
            meta.first_count(CACHE_READS) if meta is not None else None,
            count_column(columns.get("cache_read_input_tokens"), empty=None),
        )
        cache_write = _coalesce(
            n,
            meta.first_count(CACHE_WRITES) if meta is not None else None,
            count_column(columns.get("cache_creation_input_tokens"), empty=None),
        )
        if (cached < 0).any() or (cache_write < 0).any() or (cached + cache_write > prompt).any():
            raise Declined("a negative cache, or caches above prompt_tokens: the row reader names the record")

        cells = [columns[name] for name in self.named]
        cells += [meta.field(name) if meta is not None else None for name in META_NAMES]
        combo, model_empty, failed = self.combinations.of(cells, n)
        if (model_empty & ((prompt > 0) | (output > 0))).any():
            raise Declined("tokens without a model: the row reader names the record")
        start = times(columns["startTime"], required=True)
        end = times(columns.get("endTime"))
        first = times(columns.get("completionStartTime"))
        hour = start // _US_PER_HOUR
        timed, duration, ttft = latencies(start, end, first, n)
        self.fresh_from = self.group_count
        group = self._groups(hour, combo)

        values = {
            "input": prompt - cached - cache_write,
            "cached": cached,
            "cache_write": cache_write,
            "output": output,
            "requests": np.ones(n, dtype=np.int64),
            "errors": failed.astype(np.int64),
            "timed_tokens": np.where(timed, output, 0),
            "timed_ms": np.where(timed, duration, 0),
        }
        streamed = timed & (duration > ttft)
        values["streamed_tokens"] = np.where(streamed, output, 0)
        values["streamed_ms"] = np.where(streamed, duration - ttft, 0)
        ids, starts, order = _runs(group)
        self.sums[:, ids] += np.add.reduceat(np.stack([values[name] for name in self.SUMS])[:, order], starts, axis=1)
        codes = []
        for kind, latency in ((0, duration), (1, ttft)):
            measured = latency[timed]
            slot = np.searchsorted(BOUNDS, measured, side="right") + 1
            slot[measured == 0] = 0
            codes.append((group[timed] * 2 + kind) * SLOTS + slot)
        # Both kinds at once: the new groups' codes are then above all others.
        self.latency.add(np.concatenate(codes), fresh_from=(self.fresh_from * 2) * SLOTS)
        self.rows_seen += n

    def _interpret_cells(self, cells: list):
        """gateway_log's reading of a record holding `cells` (named, then META_NAMES), tokens and times aside."""
        record = dict(zip(self.named, cells))
        record["metadata"] = {name: cell for name, cell in zip(META_NAMES, cells[len(self.named) :]) if cell}
        record.update(startTime=EPOCH, prompt_tokens=0, completion_tokens=0)  # read in columns
        try:
            return self.interpret(record)
        except (ValueError, TypeError, ArithmeticError) as exc:
            raise Declined(str(exc)) from None

    def _groups(self, hour: np.ndarray, combo: np.ndarray) -> np.ndarray:
        """Per row, its hour-group's id; new groups are numbered as first met (their first line kept)."""
        pair = (hour << _COMBO_BITS) | combo
        unique, first, inverse = np.unique(pair, return_index=True, return_inverse=True)
        at = np.searchsorted(self.known, unique)
        found = at < len(self.known)
        found[found] = self.known[at[found]] == unique[found]
        ids = np.empty(len(unique), dtype=np.int64)
        ids[found] = self.known_ids[at[found]]
        new = np.flatnonzero(~found)
        if len(new):
            ids[new] = np.arange(self.group_count, self.group_count + len(new))
            self.group_count += len(new)
            self.group_pairs.append(unique[new])
            self.group_rows.append(first[new] + self.rows_seen)
            # Both sorted and distinct: each new pair goes in where the search put it (linear, no sort of them all).
            self.known = np.insert(self.known, at[new], unique[new])
            self.known_ids = np.insert(self.known_ids, at[new], ids[new])
        if self.group_count > self.sums.shape[1]:
            grown = np.zeros((len(self.SUMS), 2 * self.group_count), dtype=np.int64)
            grown[:, : self.sums.shape[1]] = self.sums
            self.sums = grown
        return ids[inverse.reshape(-1)]

    # --- the end ---

    def lines(self) -> GatewayLines:
        self.latency.merge()
        count = self.group_count
        hours, combo, first_line = self._group_keys()
        series, slot = np.divmod(self.latency.codes, SLOTS)  # sorted: by group, then kind (e2e, ttft), then slot
        group, kind = np.divmod(series, 2)
        try:
            cells = cells_array(kind, np.where(slot == 0, ZERO_INDEX, slot - 1), self.latency.counts)
        except ValueError as exc:
            raise Declined(str(exc)) from None  # the row reader names the line
        return GatewayLines(
            hours=hours,
            combo=combo,
            first_line=first_line + 2,  # line 1 is the header
            sums=self.sums[:, :count],
            cells=cells,
            cell_group=group,
            combo_rows=self.combinations.rows(),
            values=list(self.combinations.values),  # a copy: the accumulator may go on
        )

    def _group_keys(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per group id: its hour, its combination id, the row (0-based, header not counted) it was first met on."""
        pairs = np.concatenate(self.group_pairs) if self.group_pairs else np.zeros(0, dtype=np.int64)
        rows = np.concatenate(self.group_rows) if self.group_rows else np.zeros(0, dtype=np.int64)
        return pairs >> _COMBO_BITS, pairs & ((1 << _COMBO_BITS) - 1), rows.astype(np.int64)

    def result(self) -> list:
        self.latency.merge()
        hours, combo, first_line = self._group_keys()
        distributions = [(LatencyDistribution(), LatencyDistribution()) for _ in range(self.group_count)]
        if len(self.latency.codes):
            codes, counts = (
                self.latency.codes,
                self.latency.counts,
            )  # sorted: by group, then kind (e2e, ttft), then slot
            series, slots = np.divmod(codes, SLOTS)
            starts = np.flatnonzero(np.concatenate(([True], series[1:] != series[:-1])))
            ends = np.append(starts[1:], len(codes))
            # As Python lists once, sliced per series: a scattered log has a series or two per line, and a numpy
            # slice and tolist() per series cost more than the rest of the series' work.
            indexes, counted = (slots - 1).tolist(), counts.tolist()
            for one, begin, end in zip(series[starts].tolist(), starts.tolist(), ends.tolist()):
                distribution = distributions[one >> 1][one & 1]
                if indexes[begin] == -1:  # slot 0: zero latency
                    distribution.zero = counted[begin]
                    begin += 1
                distribution.buckets = dict(zip(indexes[begin:end], counted[begin:end]))
        combos = combo_tuples(self.combinations.rows(), self.combinations.values)
        sums = self.sums[:, : self.group_count].T.tolist()
        first_lines = first_line.tolist()
        hour_starts: dict[int, dt.datetime] = {}
        groups = []
        for group, (hour, combo_id) in enumerate(zip(hours.tolist(), combo.tolist())):
            (
                input_,
                cached,
                cache_write,
                output,
                requests,
                errors,
                streamed_tokens,
                streamed_ms,
                timed_tokens,
                timed_ms,
            ) = sums[group]  # SUMS order
            e2e, ttft = distributions[group]
            performance = Performance(
                requests=requests,
                errors=errors,
                e2e=e2e,
                ttft=ttft,
                streamed_tokens=streamed_tokens,
                streamed_ms=streamed_ms,
                timed_tokens=timed_tokens,
                timed_ms=timed_ms,
            )
            provider, model, api_key, user, tags, cache_hit = combos[combo_id]
            start = hour_starts.get(hour)
            if start is None:
                start = hour_starts[hour] = _hour_start(hour)
            key = (start, provider, model, api_key, user, tags, cache_hit)
            totals = (input_, cached, cache_write, output, requests)
            groups.append((key, first_lines[group] + 2, totals, performance))  # line 1 is the header
        return groups


# --- columns ---


def _coalesce(n: int, *columns) -> np.ndarray:
    """The first non-null of each row as int64 (ingest/connectors/gateway/fields.first_count), 0 when none is."""
    present = [c for c in columns if c is not None]
    if not present:
        return np.zeros(n, dtype=np.int64)
    merged = pc.coalesce(*[c.cast(pa.int64()) for c in present]) if len(present) > 1 else present[0].cast(pa.int64())
    return merged.fill_null(0).to_numpy(zero_copy_only=False)


def _runs(group: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(distinct groups, start of each one's run, order sorting rows by group): for np.add.reduceat."""
    order = np.argsort(group, kind="stable")
    ordered = group[order]
    starts = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))
    return ordered[starts], starts, order


def _hour_start(hour: int) -> dt.datetime:
    return EPOCH + dt.timedelta(hours=hour)
