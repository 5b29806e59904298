"""Mergeable latency distributions (issue 12): a percentile over any period comes from merged counts, never from
averaged percentiles.

The distribution is a log-scale histogram in the manner of DDSketch (Masson, Rim and Lee, VLDB 2019): a latency of
`x` milliseconds (x > 0) falls in bucket `ceil(log(x) / log(γ))` with γ = (1 + α) / (1 − α). Every value in a
bucket is within a relative error α of the bucket's representative value 2·γ^i / (γ + 1), so any quantile read from
the merged buckets is within α of the true quantile of the values counted (α = 1 %). Buckets are kept sparse
(`{index: count}`), so an hour of one model's requests is a few dozen integers; merging two distributions adds their
counts bucket by bucket, which is exact and associative — a month's p99 from 720 hourly distributions is the p99
of every request of the month. Zero latencies (or anything under 1 µs) are counted apart.

Exchanged as JSON (`POST /api/v1/metrics` takes it): `{"v": 1, "alpha": "0.01", "zero": n, "buckets": {"i": n, …}}`
(keys are strings in JSON).

Stored as cells (issue 23), so that Postgres merges distributions where the rows are: a row's end-to-end and
time-to-first-token distributions are one array of bigints, one cell per non-empty bucket,
`cell = bin << COUNT_BITS | count` with `bin = kind << 12 | (index + 2048)` (kind 0 end to end, 1 time to first
token; index −2048 stands for the zero count). Merging rows is then summing counts per bin (finops.performance.services.
performance_rollup: numpy over each group's cells as Postgres sends them, `merge_sent_cells`; on SQLite `json_each`,
`GROUP BY bin`, `sum(cell & COUNT_MASK)`): the same buckets, counted exactly, so every quantile is what the Python
merge gives, within the same 1 %. A cell is 8 bytes: one request's
two distributions are two cells (37 bytes with the array's header), where their JSON took ~300.
"""

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

ALPHA = 0.01
GAMMA = (1 + ALPHA) / (1 - ALPHA)
LOG_GAMMA = math.log(GAMMA)
MIN_MS = 0.001  # below a microsecond counts as zero
VERSION = 1
_ALPHA_TEXT = str(ALPHA)


def bucket_of(ms: float) -> int:
    return math.ceil(math.log(ms) / LOG_GAMMA)


def value_of(index: int) -> float:
    """The bucket's representative value: within ALPHA of every value the bucket holds."""
    return 2 * GAMMA**index / (GAMMA + 1)


@dataclass
class LatencyDistribution:
    buckets: dict[int, int] = field(default_factory=dict)
    zero: int = 0

    @classmethod
    def of(cls, values_ms: Iterable[float]) -> "LatencyDistribution":
        found = cls()
        for value in values_ms:
            found.add(value)
        return found

    def add(self, ms: float, count: int = 1) -> None:
        if ms is None or count <= 0:
            return
        if ms < 0:
            raise ValueError(f"a latency cannot be negative: {ms} ms")
        if ms < MIN_MS:
            self.zero += count
            return
        index = bucket_of(ms)
        self.buckets[index] = self.buckets.get(index, 0) + count

    @property
    def count(self) -> int:
        return self.zero + sum(self.buckets.values())

    def merge(self, other: "LatencyDistribution") -> "LatencyDistribution":
        """A new distribution counting both (exact: counts add)."""
        return LatencyDistribution(dict(self.buckets), self.zero).absorb(other)

    def absorb(self, other: "LatencyDistribution") -> "LatencyDistribution":
        """Count `other` into this one, in place (no copy: a month of hourly rows merges in one pass); returns self."""
        self.zero += other.zero
        buckets, get = self.buckets, self.buckets.get
        for index, count in other.buckets.items():
            buckets[index] = get(index, 0) + count
        return self

    def quantile(self, q: float) -> float | None:
        """The q-quantile (0 ≤ q ≤ 1) in ms, within ALPHA relative error; None when nothing was counted. The rank
        is the nearest-rank of q over the count (q = 0.99 of 100 values: the 99th smallest)."""
        if not 0 <= q <= 1:
            raise ValueError("a quantile lies between 0 and 1")
        total = self.count
        if not total:
            return None
        rank = max(1, math.ceil(q * total))
        if rank <= self.zero:
            return 0.0
        seen = self.zero
        for index in sorted(self.buckets):
            seen += self.buckets[index]
            if seen >= rank:
                return value_of(index)
        return value_of(max(self.buckets))

    def share_over(self, ms: float) -> float | None:
        """The share of counted requests slower than `ms` (buckets entirely above it; within ALPHA at the edge)."""
        total = self.count
        if not total:
            return None
        limit = bucket_of(ms) if ms >= MIN_MS else None
        over = sum(count for index, count in self.buckets.items() if limit is None or index > limit)
        return over / total

    def as_json(self) -> dict:
        return {
            "v": VERSION,
            "alpha": str(ALPHA),
            "zero": self.zero,
            "buckets": {str(index): count for index, count in sorted(self.buckets.items())},
        }

    @classmethod
    def from_json(cls, data: dict | None) -> "LatencyDistribution":
        if not data:
            return cls()
        if data.get("v") != VERSION or data.get("alpha") != str(ALPHA):
            raise ValueError(f"a latency distribution of another kind: {data.get('v')!r}, alpha {data.get('alpha')!r}")
        return cls(
            {int(index): int(count) for index, count in data.get("buckets", {}).items()}, int(data.get("zero", 0))
        )


