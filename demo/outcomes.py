"""The demo's business outcomes (issue 12): daily counts for the workloads that declare an outcome unit.

Each count follows its workload's traffic: the day's priced spend (from the daily rollup, just built by the usage
imports) over the workload's cost per outcome, times a weekday pattern (fewer outcomes per dollar at weekends, when
harder cases wait in the queue) and a little seeded noise. The same `today` gives the same counts, so loading the
demo again changes nothing (a row per workload × day × source is replaced, never added).

One story: the support agent's cost per ticket resolved rises from about $0.45 to about $0.62 in the last complete
month (a model change that resolved fewer tickets), over its $0.50 target (config.yaml), so the demo has an
`outcome_cost` alert; this month it is back near $0.46.

Rows go in through the posting service (finops.performance.services.outcomes.outcomes_record), as every other source's
do.
"""

import datetime as dt
import hashlib
from decimal import Decimal

from django.db.models import Sum

from finops.core.months import month_of
from finops.models import DailySpend, OutcomeCount, Workload
from finops.performance.services.outcomes import outcomes_record

from .generate import window

SOURCE = "demo"
# slug → the cost of one outcome the workload's spend buys (reporting currency)
UNIT_COST = {
    "support-agent": Decimal("0.45"),
    "code-review-bot": Decimal("1.20"),
    "lead-scoring": Decimal("0.30"),
    "document-extraction": Decimal("0.80"),
    "answer-engine": Decimal("0.35"),
    "sql-copilot": Decimal("1.60"),
}
OVER_TARGET_WORKLOAD = "support-agent"
OVER_TARGET_UNIT_COST = Decimal("0.62")  # its last complete month; its target is $0.50 (config.yaml)
WEEKDAY_FACTOR = (1.04, 1.06, 1.06, 1.04, 1.0, 0.85, 0.8)  # Monday first: outcomes per dollar


def _noise(slug: str, day: dt.date) -> float:
    """A deterministic ±8 % from the workload and day (no global random state)."""
    digest = hashlib.sha256(f"{slug}:{day.isoformat()}".encode()).digest()
    return 0.92 + (int.from_bytes(digest[:4], "big") / 2**32) * 0.16


def unit_cost(slug: str, day: dt.date, today: dt.date) -> Decimal:
    last_complete = month_of(month_of(today) - dt.timedelta(days=1))
    if slug == OVER_TARGET_WORKLOAD and month_of(day) == last_complete:
        return OVER_TARGET_UNIT_COST
    return UNIT_COST[slug]


def outcome_rows(today: dt.date) -> list[OutcomeCount]:
    first, last = window(today)
    workloads = dict(Workload.objects.filter(slug__in=UNIT_COST).exclude(outcome_unit="").values_list("slug", "id"))
    spend = (
        DailySpend.objects.filter(workload_id__in=workloads.values(), day__gte=first, day__lte=last)
        .values("workload_id", "day")
        .annotate(cost=Sum("reporting_cost"))
        .order_by("workload_id", "day")
    )
    slugs = {id_: slug for slug, id_ in workloads.items()}
    rows = []
    for row in spend:
        slug, day = slugs[row["workload_id"]], row["day"]
        if not row["cost"] or row["cost"] <= 0:
            continue
        count = round(
            float(row["cost"] / unit_cost(slug, day, today)) * WEEKDAY_FACTOR[day.weekday()] * _noise(slug, day)
        )
        if count > 0:
            rows.append(OutcomeCount(workload_id=row["workload_id"], day=day, source=SOURCE, count=count))
    return rows


def outcomes_load(*, today: dt.date) -> dict:
    """Write the demo's outcome counts (replacing those of an earlier load); how many rows and outcomes per workload."""
    rows = outcome_rows(today)
    slugs = dict(Workload.objects.filter(id__in={r.workload_id for r in rows}).values_list("id", "slug"))
    # Through the posting service, as the API, the CSV upload and `import_outcomes` do (a second load replaces
    # nothing: every count is unchanged).
    outcomes_record(
        by=None,
        rows=[
            {"workload": slugs[r.workload_id], "day": r.day.isoformat(), "count": r.count, "source": r.source}
            for r in rows
        ],
    )
    totals: dict[str, int] = {}
    names = {w.id: w.slug for w in Workload.objects.filter(id__in={r.workload_id for r in rows})}
    for row in rows:
        totals[names[row.workload_id]] = totals.get(names[row.workload_id], 0) + row.count
    return {"rows": len(rows), "outcomes": dict(sorted(totals.items()))}
