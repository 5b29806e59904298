"""The cells of a gateway log's CSV as numpy columns, read exactly as gateway/log.py reads one record's (counts,
times, latencies, latency buckets), for gateway/columns.py; and the bytes of the file checked on their way in.

Each reader takes only the form it reads exactly and raises BatchDeclined otherwise: the record reader then reads
the file, and says what is wrong where.
"""

import io
import math

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from finops.performance.latency import LOG_GAMMA, bucket_of
from ingest.connectors.base import BatchDeclined as Declined
from ingest.connectors.text_input import MAX_LINE_CHARS

# Where LiteLLM writes a request's cache tokens in a spend log's `metadata`, in the order both readers look
# (gateway_log._litellm_request, gateway_columns): the `usage_object` it was given, else the
# `additional_usage_values` it always writes (every usage field but the three totals: OpenAI's
# prompt_tokens_details.cached_tokens; Anthropic's and Bedrock's cache_read_input_tokens /
# cache_creation_input_tokens, which LiteLLM also copies into prompt_tokens_details as cached_tokens /
# cache_creation_tokens; DeepSeek's prompt_cache_hit_tokens; cache_write_tokens of OpenRouter-style details).
# After these, a CSV export's own cache_read_input_tokens / cache_creation_input_tokens columns.
CACHE_READS = tuple(
    (usage, *path)
    for usage in ("usage_object", "additional_usage_values")
    for path in (("prompt_tokens_details", "cached_tokens"), ("cache_read_input_tokens",), ("prompt_cache_hit_tokens",))
)
CACHE_WRITES = tuple(
    (usage, *path)
    for usage in ("usage_object", "additional_usage_values")
    for path in (
        ("cache_creation_input_tokens",),
        ("prompt_tokens_details", "cache_creation_tokens"),
        ("prompt_tokens_details", "cache_write_tokens"),
    )
)
MAX_COUNT_DIGITS = 10  # tokens per request below 10^10: int64 sums cannot overflow
MAX_MS = 10**10  # a request's latency (115 days): above it, the row reader's
_TIME = r"^(19|20)[0-9]{2}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?(Z|z|\+00:00)?$"
_DIGITS = f"^[0-9]{{1,{MAX_COUNT_DIGITS}}}$"