# --- cells: the stored form ---

COUNT_BITS = 40  # a bucket of one row counts up to 2^40 − 1 requests (a month of 400M requests an hour in one bucket)
COUNT_MASK = (1 << COUNT_BITS) - 1
_INDEX_OFFSET = 2048  # bucket indexes −2047 … 2047 (1e-18 ms … 1e17 ms); −2048 is the zero count
E2E, TTFT = 0, 1


ZERO_INDEX = -_INDEX_OFFSET


def _cell(kind: int, index: int, count: int) -> int:
    if not ZERO_INDEX <= index < _INDEX_OFFSET:
        raise ValueError(f"latency bucket {index} lies outside what is stored ({ZERO_INDEX + 1}…{_INDEX_OFFSET - 1})")
    if not 0 < count <= COUNT_MASK:
        raise ValueError(f"a latency bucket counts {count} requests: beyond what is stored")
    return ((kind << 12 | (index + _INDEX_OFFSET)) << COUNT_BITS) | count


def cells_of(e2e: "LatencyDistribution", ttft: "LatencyDistribution") -> list[int] | None:
    """The two distributions as sorted cells; None when both are empty (nothing to store)."""
    found = []
    for kind, distribution in ((E2E, e2e), (TTFT, ttft)):
        if distribution.zero:
            found.append(_cell(kind, ZERO_INDEX, distribution.zero))
        base = kind << 12 | _INDEX_OFFSET
        for index, count in sorted(distribution.buckets.items()):
            if count and index != ZERO_INDEX:  # bucket_of never gives −2048 (1e-18 ms is below MIN_MS)
                if ZERO_INDEX < index < _INDEX_OFFSET and 0 < count <= COUNT_MASK:  # _cell's bounds, inline: per line
                    found.append(((base + index) << COUNT_BITS) | count)
                else:
                    found.append(_cell(kind, index, count))  # raises, naming what is out of bounds
    return found or None


def cells_array(kind, index, count):
    """`_cell` over numpy arrays (int64): a kind, bucket index (ZERO_INDEX for the zero count) and count per cell, as
    the cells `cells_of` stores — for writers that hold many rows' distributions as columns
    (ingest/columnar_gateway.py)."""
    import numpy as np  # here: the rest of this module is plain Python, imported by pages that need no numpy

    if len(index) and not ((index >= ZERO_INDEX).all() and (index < _INDEX_OFFSET).all()):
        raise ValueError(f"a latency bucket lies outside what is stored ({ZERO_INDEX + 1}…{_INDEX_OFFSET - 1})")
    if len(count) and not ((count > 0).all() and (count <= COUNT_MASK).all()):
        raise ValueError("a latency bucket counts more requests than is stored")
    return ((np.asarray(kind, dtype=np.int64) << 12 | (index + _INDEX_OFFSET)) << COUNT_BITS) | count


def absorb_cells(e2e: "LatencyDistribution", ttft: "LatencyDistribution", cells) -> None:
    """Count stored cells into the two distributions, in place (cells in any order; a bin may repeat)."""
    pair = (e2e, ttft)
    for cell in cells or ():
        cell = int(cell)
        count, bin_ = cell & COUNT_MASK, cell >> COUNT_BITS
        distribution, index = pair[bin_ >> 12], (bin_ & 0xFFF) - _INDEX_OFFSET
        if index == ZERO_INDEX:
            distribution.zero += count
        else:
            buckets = distribution.buckets
            buckets[index] = buckets.get(index, 0) + count


def absorb_cell_rows(e2e: "LatencyDistribution", ttft: "LatencyDistribution", rows: Iterable) -> None:
    """absorb_cells over many rows' cells at once: the same counts, bucket by bucket, summed by numpy before they
    reach the dicts (issue 23: the scorecard merges ~100k cells of 312 workloads; one Python step per cell took
    ~50 ms of it). Sums are int64, exact: a bucket of any row counts < 2^40."""
    import numpy as np  # here, as in cells_array: pages that merge a few rows need no numpy

    cells = np.fromiter((c for row in rows if row for c in row), dtype=np.int64)
    if not len(cells):
        return
    bins = cells >> COUNT_BITS
    order = np.argsort(bins, kind="stable")
    bins, counts = bins[order], cells[order] & COUNT_MASK
    found, starts = np.unique(bins, return_index=True)
    pair = (e2e, ttft)
    for bin_, count in zip(found.tolist(), np.add.reduceat(counts, starts).tolist(), strict=True):
        distribution, index = pair[bin_ >> 12], (bin_ & 0xFFF) - _INDEX_OFFSET
        if index == ZERO_INDEX:
            distribution.zero += count
        else:
            distribution.buckets[index] = distribution.buckets.get(index, 0) + count


