"""The "Performance" section of a workload's page and the "Measured speed" table of a provider's page (issue 12):
what users see of the performance rollup over the page's period, one row per provider × model and one
workload-wide row, each read from merged distributions (finops.performance.selectors.performance).

Decisions:
- Measured and reported requests of one provider × model are merged into one row: the SLA concerns every request
  the workload served, wherever it was timed. The row's source says where its figures come from — "measured"
  (a gateway log: rollup rows with an account), "reported" (`POST /api/v1/metrics`: rows with no account) or
  "measured + reported" — so a team can tell a figure of ours from one it posted.
- Summary-only requests (gateway lines from before distributions were kept, or metrics posted as count +
  percentiles) cannot be merged into a percentile. They are counted in the requests, and the row carries a note:
  "summary only: p99 ≤ X" when that is all there is, or "+ N requests summary only (p99 ≤ X)" beside measured ones.
- Verdicts: a latency workload is judged per provider × model and as a whole (latency_verdict). A batch workload
  with a window is judged on whether each day's work fits it, which is a property of the workload (its hours of
  work on every provider together), so only the workload-wide row carries that verdict; its provider rows show
  their figures without one.
- Quality: each eval's latest score per provider × model (evals.scores_by) beside the row; the workload-wide row
  shows the primary eval weighted by requests (evals.quality_by).
"""

import datetime as dt
from dataclasses import dataclass

from django.db.models import Q

from finops.core import access, display
from finops.models import DailyPerformance, Provider, Workload
from finops.performance.measures import COLUMNS, Performance
from finops.performance.selectors import evals
from finops.performance.selectors.performance import (
    P99,
    Verdict,
    day_hours,
    is_batch,
    latency_verdict,
    performance_by,
    workload_verdict,
)

MEASURED, REPORTED = "measured", "reported"
BASIS = {"generation": "generation", "end-to-end": "end-to-end (lower bound)"}
ALL_PROVIDERS = "All providers"


@dataclass(frozen=True)
class Section:
    rows: list[dict]  # one per provider × model, most requests first
    total: dict | None  # the workload-wide row; None when there is no performance data
    verdict: Verdict | None  # the workload's verdict over the period (the badge beside the section's title)

    @property
    def verdict_text(self) -> str:
        return verdict_text(self.verdict)


def _merge_by_source(found: dict[tuple, Performance]) -> dict[tuple, tuple[Performance, set[str]]]:
    """{(provider, model, account): Performance} → {(provider, model): (merged Performance, its sources)}."""
    merged: dict[tuple, tuple[Performance, set[str]]] = {}
    for (provider_id, model, account_id), performance in found.items():
        source = MEASURED if account_id is not None else REPORTED
        if (provider_id, model) in merged:
            merged[(provider_id, model)][0].absorb(performance)
            merged[(provider_id, model)][1].add(source)
        else:
            merged[(provider_id, model)] = (performance, {source})
    return merged


def _source_label(sources: set[str]) -> str:
    return " + ".join(s for s in (MEASURED, REPORTED) if s in sources)


def _seconds(ms: float | None) -> float | None:
    return None if ms is None else ms / 1000


def _summary_note(performance: Performance) -> str:
    if not performance.summary_requests:
        return ""
    bound = (
        display.duration(_seconds(performance.summary_p99_ms)) if performance.summary_p99_ms is not None else "unknown"
    )
    if performance.summary_only:
        return f"summary only: p99 ≤ {bound}"
    return f"+ {display.count(performance.summary_requests)} requests summary only (p99 ≤ {bound})"


def figures(performance: Performance) -> dict:
    """The measures of one row: latencies in seconds (the tables' duration kind), output speed with its basis."""
    speed, basis = performance.output_tokens_per_s
    return {
        "requests": performance.all_requests,
        "errors": performance.errors,
        "error_rate": performance.error_rate,
        "p50_s": _seconds(performance.p_ms(0.5)),
        "p99_s": _seconds(performance.p_ms(P99)),
        "ttft_p50_s": _seconds(performance.ttft_p_ms(0.5)),
        "tokens_per_s": speed,
        "tokens_per_s_basis": BASIS.get(basis, ""),
        "summary_only": performance.summary_only,
        "summary_p99_s": _seconds(performance.summary_p99_ms),
        "summary_note": _summary_note(performance),
    }


def verdict_text(verdict: Verdict | None) -> str:
    """What the badge means, in words: "p99 9.8 s against an SLA of 8 s", "fits its 6 h window on 29 of 30 days"."""
    if verdict is None:
        return ""
    if verdict.kind == "batch":
        if verdict.status in ("meets", "fails"):
            fitting = verdict.days - verdict.days_over
            return (
                f"work fits its {verdict.window_hours} h window on {fitting} of {verdict.days} days; "
                f"longest day {verdict.longest_span_hours} h"
            )
        return f"{verdict.window_hours} h window, no work in this period" if verdict.status == "no-data" else ""
    p99 = display.duration(_seconds(verdict.p99_ms)) if verdict.p99_ms is not None else None
    if verdict.status == "no-sla":
        return "no SLA set"
    sla = display.duration(verdict.sla_seconds)
    if verdict.status == "no-data":
        return f"SLA {sla}, no requests in this period"
    if verdict.bound:
        return f"summary only: p99 ≤ {p99} against an SLA of {sla}" if p99 else f"summary only, against an SLA of {sla}"
    return f"p99 {p99} against an SLA of {sla}"