def bucket_bounds() -> np.ndarray:
    """b[i-1] = the smallest whole ms whose finops.performance.latency bucket is ≥ i, for i = 1 … bucket_of(MAX_MS): so
    the
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


class CheckedBytes(io.RawIOBase):
    """The file's bytes as they pass, checked as text_input.bounded_lines checks lines (no NUL, none longer than
    MAX_LINE_CHARS, counted in bytes, which are never fewer than the characters), and its line breaks counted, so
    that record n is known to be on line n + 1 (no line break inside a value, no lone CR)."""

    PIECE = 1 << 20

    def __init__(self, stream):
        self._stream = stream
        self.newlines, self.run, self.last, self.problem = 0, 0, b"", ""
        self.trailing = 0  # line breaks after the last byte that is not one (an export's final, blank lines)

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
        # Two passes over the bytes, not three (`in` is a memchr, ~5× a count; numpy counts a byte ~2.5× faster
        # than bytes.count): 0.45 s of CPU for a proxy's 431 MB at 1M, now ~0.15 s.
        returns = chunk.count(b"\r") if b"\r" in chunk else 0
        if returns and returns != chunk.count(b"\r\n") + (chunk.endswith(b"\r")):
            self.problem = "a lone carriage return"
        if self.last == b"\r" and not chunk.startswith(b"\n"):
            self.problem = "a lone carriage return"
        first = chunk.find(b"\n")
        if first < 0:
            self.run += len(chunk)
        else:
            self.newlines += int(np.count_nonzero(np.frombuffer(chunk, dtype=np.uint8) == ord("\n")))
            if self.run + first >= MAX_LINE_CHARS:
                self.problem = "a line past the bound"
            self.run = len(chunk) - chunk.rfind(b"\n") - 1
        if self.run >= MAX_LINE_CHARS:
            self.problem = "a line past the bound"
        self.last = chunk[-1:]
        body = chunk.rstrip(b"\r\n")
        self.trailing = (self.trailing if not body else 0) + chunk.count(b"\n", len(body))

    def check(self) -> None:
        if self.problem:
            raise Declined(f"{self.problem}: the row reader names the line")

    def one_line_per_record(self, records: int) -> bool:
        """The header, then one line per record, then nothing but blank lines (which the record reader skips too)."""
        return self.newlines == records + self.trailing


def count_column(column, *, empty):
    """Plain whole numbers as int64 ("" is `empty`: 0, or null when absent); anything else declines."""
    if column is None:
        return None
    given = pc.not_equal(column, "")
    if not pc.all(pc.or_(pc.invert(given), pc.match_substring_regex(column, _DIGITS))).as_py():
        raise Declined("a count that is not plain digits")
    values = pc.if_else(given, column, pa.scalar("0" if empty == 0 else None, pa.string())).cast(pa.int64())
    return values.to_numpy(zero_copy_only=False) if empty == 0 else values


def times(column, *, required: bool = False) -> np.ndarray | None:
    """Microseconds since the epoch (UTC) of each row; a missing time is MISSING."""
    if column is None:
        if required:
            raise Declined("no startTime column")
        return None
    column = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    given = pc.not_equal(column, "")
    if required and not pc.all(given).as_py():
        raise Declined("a missing startTime")
    present = column.filter(given) if column.null_count or not pc.all(given).as_py() else column
    moments = fixed_width_times(present)
    if moments is None:  # not one layout throughout: Arrow's parser, behind a check of the form
        if not pc.all(pc.match_substring_regex(present, _TIME)).as_py():
            raise Declined("a time that is not plain UTC ISO 8601")
        text = pc.replace_substring_regex(present, r"(Z|z|\+00:00)$", "")
        moments = text.cast(pa.timestamp("us")).cast(pa.int64()).to_numpy(zero_copy_only=False)
    if len(present) == len(column):
        return moments
    result = np.full(len(column), MISSING, dtype=np.int64)
    result[given.to_numpy(zero_copy_only=False)] = moments
    return result


_DIGIT_AT = (0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18)
_SUFFIXES = (b"", b"Z", b"z", b"+00:00")


def fixed_width_times(column: pa.Array) -> np.ndarray | None:
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
    data = np.frombuffer(column.buffers()[2], dtype=np.uint8)[offsets[0] : offsets[-1]].reshape(n, width)
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
    numbers = data[:, digits] - np.uint8(ord("0"))  # bytes: below "0" wraps above 9
    if (numbers > 9).any():
        return None

    def field(*places):
        value = np.zeros(n, dtype=np.int64)
        for place in places:
            value = value * 10 + numbers[:, digits.index(place)].astype(np.int64)
        return value

    year, month, day = field(0, 1, 2, 3), field(5, 6), field(8, 9)
    hour, minute, second = field(11, 12), field(14, 15), field(17, 18)
    micros = field(*range(20, 19 + fraction)) * 10 ** (7 - fraction) if fraction else np.zeros(n, dtype=np.int64)
    leap = (year % 4 == 0) & ((year % 100 != 0) | (year % 400 == 0))
    month_days = np.array([0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31])[np.clip(month, 0, 12)] + (
        leap & (month == 2)
    )
    if (
        (year < 1900)
        | (month < 1)
        | (month > 12)
        | (day < 1)
        | (day > month_days)
        | (hour > 23)
        | (minute > 59)
        | (second > 59)
    ).any():
        raise Declined("a time out of range: the row reader names the record")
    # Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
    y = year - (month <= 2)
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (month + np.where(month > 2, -3, 9)) + 2) // 5 + day - 1
    days = era * 146097 + yoe * 365 + yoe // 4 - yoe // 100 + doy - 719468
    return ((days * 24 + hour) * 60 + minute) * 60_000_000 + second * 1_000_000 + micros


MISSING = np.iinfo(np.int64).min


def latencies(start, end, first, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(timed, duration ms, ttft ms) per row, as gateway_log._Groups.add computes them."""
    if end is None:
        zeros = np.zeros(n, dtype=np.int64)
        return np.zeros(n, dtype=bool), zeros, zeros
    timed = end != MISSING
    duration = _ms(np.where(timed, end, start) - start)
    if (duration < 0).any():
        raise Declined("an end before its start: the row reader names the record")
    if (duration > MAX_MS).any():
        raise Declined("a latency above MAX_MS")
    stamp = (
        np.where(timed, end, start) if first is None else np.where(first != MISSING, first, np.where(timed, end, start))
    )
    ttft = np.where(timed, np.minimum(np.maximum(_ms(stamp - start), 0), duration), 0)
    return timed, duration, ttft


def _ms(microseconds: np.ndarray) -> np.ndarray:
    """round(delta / 1 ms) as Python computes it: the correctly rounded quotient, then half to even."""
    return np.rint(microseconds / 1000).astype(np.int64)
