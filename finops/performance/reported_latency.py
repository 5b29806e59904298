"""Latency as teams that measure outside the gateway report it (`POST /api/v1/metrics`, issue 12), read into this
product's mergeable form (finops.performance.latency). Three shapes, each with what it can honestly become:

- this product's distribution, `{"v": 1, "alpha": "0.01", "zero": n, "buckets": {"i": n, …}}` (what
  LatencyDistribution.as_json writes) → kind `sketch`: taken as is, exact within the sketch's 1 %.
- a histogram, `{"histogram": [[upper_bound_ms, count], …]}`: counts per bucket (NOT cumulative), upper bounds
  increasing → kind `histogram`. Each bucket's count is placed AT ITS UPPER BOUND: a request of a bucket was at
  most that slow, so every percentile read from it is the bucket's bound (within the sketch's 1 %) — never
  understated, at worst overstated by the bucket's width. A Prometheus `_bucket` series is cumulative (each
  `le` counts every request at or under it): difference it first, or send `"cumulative": true` and it is
  differenced here. A last bucket without a bound (`"+Inf"`) must hold nothing: those requests' latency is
  unknown, and placing them at the last bound would understate it (choose a last bound above your timeout).
- count and percentiles, `{"count": n, "p50_ms": x, "p95_ms": y, "p99_ms": z}` → kind `percentiles`: not
  mergeable, so kept as a summary (finops.performance.measures): the requests are counted apart and the p99 bounds the
  p99 of any period they fall in. p50 and p95 (optional) are checked (p50 ≤ p95 ≤ p99) but only the p99 is kept:
  it is the one figure that still says something about a merge.

No queries here; problems are appended as "field: …" for the caller to number by row.
"""

from dataclasses import dataclass

from finops.performance.services.reported_rows import LATENCY_MAX_MS, milliseconds, whole

from .latency import ALPHA, MIN_MS, VERSION, LatencyDistribution, bucket_of

SKETCH, HISTOGRAM, PERCENTILES = "sketch", "histogram", "percentiles"
INFINITE = {"+inf", "inf", "infinity", "+infinity"}
LOWEST, HIGHEST = bucket_of(MIN_MS), bucket_of(LATENCY_MAX_MS)  # the sketch's buckets from 1 µs to a day
SHAPES = (
    'this product\'s distribution {"v": 1, "alpha": "0.01", "zero": n, "buckets": {...}}, '
    'a histogram {"histogram": [[upper_bound_ms, count], ...]}, or {"count": n, "p50_ms": x, "p95_ms": y, "p99_ms": z}'
)


@dataclass(frozen=True)
class LatencyReport:
    kind: str
    count: int
    distribution: LatencyDistribution | None = None  # sketch, histogram
    p99_ms: float | None = None  # percentiles


def latency_report(value, field: str, problems: list[str]) -> LatencyReport | None:
    """The report `value` as one of the three shapes, or None with the problems appended."""
    if not isinstance(value, dict):
        problems.append(f"{field}: expected {SHAPES}")
        return None
    if "v" in value or "buckets" in value:
        return _sketch(value, field, problems)
    if "histogram" in value:
        return _histogram(value, field, problems)
    if {"count", "p50_ms", "p95_ms", "p99_ms"} & set(value):
        return _percentiles(value, field, problems)
    problems.append(f"{field}: expected {SHAPES}")
    return None


def _unknown_keys(value: dict, allowed: set[str], field: str, problems: list[str]) -> bool:
    if unknown := sorted(set(value) - allowed, key=str):
        problems.append(f"{field}: unknown key{'s' if len(unknown) > 1 else ''} {', '.join(repr(u) for u in unknown)}")
        return True
    return False


def _sketch(value: dict, field: str, problems: list[str]) -> LatencyReport | None:
    if _unknown_keys(value, {"v", "alpha", "zero", "buckets"}, field, problems):
        return None
    if value.get("v") != VERSION or value.get("alpha") != str(ALPHA):
        problems.append(
            f'{field}: a distribution must be version {VERSION} with alpha "{ALPHA}" '
            f"(got v {value.get('v')!r}, alpha {value.get('alpha')!r})"
        )
        return None
    buckets = value.get("buckets", {})
    if not isinstance(buckets, dict):
        problems.append(f'{field}: buckets must be an object {{"index": count, …}}')
        return None
    before = len(problems)
    zero = whole(value.get("zero", 0), f"{field}.zero", problems)
    clean = {}
    for index, count in buckets.items():
        if not isinstance(index, str | int) or isinstance(index, bool) or not str(index).lstrip("-").isdigit():
            problems.append(f"{field}.buckets: {index!r} is not a bucket index (a whole number)")
            continue
        if not LOWEST <= int(index) <= HIGHEST:
            problems.append(f"{field}.buckets: index {index} is outside {LOWEST}…{HIGHEST} (1 µs to a day)")
            continue
        count = whole(count, f"{field}.buckets[{index}]", problems)
        if count:
            clean[int(index)] = count
    if len(problems) > before:
        return None
    distribution = LatencyDistribution(clean, zero)
    return LatencyReport(SKETCH, distribution.count, distribution)


