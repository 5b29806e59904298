"""Spend spikes: a day far above a workload's recent baseline (issue 10). Read from the daily rollup.

**The method** (robust statistics, so one earlier spike does not hide the next one nor make a normal day look odd):

- the *series* is a workload's priced daily spend (reporting currency, every account) over the BASELINE_DAYS (28)
  complete days before the day judged; a day without spend counts as $0. Unattributed spend is one more series
  (`workload:none`). Unpriced usage has no cost and is not part of it (it has its own alert);
- with spend on fewer than MIN_DAYS_WITH_SPEND (14) of those days there is **no verdict** (a new workload has no
  baseline yet);
- *baseline* = the **median** of the series; *spread* = the **MAD** (median absolute deviation from the median)
  × 1.4826 (so it estimates a standard deviation for normal noise), never below SPREAD_FLOOR (10 %) of the median
  (a perfectly flat series has a MAD of 0: without the floor a cent above it would be a spike);
- the day is a **spike** when all three hold:
  1. cost > median + K·spread, K = 4 (far outside the usual noise);
  2. cost − median ≥ the minimum change, `settings.FINOPS_SPIKE_MIN_USD` ($50 by default; it is in the reporting
     currency, whatever its name) — a $3/day workload going to $9 is not worth an email;
  3. cost ≥ 2 × median (RATIO_MIN) — a slow ramp, each day a little above the last, never doubles its own median
     in a day and is not a spike; a forecast against a cap catches where a ramp is heading.

A spike that goes on is one episode: a day is not raised again when the day before it was a spike too (each
judged against its own window), so a workload that steps up for good alerts on the first day, not on each of the
next fortnight's days until its median catches up; it alerts again once it has had an ordinary day.

`spike_verdict` is the pure method on a series; `spikes_find` reads every workload's daily spend over the days
judged and their 28-day windows in ONE grouped query and judges each (workload, day) in Python.
"""

import datetime as dt
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal

from django.conf import settings
from django.db.models import Q, Sum

from finops.models import DailySpend

BASELINE_DAYS = 28
MIN_DAYS_WITH_SPEND = 14
K = Decimal(4)
MAD_SCALE = Decimal("1.4826")
SPREAD_FLOOR = Decimal("0.10")
RATIO_MIN = Decimal(2)
DEFAULT_MIN_CHANGE = Decimal(50)
ZERO = Decimal(0)
METHOD = (
    f"median of the previous {BASELINE_DAYS} days; spike when cost > median + {K} × spread "
    f"(MAD × {MAD_SCALE}, at least {SPREAD_FLOOR:.0%} of the median), cost − median ≥ the minimum change "
    f"and cost ≥ {RATIO_MIN} × median"
)


def min_change() -> Decimal:
    return Decimal(str(getattr(settings, "FINOPS_SPIKE_MIN_USD", DEFAULT_MIN_CHANGE)))


@dataclass(frozen=True)
class SpikeVerdict:
    cost: Decimal
    baseline_median: Decimal
    spread: Decimal
    threshold: Decimal  # median + K × spread
    min_change: Decimal
    days_with_spend: int
    is_spike: bool

    @property
    def ratio(self) -> Decimal | None:
        return self.cost / self.baseline_median if self.baseline_median else None


def spike_verdict(history: Sequence[Decimal], cost: Decimal, *, minimum: Decimal | None = None) -> SpikeVerdict | None:
    """Judge `cost` against `history` (the BASELINE_DAYS daily costs before it, $0 for days without spend);
    None when there is no verdict (spend on fewer than MIN_DAYS_WITH_SPEND days)."""
    minimum = min_change() if minimum is None else minimum
    history = [value or ZERO for value in history]
    days_with_spend = sum(1 for value in history if value > 0)
    if days_with_spend < MIN_DAYS_WITH_SPEND:
        return None
    median = statistics.median(history)
    mad = statistics.median(abs(value - median) for value in history)
    spread = max(mad * MAD_SCALE, median * SPREAD_FLOOR)
    threshold = median + K * spread
    is_spike = cost > threshold and cost - median >= minimum and cost >= RATIO_MIN * median
    return SpikeVerdict(
        cost=cost,
        baseline_median=median,
        spread=spread,
        threshold=threshold,
        min_change=minimum,
        days_with_spend=days_with_spend,
        is_spike=is_spike,
    )


@dataclass(frozen=True)
class Spike:
    workload_id: int | None  # None: the unattributed group
    day: dt.date
    verdict: SpikeVerdict


def spikes_find(days: Iterable[dt.date], *, workload_ids: Iterable[int] | None = None) -> list[Spike]:
    """The spikes starting on `days` (the first day of each episode) of the given workloads (None: all) and of the
    unattributed group, by day. One grouped read of the rollup covers every day judged and its baseline window."""
    days = sorted(set(days))
    if not days:
        return []
    # Each day's window, and the day before's (is it the same episode?)
    rows = DailySpend.objects.filter(day__gte=days[0] - dt.timedelta(days=BASELINE_DAYS + 1), day__lte=days[-1])
    if workload_ids is not None:
        rows = rows.filter(Q(workload_id__in=list(workload_ids)) | Q(workload__isnull=True))
    series: dict[int | None, dict[dt.date, Decimal]] = defaultdict(dict)
    for row in rows.values("workload_id", "day").annotate(cost=Sum("reporting_cost")).order_by():
        series[row["workload_id"]][row["day"]] = row["cost"] or ZERO
    minimum = min_change()
    found = []
    for day in days:
        for workload_id, costs in series.items():
            verdict = _judge(costs, day, minimum)
            if verdict is None or not verdict.is_spike:
                continue
            before = _judge(costs, day - dt.timedelta(days=1), minimum)
            if before is None or not before.is_spike:  # else the same episode goes on
                found.append(Spike(workload_id=workload_id, day=day, verdict=verdict))
    return found


def _judge(costs: dict[dt.date, Decimal], day: dt.date, minimum: Decimal) -> SpikeVerdict | None:
    cost = costs.get(day)
    if not cost:
        return None
    window = [day - dt.timedelta(days=n) for n in range(BASELINE_DAYS, 0, -1)]
    return spike_verdict([costs.get(d, ZERO) for d in window], cost, minimum=minimum)
