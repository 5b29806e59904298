"""Writes of reported metrics (issue 12): `POST /api/v1/metrics`, for teams that measure their requests somewhere
other than a gateway this product reads. docs/performance.md, "Reported metrics".

One row is one UTC hour of a workload's requests on a provider and model, from one source:
`{workload, provider, model, hour, source?, requests, errors?, latency, ttft?, output_tokens?, generation_seconds?}`.
It becomes a ReportedPerformance holding a finops.performance.measures.Performance, merged into the performance rollup
beside the gateway-log lines (account null), so every period's percentiles still come from merged distributions.

Decisions:
- `hour`: an ISO 8601 date-time with an offset (`Z` or `+hh:mm`; converted to UTC), on a UTC hour boundary, at
  most an hour ahead of now (a clock a little fast is fine; a day ahead is a mistake). A time without an offset
  is refused: read as UTC it would be wrong by the sender's offset, silently.
- `latency` (end-to-end) and `ttft` (time to first token), in ms: one of three shapes
(finops.performance.reported_latency).
  A distribution or histogram must count exactly `requests` (failed ones included: their latency counts too);
  a ttft distribution at most `requests` (only streamed requests have one). `ttft` as percentiles is refused:
  there is nowhere honest to keep it (a summary's bound is of end-to-end latency), so send it as a histogram or
  leave it out.
- A percentiles-only report (kind `percentiles`) has no per-request data: its requests are counted as summary
  requests (`summary_requests`, bounded by its p99) and its `errors` as theirs (`summary_errors` of
  `summary_counted`). Errors add exactly even where latencies do not, so they are in the error rate
  (Σ failed / Σ requests whose failure is known), while its latency never enters a percentile.
- Output speed: `output_tokens` with `generation_seconds` (Σ over the requests of the time from first token to
  last, in seconds) — the generation speed the market quotes. They go together: tokens without the time they
  took would skew any period's tokens per second.
- Corrections: a later report for the same workload, provider, model, hour and source replaces the earlier one
  (never adds), so posting the same batch twice leaves the same state; no idempotency key is needed.
- Reported metrics change no spend and no alert judges latency (docs/architecture.md's evaluations are caps, spikes,
  commitments, cost per outcome and silent sources), so no "spend changed" signal is queued: only the
  performance rollup of the workloads and days written is rebuilt, in the same transaction.
"""

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from finops.models import MetricKind, ReportedPerformance
from finops.performance.measures import COLUMNS, Performance
from finops.performance.reported_latency import PERCENTILES, LatencyReport, latency_report
from finops.performance.services import reported_rows as rr
from finops.performance.services.performance_rollup import reported_changed
from finops.web.batch_limits import rows_refusal

FIELDS = {
    "workload",
    "provider",
    "model",
    "hour",
    "source",
    "requests",
    "errors",
    "latency",
    "ttft",
    "output_tokens",
    "generation_seconds",
}
REQUIRED = ("workload", "provider", "model", "hour", "requests", "latency")
AHEAD = dt.timedelta(hours=1)
BATCH_SIZE = 2000


class MetricsInvalid(rr.BatchInvalid):
    """The metrics batch was rejected; nothing was applied."""


@dataclass(frozen=True)
class _Clean:
    workload_id: int
    provider_id: int
    model: str
    hour: dt.datetime
    source: str
    kind: str
    performance: dict  # Performance.columns()


def metrics_record(*, by, rows: Iterable[dict], source_default: str = "") -> rr.BatchResult:
    """Validate every row, then upsert them all and rebuild their performance rollup in one transaction."""
    rr.check_writer(by, "metrics")
    rows = list(rows)
    if by is not None and (refusal := rows_refusal(len(rows))):
        raise MetricsInvalid([refusal])
    try:
        source_default = rr.source_of(source_default, "default source")
    except ValueError as exc:
        raise MetricsInvalid([str(exc)]) from None
    clean = _validate(by, rows, source_default)
    with transaction.atomic():
        result, written = _upsert(clean)
        if written:
            reported_changed(workload_ids={c.workload_id for c in written}, days={c.hour.date() for c in written})
    return result


def _validate(by, rows: list, source_default: str) -> list[_Clean]:
    targets = rr.Targets(by, rows, "metrics")
    latest = timezone.now().astimezone(dt.UTC) + AHEAD
    return rr.validated(
        rows,
        expected="workload, provider, model, hour, requests and latency",
        invalid=MetricsInvalid,
        clean_row=lambda row, problems: _row(row, targets, latest, source_default, problems),
        key=lambda c: (c.workload_id, c.provider_id, c.model, c.hour, c.source),
        describe=lambda row, c: (
            f"workload {row['workload']!r}, provider {row['provider']!r}, model {c.model!r}, "
            f"hour {c.hour.isoformat()}, source {c.source!r}"
        ),
    )