_BIN_BITS = 13  # a cell's bin: kind << 12 | (index + 2048)
SENT_HEADER = 20  # array_send of a one-dimensional int8[]: ndim, has-null flag, element type, length, lower bound
_MERGE_GRID_SLOTS = 1 << 22  # merge_sent_cells: (group, bin) slots summed at a time
_SENT_CELL = 12  # and each element: its length (4 bytes, always 8) and the value (8 bytes), big-endian


def merge_sent_cells(streams: list) -> list[bytes | None]:
    """Each group's cells merged bin by bin (counts summed, sorted by bin: what the SQL merge gathers), from the
    concatenated elements of its rows' cells in Postgres' binary array form (`array_send(latency)` less its
    20-byte header: each element a 4-byte length and an 8-byte big-endian cell; None or b"" for no cells), and
    returned in that binary form, header included (what a binary COPY of an int8[] column reads), or None.

    Why here and not in a GROUP BY (issue 23): Postgres' hash aggregate over the unnested cells cost ~1 µs of CPU
    per cell (57M cells a year on the 10M-line page bench: most of the rollup), where handing each group's cells
    over as one bytea (string_agg, no per-cell grouping) and summing them here with numpy costs a fraction of that,
    and no cell becomes a Python object either way. The counts add exactly (below): a bucket of one row counts
    < 2^40, and a merged count beyond what a cell holds raises."""
    import struct

    import numpy as np  # as in cells_array: pages that never merge need no numpy

    pair = np.dtype([("n", ">i4"), ("cell", ">i8")])
    lengths = np.fromiter((len(s) // _SENT_CELL if s else 0 for s in streams), dtype=np.int64, count=len(streams))
    found: list[bytes | None] = [None] * len(streams)
    if not lengths.sum():
        return found
    pairs = np.frombuffer(b"".join(s for s in streams if s), dtype=pair)
    if (pairs["n"] != 8).any():
        raise ValueError("a latency cell that is not an 8-byte integer (a null in the array?)")
    cells = pairs["cell"].astype(np.int64)
    bins = cells >> COUNT_BITS
    # Each (group, bin) a slot of a dense grid, summed by np.bincount (no sort): the bins any cell has, numbered
    # in ascending order, are the grid's columns (a few hundred of the 8,192 a bin can be), and the groups are
    # taken a block at a time so that the grid stays ~32 MB. A sort of the (group, bin) keys did the same with a
    # half more CPU (issue 23: a month of the 10M-line bench, 8.1M cells in 22k groups, median 0.41 → 0.28 s). The
    # counts are summed as float64, exact: they are < 2^40 each and a total beyond COUNT_MASK (< 2^53) raises before
    # any sum could round.
    used = np.flatnonzero(np.bincount(bins, minlength=1 << _BIN_BITS))
    width = len(used)
    column = np.zeros(1 << _BIN_BITS, dtype=np.int64)
    column[used] = np.arange(width)
    ends = np.cumsum(lengths)
    per_block = max(1, _MERGE_GRID_SLOTS // width)
    merged_cells, merged_groups = [], []
    for first in range(0, len(streams), per_block):
        last = min(len(streams), first + per_block)
        low, high = (ends[first - 1] if first else 0), ends[last - 1]
        if low == high:
            continue
        slots = np.repeat(np.arange(last - first, dtype=np.int64), lengths[first:last]) * width + column[bins[low:high]]
        size = (last - first) * width
        taken = np.flatnonzero(np.bincount(slots, minlength=size))  # ascending: by group, then by bin
        counts = np.bincount(slots, weights=cells[low:high] & COUNT_MASK, minlength=size)[taken]
        if counts.max() > COUNT_MASK:
            raise ValueError("a merged latency bucket counts more requests than is stored")
        merged_cells.append((used[taken % width] << COUNT_BITS) | counts.astype(np.int64))
        merged_groups.append(taken // width + first)
    out = np.empty(sum(len(block) for block in merged_cells), dtype=pair)
    out["n"] = 8
    out["cell"] = np.concatenate(merged_cells)
    sent = out.tobytes()
    bounds = np.searchsorted(np.concatenate(merged_groups), np.arange(len(streams) + 1)).tolist()
    for group in np.flatnonzero(lengths).tolist():
        first, last = bounds[group], bounds[group + 1]
        # ndim 1, no nulls, element type int8 (oid 20), the length, lower bound 1
        found[group] = struct.pack(">5i", 1, 0, 20, last - first, 1) + sent[first * _SENT_CELL : last * _SENT_CELL]
    return found


def merged(distributions: Iterable[LatencyDistribution]) -> LatencyDistribution:
    total = LatencyDistribution()
    for distribution in distributions:
        total.absorb(distribution)
    return total
