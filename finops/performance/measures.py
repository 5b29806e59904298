"""What is measured of a group of requests (issue 12), in one mergeable form: a gateway-log line's hour, a reported
hour (`POST /api/v1/metrics`), a day or a month of the performance rollup all hold a `Performance`, and any period's
figures come from merging them — counts and sums add, latency distributions merge bucket by bucket
(finops.performance.latency), so a quarter's p99 is the p99 of every request of the quarter, never an average of
percentiles.

Stored as columns (issue 23): the counters below each a column, the two distributions one array of cells
(finops.performance.latency, "cells"), so the performance rollup merges rows in SQL — `COLUMNS` on the rollup rows and
the
reported hours, `LINE_COLUMNS` on a usage line, whose own `requests` column counts its requests. Exchanged and
migrated from JSON (`as_json`), the same shape everywhere:

    {"v": 2, "requests": n, "errors": n, "e2e": <distribution>, "ttft": <distribution>,
     "streamed_tokens": n, "streamed_ms": n, "timed_tokens": n, "timed_ms": n,
     "summary_requests": n, "summary_p99_ms": x | null, "summary_errors": n, "summary_counted": n}

- `requests` counts requests with per-request data (timed or not, failed included); `errors` those that failed.
- `e2e` / `ttft`: end-to-end latency and time to first token of the timed requests, in ms.
- Output speed: `streamed_tokens` ÷ `streamed_ms` over requests whose first token came before their end (tokens
  per second of generation, as the market measures it); `timed_tokens` ÷ `timed_ms` over every timed request is
  the end-to-end figure, a lower bound used when nothing streamed.
- Summary-only requests: lines written before distributions were kept (v1: count, p50/p95/max) and metrics
  reported as count + percentiles. They cannot be merged into a percentile, so they are counted apart with an
  upper bound of their p99 (`summary_p99_ms`: a v1 line's max, a report's p99; the p99 of several groups never
  exceeds the largest of their p99s), which is all that can be said of them honestly.
- Their failures: a report of count + percentiles says how many of its requests failed (`summary_errors` of
  `summary_counted` requests); a v1 line did not, so its requests count in no error rate. The error rate is
  Σ failed / Σ requests whose failure is known — per-request data and such reports alike — since counts add
  exactly even where latencies do not.
"""

from dataclasses import dataclass, field
from decimal import Decimal

from .latency import LatencyDistribution, absorb_cells, cells_of

VERSION = 2
# The stored columns of a rollup row or a reported hour, in this order; `latency` holds the cells.
COLUMNS = (
    "requests",
    "errors",
    "streamed_tokens",
    "streamed_ms",
    "timed_tokens",
    "timed_ms",
    "summary_requests",
    "summary_p99_ms",
    "summary_errors",
    "summary_counted",
    "latency",
)
# A usage line's: its requests are the line's own `requests` column. `errors` is null on a line without per-request
# data (every line but a gateway log's, and the summary-only lines of before issue 12, which hold summary_*);
# a line never holds a report's summary_errors / summary_counted.
LINE_COLUMNS = (
    "errors",
    "streamed_tokens",
    "streamed_ms",
    "timed_tokens",
    "timed_ms",
    "summary_requests",
    "summary_p99_ms",
    "latency",
)


