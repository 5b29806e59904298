"""LiteLLM_SpendLogs CSV exports read as columns (pyarrow, numpy), for speed: the same hourly groups gateway_log.py
reads record by record.

A record costs the row reader ~20 µs of Python (csv, json.loads of its metadata, datetimes, a Performance.add); a
gateway log is millions of records. Here a block of ~4 MB is read at a time (memory stays flat however long the
log): tokens, times and latencies are Arrow / numpy arrays; the `metadata` JSON column is parsed by Arrow's JSON
reader with a fixed schema (only the fields gateway_log.py reads); what repeats (model, provider, key, user, team,
tags, status) is interpreted once per distinct combination by gateway_log.py's own `_litellm_request`, so the two
readers cannot disagree on what a record names. Latency buckets are finops.latency's, found by a search over the
exact bucket boundaries (computed with `bucket_of` itself), so the distributions are the row reader's, count for
count, and the stored Performance JSON is byte for byte the same.

Which inputs go to columns (the decision, written down in docs/ingestion.md too):
- a LiteLLM_SpendLogs CSV (the export of the table, the biggest input a customer has), read from a stream that can
  be read again. JSON (`/spend/logs` arrays, the v2 envelope) and JSONL stay with the row reader: they come from
  API pages and logging callbacks, are record-shaped, and their records vary in shape too much for fixed columns.
- on every database: unlike FOCUS (whose column path ends in a COPY, so Postgres only), what comes out here is
  the hourly groups, a few thousand rows, written by the same row writer on SQLite (the demo) and Postgres.

The column reader only takes what it can read exactly. Anything else raises `Declined` and the file is read
again row by row (gateway_log.GatewayLog.parse), which reads it or refuses it naming the line — so every limit and
error of the row reader (text_input.py's line bound and NUL refusal, a bad number, a cache larger than the prompt,
an end before the start) holds for both. Declined: a quoted or padded header, a NUL, a line break inside a value,
a blank line, a time that is not plain UTC ISO 8601 (`YYYY-MM-DD[T ]HH:MM:SS[.ffffff][Z]`), a
count that is not plain digits, a metadata field of another JSON type than LiteLLM writes, LiteLLM's free-form
`spend_logs_metadata` (its keys become tags: read per record), a latency above MAX_MS.
tests/ingest/test_gateway_columns.py holds the two readers to the same lines, rollups and distributions.
"""

import csv
import io
import math

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.json as pjson

from finops.latency import LOG_GAMMA, LatencyDistribution, bucket_of
from finops.performance import Performance

from .base import BatchDeclined as Declined
from .focus_format import Prefixed, read_up_to
from .text_input import MAX_LINE_CHARS

BLOCK_BYTES = 1 << 22  # ~12k records of a LiteLLM export a batch
JSON_BLOCK_BYTES = 1 << 20  # metadata parsed in blocks of this size, in parallel; a longer cell is read row by row
MAX_COUNT_DIGITS = 10  # tokens per request below 10^10: int64 sums cannot overflow
MAX_MS = 10**10  # a request's latency (115 days): above it, the row reader's
# The CSV columns a record's interpretation reads (gateway_log._litellm_request / _failed), besides numbers and times.
NAMED = ("model", "model_group", "custom_llm_provider", "api_key", "user", "team_id", "end_user", "request_tags",
         "status", "status_code", "error")