def _badge(verdict: Verdict | None) -> str | None:
    return None if verdict is None else verdict.label


def _quality_text(scores: dict[str, evals.Quality] | None) -> str:
    if not scores:
        return ""
    return "; ".join(f"{name} {display.score(q.score)}" for name, q in sorted(scores.items()))


def workload_section(workload: Workload, start: dt.date, end: dt.date) -> Section:
    """The workload's performance over [start, end): a row per provider × model and the workload-wide row."""
    found = performance_by([workload.id], start, end, keys=("provider_id", "model", "account_id"))
    if not found:
        return Section(rows=[], total=None, verdict=None)
    merged = _merge_by_source(found)
    providers = dict(Provider.objects.filter(id__in={p for p, _ in merged}).values_list("id", "name"))
    scores = evals.scores_by([workload.id], start, end)
    batch = is_batch(workload)
    sla_ms = float(workload.sla_seconds) * 1000 if workload.sla_seconds is not None and not batch else None
    rows, whole, sources = [], Performance(), set()
    for (provider_id, model), (performance, row_sources) in merged.items():
        verdict = None if batch else latency_verdict(performance, workload.sla_seconds)
        rows.append(
            {
                "label": providers.get(provider_id, "?"),
                "provider_id": provider_id,
                "model": model,
                "model_name": display.model_name(model),
                "source": _source_label(row_sources),
                **figures(performance),
                "share_over_sla": performance.share_over(sla_ms) if sla_ms is not None else None,
                "verdict": _badge(verdict),
                "verdict_status": verdict.status if verdict else "",
                "verdict_text": verdict_text(verdict),
                "quality": _quality_text(scores.get((workload.id, provider_id, model))),
            }
        )
        whole.absorb(performance)  # absorb reads `performance` and leaves it as it is
        sources |= row_sources
    rows.sort(key=lambda r: (-r["requests"], r["label"], r["model"]))
    hours = day_hours([workload.id], start, end).get(workload.id) if batch else None
    verdict = workload_verdict(workload, whole, hours)
    quality = evals.quality_by(
        [workload.id], start, end, {(workload.id, r["provider_id"], r["model"]): r["requests"] for r in rows}
    ).get(workload.id)
    total = {
        "label": ALL_PROVIDERS,
        "provider_id": None,
        "model": "",
        "model_name": "all models",
        "muted": True,
        "source": _source_label(sources),
        **figures(whole),
        "share_over_sla": whole.share_over(sla_ms) if sla_ms is not None else None,
        "verdict": _badge(verdict),
        "verdict_status": verdict.status,
        "verdict_text": verdict_text(verdict),
        "quality": f"{quality.name} {display.score(quality.score)} (weighted by requests)" if quality else "",
    }
    return Section(rows=rows, total=total, verdict=verdict)


def daily_p99(workload: Workload, start: dt.date, end: dt.date) -> list[dict]:
    """[{day, p99_s, requests}] per day of [start, end) with timed requests: each day's p99 from that day's merged
    distribution (every provider, model and source of the workload together)."""
    days: dict[dt.date, Performance] = {}
    rows = DailyPerformance.objects.filter(workload=workload, day__gte=start, day__lt=end)
    for day, *stored in rows.values_list("day", *COLUMNS).iterator(chunk_size=2000):
        if day not in days:
            days[day] = Performance()
        days[day].absorb_columns(stored)
    return [
        {"day": day, "p99_s": _seconds(p.p_ms(P99)), "requests": p.all_requests}
        for day, p in sorted(days.items())
        if p.e2e.count
    ]


def provider_speed(provider: Provider, workload_ids, start: dt.date, end: dt.date) -> list[dict]:
    """The provider page's "Measured speed": per model over [start, end), the requests of `workload_ids` (None: every
    request, unattributed included — those who see everything) with their output speed, p50 TTFT and p99."""
    found = performance_by(workload_ids, start, end, keys=("model",), rows_where=Q(provider_id=provider.id))
    rows = []
    for (model,), performance in found.items():
        rows.append({"label": display.model_name(model), "model": model, **figures(performance)})
    return sorted(rows, key=lambda r: (-r["requests"], r["model"]))


def workloads_scope(user) -> list[int] | None:
    """The workloads whose performance a viewer may read: None (every row, unattributed included) for those who
    see everything, else their teams' workloads."""
    if access.sees_everything(user):
        return None
    return list(access.visible_workloads(user).values_list("id", flat=True))
