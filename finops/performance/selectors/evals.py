"""Quality scores over a period (issue 12): what `POST /api/v1/evals` recorded, read beside cost.

Per workload × provider × model, the score of an eval over a period is that of its latest score row (latest
period end, then latest written) whose period overlaps the period asked for.

A workload's one quality figure (the scorecard's column) is its **primary eval** — the eval name with the most
score rows overlapping the period, ties to the alphabetically first — averaged over the providers and models
that have a score for it, weighted by the requests each served in the period (`requests`), or a plain mean
when none of them served any.
"""

import datetime as dt
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal

from finops.core import access
from finops.core.any_of import AnyOf
from finops.models import EvalScore

Key = tuple[int, int, str]  # workload, provider, model


@dataclass(frozen=True)
class Quality:
    name: str
    score: Decimal
    period_start: dt.date | None = None
    period_end: dt.date | None = None


def overlapping(workload_ids: Iterable[int] | None, start: dt.date, end: dt.date):
    rows = EvalScore.objects.filter(period_start__lt=end, period_end__gt=start)
    return rows if workload_ids is None else rows.filter(AnyOf("workload_id", workload_ids))


def scores_by(workload_ids: Iterable[int] | None, start: dt.date, end: dt.date) -> dict[Key, dict[str, Quality]]:
    """Per workload, provider and model: each eval's latest score overlapping [start, end)."""
    found: dict[Key, dict[str, Quality]] = {}
    rows = overlapping(workload_ids, start, end).order_by("period_end", "updated_at", "id")
    for workload_id, provider_id, model, name, score, first, stop in rows.values_list(
        "workload_id",
        "provider_id",
        "model",
        "name",
        "score",
        "period_start",
        "period_end",
    ):
        found.setdefault((workload_id, provider_id, model), {})[name] = Quality(name, score, first, stop)  # later wins
    return found


def quality_by(
    workload_ids: Iterable[int] | None, start: dt.date, end: dt.date, requests: dict[Key, int] | None = None
) -> dict[int, Quality]:
    """Per workload: its primary eval's score over [start, end) (see the module's docstring)."""
    # Each workload's (provider, model) scores apart: looking them up among every workload's keys made this
    # quadratic (the quarterly scorecard of 400 workloads: 400 × every key, ~20 ms of Python a quarter; issue 23).
    scores: dict[int, list[tuple[Key, dict[str, Quality]]]] = {}
    for key, by_name in scores_by(workload_ids, start, end).items():
        scores.setdefault(key[0], []).append((key, by_name))
    counts: dict[int, Counter] = {}
    for name, workload_id in overlapping(workload_ids, start, end).values_list("name", "workload_id"):
        counts.setdefault(workload_id, Counter())[name] += 1
    found = {}
    for workload_id, names in counts.items():
        primary = min(names, key=lambda name: (-names[name], name))
        parts = [(key, by_name[primary]) for key, by_name in scores.get(workload_id, ()) if primary in by_name]
        weights = [(requests or {}).get(key, 0) for key, _ in parts]
        if not any(weights):
            weights = [1] * len(parts)
        total = sum(weights)
        score = sum((q.score * weight for (_, q), weight in zip(parts, weights)), Decimal(0)) / total
        found[workload_id] = Quality(primary, score)
    return found


def eval_scores(*, user, workload=None, start: dt.date | None = None, end: dt.date | None = None):
    """The stored scores the user may see (finops.core.access), of one workload or all, whose period overlaps
    [start, end) (either bound optional): what `GET /api/v1/evals` lists."""
    rows = EvalScore.objects.select_related("workload", "provider").filter(workload__in=access.visible_workloads(user))
    if workload is not None:
        rows = rows.filter(workload=workload)
    if start is not None:
        rows = rows.filter(period_end__gt=start)
    if end is not None:
        rows = rows.filter(period_start__lt=end)
    return rows.order_by("workload__slug", "name", "period_start", "period_end", "provider__slug", "model")
