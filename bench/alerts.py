"""Alert evaluation at scale: a cap on every team and every workload of the page bench's organisation (10M lines:
50 teams + 400 workloads = 450 caps), then one full evaluation (`alerts_evaluate()`, the beat's catch-up: all it
evaluates, caps and whatever else has joined it) and the evaluation after an import of one day on one account
(the "spend changed" signal an ingest run sends). Figures go to bench-results/alerts.json.

The first full evaluation raises the events of every threshold the caps' spend has crossed (an insert and the
event's figures each); later ones find them raised and insert nothing, which is what a running installation
does all day. Both are timed. Cap amounts are the scope's spend of the previous calendar month × a factor
between 0.6 and 1.6 (seeded), so some caps are breached, some warn, some are forecast to breach and some are ok.
The bench removes its caps (and their events) when it is done: the database is the page bench's.
"""

import datetime as dt
import random
import statistics
import time
from decimal import Decimal

from django.db.models import Sum

from finops.alerts import evaluate as evaluations
from finops.alerts.selectors.caps import cap_statuses
from finops.alerts.services.spend_changes import SpendChange
from finops.core.months import month_of
from finops.models import Account, AlertEvent, Cap, DailySpend, Team, Workload

from . import pages, timing

FULL_TARGET_S = 2.0
ONE_DAY_TARGET_S = 0.5
CAP_PREFIX = "bench-cap-"
REPEATS = 5


def caps_create(*, seed: int = 11) -> list[Cap]:
    """A monthly cap on every team and every workload, its amount the previous month's spend × 0.6–1.6."""
    caps_remove()
    today = pages.today()
    last_month_end = month_of(today)
    last_month_start = month_of(last_month_end - dt.timedelta(days=1))
    last_month = DailySpend.objects.filter(day__gte=last_month_start, day__lt=last_month_end)
    spend = {("team", t): c for t, c in last_month.values_list("team_id").annotate(Sum("reporting_cost")).order_by()}
    spend |= {
        ("workload", w): c for w, c in last_month.values_list("workload_id").annotate(Sum("reporting_cost")).order_by()
    }
    rng = random.Random(seed)
    caps = []
    scopes = [("team", team) for team in Team.objects.order_by("id")] + [
        ("workload", w) for w in Workload.objects.order_by("id")
    ]
    for scope, target in scopes:
        base = spend.get((scope, target.id)) or Decimal(100)
        amount = max(Decimal(1), (base * Decimal(rng.uniform(0.6, 1.6))).quantize(Decimal("0.01")))
        caps.append(
            Cap(
                name=f"{CAP_PREFIX}{scope}-{target.slug}",
                scope=scope,
                amount=amount,
                recipients=["role:team_leads"],
                **{scope: target},
            )
        )
    return Cap.objects.bulk_create(caps)


def caps_remove() -> int:
    """The bench's caps, and with them their events (cascade)."""
    return Cap.objects.filter(name__startswith=CAP_PREFIX).delete()[0]


def one_day_change() -> SpendChange:
    """What an import of yesterday's file on the busiest account signals."""
    yesterday = pages.today() - dt.timedelta(days=1)
    busiest = (
        DailySpend.objects.filter(day=yesterday)
        .values("account_id")
        .annotate(c=Sum("line_count"))
        .order_by("-c")
        .values_list("account_id", flat=True)
        .first()
    )
    account_id = busiest or Account.objects.order_by("id").values_list("id", flat=True).first()
    return SpendChange(days=(yesterday,), reason="ingest", account_ids=(account_id,))


def _timed(function) -> tuple[float, object]:
    started = time.perf_counter()
    result = function()
    return time.perf_counter() - started, result


def measure(*, repeats: int = REPEATS, echo=print) -> dict:
    """Create the caps, time the evaluations, remove the caps and every event the evaluations raised (spikes,
    unpriced models and sources have no cap to cascade from)."""
    last_event = AlertEvent.objects.order_by("-id").values_list("id", flat=True).first() or 0
    caps = caps_create()
    try:
        statuses = {}
        for status in cap_statuses(
            list(Cap.objects.filter(name__startswith=CAP_PREFIX).select_related("team", "workload")),
            today=pages.today(),
        ):
            statuses[status.status] = statuses.get(status.status, 0) + 1
        echo(
            f"{len(caps)} caps ({sum(c.scope == 'team' for c in caps)} teams, "
            f"{sum(c.scope == 'workload' for c in caps)} "
            f"workloads): {statuses}"
        )
        first_s, raised = _timed(evaluations.alerts_evaluate)
        echo(f"first full evaluation: {first_s:.3f} s, {len(raised)} events raised")
        full = [_timed(evaluations.alerts_evaluate) for _ in range(repeats)]
        change = one_day_change()
        one_day = [_timed(lambda: evaluations.alerts_evaluate(change=change)) for _ in range(repeats)]
        figures = {
            "caps": len(caps),
            "cap_statuses": statuses,
            "events_raised_first": len(raised),
            "full_first_s": round(first_s, 3),
            "full_s": _summary([t for t, _ in full]),
            "full_events_raised": sum(len(r) for _, r in full),
            "one_day_change": {"days": [d.isoformat() for d in change.days], "account_ids": list(change.account_ids)},
            "one_day_s": _summary([t for t, _ in one_day]),
            "one_day_events_raised": sum(len(r) for _, r in one_day),
            "events": AlertEvent.objects.filter(cap__name__startswith=CAP_PREFIX).count(),
        }
        echo(
            f"full evaluation (nothing new): median {figures['full_s']['median']} s, max {figures['full_s']['max']} s "
            f"(target ≤ {FULL_TARGET_S} s)"
        )
        echo(
            f"after a one-day import: median {figures['one_day_s']['median']} s, max {figures['one_day_s']['max']} s "
            f"(target ≤ {ONE_DAY_TARGET_S} s)"
        )
        return figures
    finally:
        caps_remove()
        AlertEvent.objects.filter(id__gt=last_event).delete()


def _summary(seconds: list[float]) -> dict:
    return {"median": round(statistics.median(seconds), 3), "max": round(max(seconds), 3), "runs": len(seconds)}


def run_bench(*, lines: int, out, reuse: bool = False, repeats: int = REPEATS, echo=print) -> dict:
    """The bench, its figures written to `out`. Without reusable lines it generates the organisation, emptying the
    database's: callers check pages.guard() first (the bench_alerts command does)."""
    import json

    from bench.machine import machine_facts

    results = {
        "benchmark": "alert evaluation: a cap on every team and workload of the page bench's organisation (Postgres)",
        "measured_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "targets": {"full_s": FULL_TARGET_S, "one_day_s": ONE_DAY_TARGET_S},
        "machine": machine_facts(),
        "loadavg_before": timing.loadavg(),
    }
    results["generation"] = pages.lines_ready(lines, reuse=reuse, echo=echo)
    results["alerts"] = measure(repeats=repeats, echo=echo)
    a = results["alerts"]
    results["within_targets"] = a["full_s"]["max"] <= FULL_TARGET_S and a["one_day_s"]["max"] <= ONE_DAY_TARGET_S
    results["loadavg_after"] = timing.loadavg()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2, default=str) + "\n")
    echo(f"figures written to {out}")
    return results