@dataclass
class Performance:
    requests: int = 0
    errors: int = 0
    e2e: LatencyDistribution = field(default_factory=LatencyDistribution)
    ttft: LatencyDistribution = field(default_factory=LatencyDistribution)
    streamed_tokens: int = 0
    streamed_ms: int = 0
    timed_tokens: int = 0
    timed_ms: int = 0
    summary_requests: int = 0
    summary_p99_ms: float | None = None
    summary_errors: int = 0  # failed, among the summary requests that said (summary_counted)
    summary_counted: int = 0  # summary requests whose failures are known (a reported count + percentiles)

    # --- counting ---

    def add_request(self, *, duration_ms: int | None, ttft_ms: int | None, output_tokens: int, failed: bool) -> None:
        """One request; duration None when its end time is unknown (counted, not timed)."""
        self.requests += 1
        self.errors += bool(failed)
        if duration_ms is None:
            return
        self.e2e.add(duration_ms)
        self.timed_tokens += output_tokens
        self.timed_ms += duration_ms
        if ttft_ms is not None:
            self.ttft.add(ttft_ms)
            if duration_ms > ttft_ms:  # streamed: generation time is known
                self.streamed_tokens += output_tokens
                self.streamed_ms += duration_ms - ttft_ms

    def absorb(self, other: "Performance") -> None:
        """Add `other` into this one (exact: counts and sums add, distributions merge)."""
        self.requests += other.requests
        self.errors += other.errors
        self.e2e.absorb(other.e2e)
        self.ttft.absorb(other.ttft)
        self.streamed_tokens += other.streamed_tokens
        self.streamed_ms += other.streamed_ms
        self.timed_tokens += other.timed_tokens
        self.timed_ms += other.timed_ms
        self.summary_requests += other.summary_requests
        if other.summary_p99_ms is not None:
            self.summary_p99_ms = max(self.summary_p99_ms or 0, other.summary_p99_ms)
        self.summary_errors += other.summary_errors
        self.summary_counted += other.summary_counted

    # --- as columns ---

    def columns(self) -> dict:
        """The stored columns (COLUMNS) of this Performance."""
        return {
            "requests": self.requests,
            "errors": self.errors,
            "streamed_tokens": self.streamed_tokens,
            "streamed_ms": self.streamed_ms,
            "timed_tokens": self.timed_tokens,
            "timed_ms": self.timed_ms,
            "summary_requests": self.summary_requests,
            "summary_p99_ms": self.summary_p99_ms,
            "summary_errors": self.summary_errors,
            "summary_counted": self.summary_counted,
            "latency": cells_of(self.e2e, self.ttft),
        }

    def line_columns(self) -> tuple:
        """A usage line's columns (LINE_COLUMNS order) holding this Performance; its requests are the line's
        `requests` (requests + summary_requests). Zero counters are stored as they are (0, not null): null means
        "not known", and errors null marks a line without per-request data."""
        return (
            self.errors if self.requests else None,
            self.streamed_tokens,
            self.streamed_ms,
            self.timed_tokens,
            self.timed_ms,
            self.summary_requests or None,
            self.summary_p99_ms,
            cells_of(self.e2e, self.ttft),
        )

    def absorb_columns(self, row) -> "Performance":
        """Add a stored row's columns (COLUMNS order, a tuple) into this one, in place."""
        (
            requests,
            errors,
            streamed_tokens,
            streamed_ms,
            timed_tokens,
            timed_ms,
            summary_requests,
            summary_p99_ms,
            summary_errors,
            summary_counted,
            cells,
        ) = row
        self.requests += requests or 0
        self.errors += errors or 0
        self.streamed_tokens += streamed_tokens or 0
        self.streamed_ms += streamed_ms or 0
        self.timed_tokens += timed_tokens or 0
        self.timed_ms += timed_ms or 0
        self.summary_requests += summary_requests or 0
        if summary_p99_ms is not None:
            self.summary_p99_ms = max(self.summary_p99_ms or 0, float(summary_p99_ms))
        self.summary_errors += summary_errors or 0
        self.summary_counted += summary_counted or 0
        absorb_cells(self.e2e, self.ttft, cells)
        return self

    @classmethod
    def of_line(cls, requests: int, row) -> "Performance | None":
        """A usage line's Performance from its `requests` and LINE_COLUMNS (a tuple); None when it has none."""
        errors, streamed_tokens, streamed_ms, timed_tokens, timed_ms, summary_requests, summary_p99_ms, cells = row
        if errors is None and summary_requests is None:
            return None
        timed = 0 if errors is None else requests - (summary_requests or 0)
        return cls().absorb_columns(
            (
                timed,
                errors,
                streamed_tokens,
                streamed_ms,
                timed_tokens,
                timed_ms,
                summary_requests,
                summary_p99_ms,
                0,
                0,
                cells,
            )
        )

    # --- reading ---

    @property
    def all_requests(self) -> int:
        return self.requests + self.summary_requests

    @property
    def summary_only(self) -> bool:
        """Nothing but summaries: percentiles are bounds, not measurements."""
        return not self.e2e.count and bool(self.summary_requests)

    def p_ms(self, q: float) -> float | None:
        """The q-quantile of end-to-end latency over the requests with a distribution (within 1 %)."""
        return self.e2e.quantile(q)

    def ttft_p_ms(self, q: float) -> float | None:
        return self.ttft.quantile(q)

    def share_over(self, ms: float) -> float | None:
        return self.e2e.share_over(ms)

    @property
    def all_errors(self) -> int:
        """Failed requests, known from per-request data or from a report's count."""
        return self.errors + self.summary_errors

    @property
    def error_rate(self) -> float | None:
        """Σ failed / Σ requests whose failure is known (None when none is)."""
        known = self.requests + self.summary_counted
        return self.all_errors / known if known else None

    @property
    def output_tokens_per_s(self) -> tuple[Decimal | None, str]:
        """(tokens per second, basis): generation speed over streamed requests, else end-to-end over timed ones
        (a lower bound: it includes the time to first token), else (None, "")."""
        if self.streamed_ms > 0:
            return Decimal(self.streamed_tokens * 1000) / Decimal(self.streamed_ms), "generation"
        if self.timed_ms > 0:
            return Decimal(self.timed_tokens * 1000) / Decimal(self.timed_ms), "end-to-end"
        return None, ""

    # --- storage ---

    def as_json(self) -> dict:
        return {
            "v": VERSION,
            "requests": self.requests,
            "errors": self.errors,
            "e2e": self.e2e.as_json(),
            "ttft": self.ttft.as_json(),
            "streamed_tokens": self.streamed_tokens,
            "streamed_ms": self.streamed_ms,
            "timed_tokens": self.timed_tokens,
            "timed_ms": self.timed_ms,
            "summary_requests": self.summary_requests,
            "summary_p99_ms": self.summary_p99_ms,
            "summary_errors": self.summary_errors,
            "summary_counted": self.summary_counted,
        }

    @classmethod
    def from_json(cls, data: dict | None) -> "Performance":
        """A stored Performance; a line written before the change (v1: count, sum_ms, p50_ms, p95_ms, max_ms,
        ttft_sum_ms) reads as summary-only, bounded by its slowest request."""
        if not data:
            return cls()
        if "v" not in data:
            return cls(summary_requests=int(data.get("count", 0)), summary_p99_ms=_float(data.get("max_ms")))
        if data["v"] != VERSION:
            raise ValueError(f"a performance record of another version: {data['v']!r}")
        return cls(
            requests=int(data.get("requests", 0)),
            errors=int(data.get("errors", 0)),
            e2e=LatencyDistribution.from_json(data.get("e2e")),
            ttft=LatencyDistribution.from_json(data.get("ttft")),
            streamed_tokens=int(data.get("streamed_tokens", 0)),
            streamed_ms=int(data.get("streamed_ms", 0)),
            timed_tokens=int(data.get("timed_tokens", 0)),
            timed_ms=int(data.get("timed_ms", 0)),
            summary_requests=int(data.get("summary_requests", 0)),
            summary_p99_ms=_float(data.get("summary_p99_ms")),
            summary_errors=int(data.get("summary_errors", 0)),
            summary_counted=int(data.get("summary_counted", 0)),
        )


def _float(value) -> float | None:
    return None if value is None else float(value)