TIMES = ("startTime", "endTime", "completionStartTime")
COUNTS = ("prompt_tokens", "completion_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
# What gateway_log reads of `metadata`, as Arrow's JSON reader is to read it (anything else in it is ignored).
META_NAMES = ("user_api_key_hash", "user_api_key_user_id", "user_api_key_team_id", "user_api_key_team_alias",
              "user_api_key_alias", "status", "status_code")
_COUNT = pa.int64()
META_SCHEMA = pa.schema([
    *[(name, pa.string()) for name in META_NAMES],
    ("usage_object", pa.struct([
        ("prompt_tokens_details", pa.struct([("cached_tokens", _COUNT), ("cache_creation_tokens", _COUNT)])),
        ("cache_read_input_tokens", _COUNT), ("cache_creation_input_tokens", _COUNT),
    ])),
    ("spend_logs_metadata", pa.null()),  # an object here: Arrow refuses it, the file is read row by row
])
_TIME = r"^(19|20)[0-9]{2}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?(Z|z|\+00:00)?$"
_DIGITS = f"^[0-9]{{1,{MAX_COUNT_DIGITS}}}$"
_US_PER_HOUR = 3_600_000_000
_COMBO_BITS = 24


def bucket_bounds() -> np.ndarray:
    """b[i-1] = the smallest whole ms whose finops.latency bucket is ≥ i, for i = 1 … bucket_of(MAX_MS): so the
    bucket of a whole ms ≥ 1 is `searchsorted(b, ms, "right")`, exactly bucket_of's answer (it is monotone)."""
    bounds = []
    for i in range(1, bucket_of(MAX_MS) + 1):
        m = max(1, math.floor(math.exp((i - 1) * LOG_GAMMA)))
        while m > 1 and bucket_of(m - 1) >= i:
            m -= 1
        while bucket_of(m) < i:
            m += 1
        bounds.append(m)
    return np.array(bounds, dtype=np.int64)


BOUNDS = bucket_bounds()
SLOTS = len(BOUNDS) + 2  # slot 0: zero latency; slot b + 1: bucket b


def column_groups(stream, *, file_name: str, interpret):
    """[(key, first line, (input, cached, cache write, output, requests), Performance)] of a LiteLLM_SpendLogs CSV,
    key being gateway_log's (hour, provider, model, api key, user, sorted tag items); raise Declined for anything
    unusual. `interpret(record)` is gateway_log._litellm_request."""
    checked = _Checked(stream)
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
    groups = _Accumulator(interpret, [name for name in NAMED if name in header])
    try:
        reader = pcsv.open_csv(
            Prefixed(prefix, binary),
            read_options=pcsv.ReadOptions(block_size=BLOCK_BYTES),
            parse_options=pcsv.ParseOptions(newlines_in_values=True, ignore_empty_lines=False),
            convert_options=pcsv.ConvertOptions(
                column_types={name: pa.string() for name in header}, include_columns=wanted,
                strings_can_be_null=False, quoted_strings_can_be_null=False,
            ),
        )
        for batch in reader:
            checked.check()
            if batch.num_rows:
                groups.add(batch)
    except (pa.ArrowException, UnicodeDecodeError) as exc:
        raise Declined(str(exc)) from None
    checked.check()
    if not checked.one_line_per_record(groups.rows_seen):
        raise Declined("a line break inside a value: the row reader counts the lines")
    return groups.result()


class _Checked(io.RawIOBase):
    """The file's bytes as they pass, checked as text_input.bounded_lines checks lines (no NUL, none longer than
    MAX_LINE_CHARS, counted in bytes, which are never fewer than the characters), and its line breaks counted, so
    that record n is known to be on line n + 1 (no line break inside a value, no lone CR)."""

    PIECE = 1 << 20

    def __init__(self, stream):
        self._stream = stream
        self.newlines, self.run, self.last, self.problem = 0, 0, b"", ""

    def readable(self):
        return True

    def readinto(self, buffer):
        chunk = self._stream.read(min(len(buffer), self.PIECE))
        if chunk:
            self._see(chunk)
        buffer[: len(chunk)] = chunk
        return len(chunk)

    def _see(self, chunk: bytes) -> None:
        if b"\x00" in chunk:
            self.problem = "a NUL byte"
        returns = chunk.count(b"\r")
        if returns and returns != chunk.count(b"\r\n") + (chunk.endswith(b"\r")):
            self.problem = "a lone carriage return"
        if self.last == b"\r" and not chunk.startswith(b"\n"):
            self.problem = "a lone carriage return"
        first = chunk.find(b"\n")
        if first < 0:
            self.run += len(chunk)
        else:
            self.newlines += chunk.count(b"\n")
            if self.run + first >= MAX_LINE_CHARS:
                self.problem = "a line past the bound"
            self.run = len(chunk) - chunk.rfind(b"\n") - 1
        if self.run >= MAX_LINE_CHARS:
            self.problem = "a line past the bound"
        self.last = chunk[-1:]

    def check(self) -> None:
        if self.problem:
            raise Declined(f"{self.problem}: the row reader names the line")

    def one_line_per_record(self, records: int) -> bool:
        """The header, then one line per record (the last one may end without a line break)."""
        return self.newlines == records + 1 or (self.newlines == records and self.last not in (b"\n", b""))


class _Accumulator:
    """Per hour-group sums and distribution counts, as numpy arrays (grown as groups appear), across batches."""

    SUMS = ("input", "cached", "cache_write", "output", "requests", "errors", "streamed_tokens", "streamed_ms",
            "timed_tokens", "timed_ms")

    def __init__(self, interpret, named: list[str]):
        self.interpret, self.named = interpret, named
        self.answers: dict[tuple, tuple] = {}  # cells -> (combo id, model empty, failed)
        self.combos: dict[tuple, int] = {}  # (provider, model, api key, user, tags) -> combo id
        self.known = np.zeros(0, dtype=np.int64)  # hour << bits | combo id of each group, sorted
        self.known_ids = np.zeros(0, dtype=np.int64)  # … and its group id
        self.keys: list[tuple] = []  # group id -> (hour, combo id)
        self.first_line: list[int] = []
        self.sums = np.zeros((len(self.SUMS), 1024), dtype=np.int64)
        self.counts: list[tuple[np.ndarray, np.ndarray]] = []  # (group * SLOTS + slot, count) pieces, e2e and ttft
        self.pending = self.compacted = 0
        self.rows_seen = 0

    # --- one batch ---

    def add(self, batch: pa.RecordBatch) -> None:
        n = batch.num_rows
        columns = {name: batch.column(name) for name in batch.schema.names}
        meta = _metadata(columns.get("metadata"), n)
        prompt = _count_column(columns["prompt_tokens"], empty=0)
        output = _count_column(columns["completion_tokens"], empty=0)
        usage = _field(meta, "usage_object")
        details = _child(usage, "prompt_tokens_details")
        cached = _coalesce(n, _child(details, "cached_tokens"), _child(usage, "cache_read_input_tokens"),
                           _count_column(columns.get("cache_read_input_tokens"), empty=None))
        cache_write = _coalesce(n, _child(usage, "cache_creation_input_tokens"), _child(details, "cache_creation_tokens"),
                                _count_column(columns.get("cache_creation_input_tokens"), empty=None))
        if (cached < 0).any() or (cache_write < 0).any() or (cached + cache_write > prompt).any():
            raise Declined("a negative cache, or caches above prompt_tokens: the row reader names the record")

        combo, model_empty, failed = self._combos(columns, meta, n)
        if (model_empty & ((prompt > 0) | (output > 0))).any():
            raise Declined("tokens without a model: the row reader names the record")
        start = _times(columns["startTime"], required=True)
        end = _times(columns.get("endTime"))
        first = _times(columns.get("completionStartTime"))
        hour = start // _US_PER_HOUR
        timed, duration, ttft = _latencies(start, end, first, n)
        group = self._groups(hour, combo)

        values = {
            "input": prompt - cached - cache_write, "cached": cached, "cache_write": cache_write, "output": output,
            "requests": np.ones(n, dtype=np.int64), "errors": failed.astype(np.int64),
            "timed_tokens": np.where(timed, output, 0), "timed_ms": np.where(timed, duration, 0),
        }
        streamed = timed & (duration > ttft)
        values["streamed_tokens"] = np.where(streamed, output, 0)
        values["streamed_ms"] = np.where(streamed, duration - ttft, 0)
        ids, starts, order = _runs(group)
        for row, name in enumerate(self.SUMS):
            self.sums[row, ids] += np.add.reduceat(values[name][order], starts)
        for kind, latency in ((0, duration), (1, ttft)):
            measured = latency[timed]
            slot = np.searchsorted(BOUNDS, measured, side="right") + 1
            slot[measured == 0] = 0
            self._count((group[timed] * 2 + kind) * SLOTS + slot)
        self.rows_seen += n

    def _combos(self, columns: dict, meta, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per row: its combination's id, whether its model is empty, whether it failed — each distinct combination
        of the cells a record's interpretation reads, interpreted once by gateway_log itself."""
        parts = [columns[name] for name in self.named]
        if meta is not None:
            parts += [_field(meta, name).fill_null("") for name in META_NAMES]
        combined, values = np.zeros(n, dtype=np.int64), []
        for part in parts:
            encoded = pc.dictionary_encode(part)
            values.append((encoded.indices.to_numpy(zero_copy_only=False), encoded.dictionary.to_pylist()))
            combined = combined * len(values[-1][1]) + values[-1][0]
            if len(values[-1][1]) > 1 and combined.max() >= 1 << 40:  # keep the product small: renumber densely
                combined = np.unique(combined, return_inverse=True)[1].reshape(-1)
        distinct = pc.dictionary_encode(pa.array(combined))
        of = distinct.indices.to_numpy(zero_copy_only=False)
        sample = np.empty(len(distinct.dictionary), dtype=np.int64)
        sample[of] = np.arange(n)  # a row of each combination (any: they hold the same cells)
        combo_ids, empties, failures = [], [], []
        for row in sample.tolist():
            key = tuple(dictionary[indices[row]] for indices, dictionary in values)
            answer = self.answers.get(key)
            if answer is None:
                answer = self._interpret(key)
                if len(self.answers) >= 65536:
                    self.answers.clear()
                self.answers[key] = answer
            combo_ids.append(answer[0])
            empties.append(answer[1])
            failures.append(answer[2])
        return (np.array(combo_ids, dtype=np.int64)[of], np.array(empties, dtype=bool)[of],
                np.array(failures, dtype=bool)[of])

    def _interpret(self, cells: tuple) -> tuple:
        record = dict(zip(self.named, cells))
        record["metadata"] = {name: cell for name, cell in zip(META_NAMES, cells[len(self.named):]) if cell}
        record.update(startTime="1970-01-01T00:00:00", prompt_tokens="0", completion_tokens="0")  # read in columns
        try:
            request = self.interpret(record)
        except (ValueError, TypeError, ArithmeticError) as exc:
            raise Declined(str(exc)) from None
        combo = (request.provider, request.model, request.api_key, request.user, tuple(sorted(request.tags.items())))
        combo_id = self.combos.setdefault(combo, len(self.combos))
        if combo_id >= 1 << _COMBO_BITS:
            raise Declined("too many distinct key, user and tag combinations")
        return combo_id, not request.model, request.failed

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
            ids[new] = np.arange(len(self.keys), len(self.keys) + len(new))
            for value, line in zip(unique[new].tolist(), first[new].tolist()):
                self.keys.append((value >> _COMBO_BITS, value & ((1 << _COMBO_BITS) - 1)))
                self.first_line.append(self.rows_seen + line)
            known = np.concatenate([self.known, unique[new]])
            order = np.argsort(known, kind="stable")
            self.known, self.known_ids = known[order], np.concatenate([self.known_ids, ids[new]])[order]
        if len(self.keys) > self.sums.shape[1]:
            grown = np.zeros((len(self.SUMS), 2 * len(self.keys)), dtype=np.int64)
            grown[:, : self.sums.shape[1]] = self.sums
            self.sums = grown
        return ids[inverse.reshape(-1)]

    def _count(self, codes: np.ndarray) -> None:
        if not len(codes):
            return
        self.counts.append(np.unique(codes, return_counts=True))
        self.pending += len(self.counts[-1][0])
        if self.pending > max(1 << 21, 2 * self.compacted):  # amortised: the merged counts are not re-sorted per batch
            self._compact()

    def _compact(self) -> None:
        if len(self.counts) > 1:
            codes = np.concatenate([c for c, _ in self.counts])
            counts = np.concatenate([k for _, k in self.counts])
            unique, inverse = np.unique(codes, return_inverse=True)
            self.counts = [(unique, np.bincount(inverse.reshape(-1), weights=counts, minlength=len(unique)).astype(np.int64))]
        self.pending = self.compacted = len(self.counts[0][0]) if self.counts else 0

    # --- the end ---

    def result(self) -> list:
        self._compact()
        distributions = [(LatencyDistribution(), LatencyDistribution()) for _ in self.keys]
        if self.counts:
            codes, counts = self.counts[0]  # sorted: by group, then kind (e2e, ttft), then slot
            series, slots = np.divmod(codes, SLOTS)
            starts = np.flatnonzero(np.concatenate(([True], series[1:] != series[:-1])))
            ends = np.append(starts[1:], len(codes))
            for one, begin, end in zip(series[starts].tolist(), starts.tolist(), ends.tolist()):
                distribution = distributions[one >> 1][one & 1]
                if slots[begin] == 0:
                    distribution.zero = int(counts[begin])
                    begin += 1
                distribution.buckets = dict(zip((slots[begin:end] - 1).tolist(), counts[begin:end].tolist()))
        combos = list(self.combos)
        sums = self.sums[:, : len(self.keys)].T.tolist()
        groups = []
        for group, (hour, combo_id) in enumerate(self.keys):
            s = dict(zip(self.SUMS, sums[group]))
            e2e, ttft = distributions[group]
            performance = Performance(
                requests=s["requests"], errors=s["errors"], e2e=e2e, ttft=ttft,
                streamed_tokens=s["streamed_tokens"], streamed_ms=s["streamed_ms"],
                timed_tokens=s["timed_tokens"], timed_ms=s["timed_ms"],
            )
            provider, model, api_key, user, tags = combos[combo_id]
            key = (_hour_start(hour), provider, model, api_key, user, tags)
            totals = (s["input"], s["cached"], s["cache_write"], s["output"], s["requests"])
            groups.append((key, self.first_line[group] + 2, totals, performance))  # line 1 is the header
        return groups


# --- columns ---


def _metadata(column: pa.Array | None, n: int) -> pa.Table | None:
    """The metadata JSON of each row, parsed by Arrow into META_SCHEMA's columns (empty and "null" read as {})."""
    if column is None:
        return None
    trimmed = pc.utf8_trim_whitespace(column)
    empty = pc.or_(pc.equal(trimmed, ""), pc.equal(trimmed, "null"))
    text = pc.if_else(empty, pa.scalar("{}"), column) if pc.any(empty).as_py() else column
    lines = pc.binary_join_element_wise(text, pa.scalar("\n"), "")
    offsets, data = lines.buffers()[1], lines.buffers()[2]
    bounds = np.frombuffer(offsets, dtype=np.int32, count=len(lines) + 1, offset=lines.offset * 4)
    body = data[bounds[0]: bounds[-1]] if data is not None else pa.py_buffer(b"")
    table = pjson.read_json(
        pa.BufferReader(body),
        read_options=pjson.ReadOptions(block_size=JSON_BLOCK_BYTES),
        parse_options=pjson.ParseOptions(explicit_schema=META_SCHEMA, unexpected_field_behavior="ignore",
                                         newlines_in_values=False),
    )
    if table.num_rows != n:
        raise Declined("a metadata cell that is not one JSON object")
    return table


def _field(table: pa.Table | None, name: str):
    return None if table is None else table.column(name).combine_chunks()


def _child(parent, name: str):
    """A struct's field, null where the struct itself is null."""
    if parent is None:
        return None
    child = pc.struct_field(parent, name)
    return pc.if_else(pc.is_valid(parent), child, pa.scalar(None, child.type))


def _coalesce(n: int, *columns) -> np.ndarray:
    """The first non-null of each row as int64 (gateway_log._first_count), 0 when none is."""
    present = [c for c in columns if c is not None]
    if not present:
        return np.zeros(n, dtype=np.int64)
    merged = pc.coalesce(*[c.cast(_COUNT) for c in present]) if len(present) > 1 else present[0].cast(_COUNT)
    return merged.fill_null(0).to_numpy(zero_copy_only=False)


def _count_column(column, *, empty):
    """Plain whole numbers as int64 ("" is `empty`: 0, or null when absent); anything else declines."""
    if column is None:
        return None
    given = pc.not_equal(column, "")
    if not pc.all(pc.or_(pc.invert(given), pc.match_substring_regex(column, _DIGITS))).as_py():
        raise Declined("a count that is not plain digits")
    values = pc.if_else(given, column, pa.scalar("0" if empty == 0 else None, pa.string())).cast(_COUNT)
    return values.to_numpy(zero_copy_only=False) if empty == 0 else values


def _times(column, *, required: bool = False) -> np.ndarray | None:
    """Microseconds since the epoch (UTC) of each row; a missing time is _MISSING."""
    if column is None:
        if required:
            raise Declined("no startTime column")
        return None
    column = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    given = pc.not_equal(column, "")
    if required and not pc.all(given).as_py():
        raise Declined("a missing startTime")
    present = column.filter(given) if column.null_count or not pc.all(given).as_py() else column
    moments = _fixed_width_times(present)
    if moments is None:  # not one layout throughout: Arrow's parser, behind a check of the form
        if not pc.all(pc.match_substring_regex(present, _TIME)).as_py():
            raise Declined("a time that is not plain UTC ISO 8601")
        text = pc.replace_substring_regex(present, r"(Z|z|\+00:00)$", "")
        moments = text.cast(pa.timestamp("us")).cast(pa.int64()).to_numpy(zero_copy_only=False)
    if len(present) == len(column):
        return moments
    result = np.full(len(column), _MISSING, dtype=np.int64)
    result[given.to_numpy(zero_copy_only=False)] = moments
    return result


_DIGIT_AT = (0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18)
_SUFFIXES = (b"", b"Z", b"z", b"+00:00")


def _fixed_width_times(column: pa.Array) -> np.ndarray | None:
    """When every time is written the same way (as an export writes them: `YYYY-MM-DD HH:MM:SS[.f…][Z]`, one width),
    read them with numpy over the bytes: digits and separators checked at their places, fields checked in range
    (what datetime.fromisoformat refuses is refused), the days counted from the civil date. None otherwise."""
    n = len(column)
    if not n:
        return np.zeros(0, dtype=np.int64)
    offsets = np.frombuffer(column.buffers()[1], dtype=np.int32, count=n + 1, offset=column.offset * 4)
    width = int(offsets[1] - offsets[0])
    if width < 19 or int(offsets[-1] - offsets[0]) != width * n:
        return None
    data = np.frombuffer(column.buffers()[2], dtype=np.uint8)[offsets[0]: offsets[-1]].reshape(n, width)
    layout = bytes(data[0])
    suffix = next((s for s in reversed(_SUFFIXES) if s and layout.endswith(s)), b"")
    fraction = width - 19 - len(suffix)
    if fraction and not (2 <= fraction <= 7 and layout[19:20] == b"."):
        return None
    digits = [*_DIGIT_AT, *range(20, 19 + fraction)]
    fixed = {4: b"-", 7: b"-", 10: layout[10:11], 13: b":", 16: b":"}
    if layout[10:11] not in (b" ", b"T") or (fraction and not (data[:, 19] == ord(".")).all()):
        return None
    for at, char in fixed.items():
        if not (data[:, at] == char[0]).all():
            return None
    for i, char in enumerate(suffix):
        if not (data[:, width - len(suffix) + i] == char).all():
            return None
    numbers = data[:, digits].astype(np.int64) - ord("0")
    if ((numbers < 0) | (numbers > 9)).any():
        return None

    def field(*places):
        value = np.zeros(n, dtype=np.int64)
        for place in places:
            value = value * 10 + numbers[:, digits.index(place)]
        return value

    year, month, day = field(0, 1, 2, 3), field(5, 6), field(8, 9)
    hour, minute, second = field(11, 12), field(14, 15), field(17, 18)
    micros = field(*range(20, 19 + fraction)) * 10 ** (7 - fraction) if fraction else np.zeros(n, dtype=np.int64)
    leap = (year % 4 == 0) & ((year % 100 != 0) | (year % 400 == 0))
    month_days = np.array([0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31])[np.clip(month, 0, 12)] + (leap & (month == 2))
    if ((year < 1900) | (month < 1) | (month > 12) | (day < 1) | (day > month_days) | (hour > 23) | (minute > 59)
            | (second > 59)).any():
        raise Declined("a time out of range: the row reader names the record")
    # Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
    y = year - (month <= 2)
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (month + np.where(month > 2, -3, 9)) + 2) // 5 + day - 1
    days = era * 146097 + yoe * 365 + yoe // 4 - yoe // 100 + doy - 719468
    return ((days * 24 + hour) * 60 + minute) * 60_000_000 + second * 1_000_000 + micros


_MISSING = np.iinfo(np.int64).min


def _latencies(start, end, first, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(timed, duration ms, ttft ms) per row, as gateway_log._Groups.add computes them."""
    if end is None:
        zeros = np.zeros(n, dtype=np.int64)
        return np.zeros(n, dtype=bool), zeros, zeros
    timed = end != _MISSING
    duration = _ms(np.where(timed, end, start) - start)
    if (duration < 0).any():
        raise Declined("an end before its start: the row reader names the record")
    if (duration > MAX_MS).any():
        raise Declined("a latency above MAX_MS")
    stamp = np.where(timed, end, start) if first is None else np.where(first != _MISSING, first, np.where(timed, end, start))
    ttft = np.where(timed, np.minimum(np.maximum(_ms(stamp - start), 0), duration), 0)
    return timed, duration, ttft


def _ms(microseconds: np.ndarray) -> np.ndarray:
    """round(delta / 1 ms) as Python computes it: the correctly rounded quotient, then half to even."""
    return np.rint(microseconds / 1000).astype(np.int64)


def _runs(group: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(distinct groups, start of each one's run, order sorting rows by group): for np.add.reduceat."""
    order = np.argsort(group, kind="stable")
    ordered = group[order]
    starts = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))
    return ordered[starts], starts, order


def _hour_start(hour: int):
    import datetime as dt

    return dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(hours=hour)