def _row(
    row: dict, targets: rr.Targets, latest: dt.datetime, source_default: str, problems: list[str]
) -> _Clean | None:
    rr.row_shape(row, FIELDS, REQUIRED, problems)
    present = lambda name: row.get(name) not in (None, "")  # noqa: E731
    workload = targets.workload(row["workload"], problems) if present("workload") else None
    provider = targets.provider(row["provider"], problems) if present("provider") else None
    model = rr.model_of(row["model"], problems) if present("model") else None
    hour = _hour(row["hour"], latest, problems) if present("hour") else None
    requests = rr.whole(row["requests"], "requests", problems) if present("requests") else None
    errors = rr.whole(row["errors"], "errors", problems) if present("errors") else 0
    if requests is not None and errors is not None and errors > requests:
        problems.append(f"errors: {errors} failed of {requests} requests")
    latency = latency_report(row["latency"], "latency", problems) if present("latency") else None
    if latency is not None and requests is not None and latency.count != requests:
        problems.append(
            f"latency: counts {latency.count} requests, the row {requests}: a distribution counts every "
            "request of the hour, failed ones included"
        )
    ttft = latency_report(row["ttft"], "ttft", problems) if present("ttft") else None
    if ttft is not None and ttft.kind == PERCENTILES:
        problems.append(
            "ttft: percentiles of time to first token cannot be kept (only a distribution or a histogram "
            "merges); send a histogram, or leave ttft out"
        )
    elif ttft is not None and requests is not None and ttft.count > requests:
        problems.append(f"ttft: counts {ttft.count} requests, more than the row's {requests}")
    speed = _speed(row, problems)
    try:
        source = rr.source_of(row.get("source"), "source") or source_default
    except ValueError as exc:
        problems.append(str(exc))
        return None
    if problems:
        return None
    return _Clean(
        workload,
        provider,
        model,
        hour,
        source,
        latency.kind,
        _performance(requests, errors, latency, ttft, speed).columns(),
    )


def _hour(value, latest: dt.datetime, problems: list[str]) -> dt.datetime | None:
    if not isinstance(value, str):
        problems.append(f"hour: {value!r} is not an ISO 8601 date-time")
        return None
    try:
        hour = dt.datetime.fromisoformat(value.strip())
    except ValueError:
        problems.append(f"hour: {value!r} is not an ISO 8601 date-time (e.g. 2026-11-02T14:00:00Z)")
        return None
    if hour.tzinfo is None:
        problems.append(f"hour: {value!r} has no UTC offset: add Z (UTC) or +hh:mm")
        return None
    hour = hour.astimezone(dt.UTC)
    if (hour.minute, hour.second, hour.microsecond) != (0, 0, 0):
        problems.append(f"hour: {value!r} is {hour:%H:%M:%S} UTC, not the start of a UTC hour")
        return None
    if hour > latest:
        problems.append(f"hour: {hour.isoformat()} is more than an hour ahead of now")
        return None
    return hour


def _speed(row: dict, problems: list[str]) -> tuple[int, int] | None:
    """(output tokens, generation ms), or None when neither is given."""
    tokens, seconds = row.get("output_tokens"), row.get("generation_seconds")
    if tokens is None and seconds is None:
        return None
    if tokens is None or seconds is None:
        problems.append(
            "output_tokens and generation_seconds go together (output speed is tokens over the time "
            "spent generating them)"
        )
        return None
    tokens = rr.whole(tokens, "output_tokens", problems)
    seconds = rr.decimal_of(seconds, "generation_seconds", problems)
    if tokens is None or seconds is None:
        return None
    if seconds < 0:
        problems.append(f"generation_seconds: {seconds} is negative")
        return None
    ms = int((seconds * 1000).to_integral_value())
    if tokens and not ms:
        problems.append(f"generation_seconds: {tokens} tokens cannot take no time")
        return None
    return tokens, ms


def _performance(
    requests: int, errors: int, latency: LatencyReport, ttft: LatencyReport | None, speed: tuple[int, int] | None
) -> Performance:
    performance = Performance()
    if latency.kind == PERCENTILES:
        performance.summary_requests = performance.summary_counted = requests
        performance.summary_errors = errors
        performance.summary_p99_ms = latency.p99_ms if requests else None
    else:
        performance.requests, performance.errors, performance.e2e = requests, errors, latency.distribution
    if ttft is not None:
        performance.ttft = ttft.distribution
    if speed is not None:
        performance.streamed_tokens, performance.streamed_ms = speed
    return performance


def _upsert(clean: list[_Clean]) -> tuple[rr.BatchResult, list[_Clean]]:
    """Compare with what is stored (created / replaced / unchanged), then write only what differs."""
    hours = [c.hour for c in clean]
    stored = {
        (w, p, m, h, s): (k, dict(zip(COLUMNS, columns)))
        for w, p, m, h, s, k, *columns in ReportedPerformance.objects.filter(
            workload_id__in={c.workload_id for c in clean},
            hour__gte=min(hours),
            hour__lte=max(hours),
        ).values_list("workload_id", "provider_id", "model", "hour", "source", "kind", *COLUMNS)
    }
    created = replaced = unchanged = 0
    written = []
    for c in clean:
        before = stored.get((c.workload_id, c.provider_id, c.model, c.hour, c.source))
        if before is None:
            created += 1
        elif before == (c.kind, c.performance):
            unchanged += 1
            continue
        else:
            replaced += 1
        written.append(c)
    ReportedPerformance.objects.bulk_create(
        [
            ReportedPerformance(
                workload_id=c.workload_id,
                provider_id=c.provider_id,
                model=c.model,
                hour=c.hour,
                source=c.source,
                kind=MetricKind(c.kind),
                **c.performance,
            )
            for c in written
        ],
        batch_size=BATCH_SIZE,
        update_conflicts=True,
        unique_fields=["workload", "provider", "model", "hour", "source"],
        update_fields=["kind", *COLUMNS, "updated_at"],
    )
    return rr.BatchResult(rows=len(clean), created=created, replaced=replaced, unchanged=unchanged), written
