"""Measured performance per workload × provider × model over a period, as `GET /api/v1/metrics` answers it
(issue 12): the merged Performance of the rollup (gateway-log timings and reported metrics alike, via
finops.performance.selectors.performance.performance_by) read into figures. Scoped by finops.core.access: a member
reads their teams' workloads; admins and finance every workload, and the unattributed requests (workload null) too.
"""

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal

from finops.core import access
from finops.models import Provider, Workload
from finops.performance.measures import Performance

from .performance import is_batch, latency_verdict, performance_by

QUANTILES = {"p50": 0.5, "p95": 0.95, "p99": 0.99}


@dataclass(frozen=True)
class PerformanceFigures:
    workload: Workload | None
    provider: str
    model: str
    performance: Performance

    def latency_ms(self) -> dict[str, float | None]:
        return {name: self.performance.p_ms(q) for name, q in QUANTILES.items()}

    def ttft_ms(self) -> dict[str, float | None]:
        return {name: self.performance.ttft_p_ms(q) for name, q in QUANTILES.items()}

    @property
    def output_tokens_per_s(self) -> tuple[Decimal | None, str]:
        return self.performance.output_tokens_per_s

    @property
    def sla(self):
        """The latency SLA verdict of this provider and model (None for batch workloads, judged per workload on
        their window, and for unattributed requests)."""
        if self.workload is None or is_batch(self.workload):
            return None
        return latency_verdict(self.performance, self.workload.sla_seconds)


def performance_figures(
    *, user, start: dt.date, end: dt.date, workload: Workload | None = None
) -> list[PerformanceFigures]:
    """One entry per workload × provider × model with requests in [start, end), ordered by workload, provider and
    model (unattributed last)."""
    if workload is not None:
        ids = [workload.id]
    elif access.can_see_unattributed(user):
        ids = None  # every row, unattributed included
    else:
        ids = list(access.visible_workloads(user).values_list("id", flat=True))
    found = performance_by(ids, start, end)
    workloads = Workload.objects.select_related("team").in_bulk({w for w, _, _ in found if w is not None})
    providers = dict(Provider.objects.values_list("id", "slug"))
    figures = [
        PerformanceFigures(workloads.get(w), providers[p], model, performance)
        for (w, p, model), performance in found.items()
        if performance.all_requests
    ]
    return sorted(
        figures, key=lambda f: (f.workload is None, f.workload.slug if f.workload else "", f.provider, f.model)
    )