def _histogram(value: dict, field: str, problems: list[str]) -> LatencyReport | None:
    if _unknown_keys(value, {"histogram", "cumulative"}, field, problems):
        return None
    cumulative = value.get("cumulative", False)
    if not isinstance(cumulative, bool):
        problems.append(f"{field}.cumulative: must be true or false")
        return None
    buckets = value["histogram"]
    if not isinstance(buckets, list):
        problems.append(f"{field}.histogram: expected a list of [upper_bound_ms, count] pairs")
        return None
    before = len(problems)
    bounds, counts = [], []
    for position, bucket in enumerate(buckets):
        where = f"{field}.histogram[{position}]"
        if not isinstance(bucket, list | tuple) or len(bucket) != 2:
            problems.append(f"{where}: expected [upper_bound_ms, count]")
            continue
        bound, count = bucket
        if isinstance(bound, str) and bound.strip().lower() in INFINITE:
            if position != len(buckets) - 1:
                problems.append(f"{where}: only the last bucket may be unbounded (+Inf)")
                continue
            bound = None
        else:
            bound = milliseconds(bound, f"{where} upper bound", problems)
            if bound is None:
                continue
            if bounds and bounds[-1] is not None and bound <= bounds[-1]:
                problems.append(f"{where}: upper bounds must increase ({bound:g} ms after {bounds[-1]:g} ms)")
                continue
        count = whole(count, f"{where} count", problems)
        if count is None:
            continue
        bounds.append(bound)
        counts.append(count)
    if len(problems) > before:
        return None
    if cumulative:
        counts = _differenced(counts, field, problems)
        if counts is None:
            return None
    distribution = LatencyDistribution()
    for bound, count in zip(bounds, counts):
        if bound is None:
            if count:
                problems.append(
                    f"{field}.histogram: {count} requests above the last bound ({bounds[-2]:g} ms) have "
                    "no upper bound: their latency is unknown; end with a bound above your timeout"
                    if len(bounds) > 1
                    else f"{field}.histogram: a single unbounded bucket says nothing of latency"
                )
                return None
            continue
        distribution.add(bound, count)  # at the upper bound: never understated
    return LatencyReport(HISTOGRAM, sum(counts), distribution)


def _differenced(counts: list[int], field: str, problems: list[str]) -> list[int] | None:
    """Per-bucket counts from cumulative ones (each bucket counts every request at or under its bound)."""
    found, previous = [], 0
    for position, count in enumerate(counts):
        if count < previous:
            problems.append(f"{field}.histogram[{position}]: a cumulative count cannot fall ({count} after {previous})")
            return None
        found.append(count - previous)
        previous = count
    return found


def _percentiles(value: dict, field: str, problems: list[str]) -> LatencyReport | None:
    if _unknown_keys(value, {"count", "p50_ms", "p95_ms", "p99_ms"}, field, problems):
        return None
    before = len(problems)
    if value.get("count") is None or value.get("p99_ms") is None:
        problems.append(f"{field}: count and p99_ms are required (p50_ms and p95_ms are optional)")
        return None
    count = whole(value["count"], f"{field}.count", problems)
    figures = {}
    for name in ("p50_ms", "p95_ms", "p99_ms"):
        if value.get(name) is not None:
            figures[name] = milliseconds(value[name], f"{field}.{name}", problems)
    if len(problems) > before:
        return None
    ordered = [figures[n] for n in ("p50_ms", "p95_ms", "p99_ms") if n in figures]
    if ordered != sorted(ordered):
        problems.append(f"{field}: percentiles must not decrease (p50_ms ≤ p95_ms ≤ p99_ms)")
        return None
    return LatencyReport(PERCENTILES, count, p99_ms=figures["p99_ms"])
