"""The quarterly scorecard at scale (issue 12): on the page bench's organisation (10M lines, latency on every
gateway line), the scorecard of the last complete quarter, as an admin (every workload) and as the lead of the
busiest team. Figures go to bench-results/scorecard.json. Target: ≤ 200 ms (issue 23; 300 ms before).

What is timed, WARMUPS then REPEATS times each (p50/p95, nearest rank):
- `scorecard`: the selector (finops.performance.selectors.scorecard: one read per source, for the quarter and
  the previous one) plus the table — the rows sorted and every cell rendered from the spec, as the page renders them;
- `page`: the whole page through the test Client (middleware, selector, table, template), cold: the data version
  moved before each request, as by a write, so the page cache computes it; `page_warm`: the same, served from the
  page cache (finops/web/page_cache.py);
- `control`: a plain `SELECT count(*)` of the quarter's DailySpend rows, in the same run, so a slow machine shows
  as a slow control rather than as a slow scorecard.

All of it in a process settled as a web process is (finops/web/startup.py `settle`, as bench_pages does).

Setup, each timed and recorded: the performance rollup rebuilt over the year (performance_rollup_rebuild, the
gateway lines' distributions merged by day and by month); outcome counts for the agent workloads (every day)
and eval scores for the gateway workloads (the scorecard's other sources), replaced on every run.
Without the page bench's lines first (or with --lines differing), it generates them (pages.generate).
"""

import datetime as dt
import json
import random
import time
from decimal import Decimal

from django.db import connection
from django.db.models import Sum
from django.test import Client

from bench.served import served_in_process
from finops.models import Account, DailyPerformance, DailySpend, EvalScore, OutcomeCount, User, Workload
from finops.performance.selectors import scorecard as selectors
from finops.performance.services.performance_rollup import performance_rollup_rebuild
from finops.performance.tables.scorecard import SCORECARD
from finops.templatetags.finops_format import data_table
from finops.web import data_version
from finops.web.startup import settle

from . import lines as bench_lines
from . import pages, timing
from .org import GATEWAY_ACCOUNTS

TARGET_MS = 200
WARMUPS, REPEATS = 2, 20
EVAL_NAME = "bench-answer-quality"


def last_full_quarter(today: dt.date) -> selectors.Quarter:
    current = selectors.quarter(None, today=today)
    return selectors.quarter(selectors.quarter_key(current.start - dt.timedelta(days=1)), today=today)


def rebuild_performance(*, echo=print) -> dict:
    """The performance rollup over the year of lines, from scratch (what rollup_rebuild does for a backfill)."""
    first = DailySpend.objects.order_by("day").values_list("day", flat=True).first()
    if first is None:
        return {"seconds": 0.0, "days": 0}
    days = {first + dt.timedelta(days=n) for n in range((pages.today() - first).days + 1)}
    started = time.perf_counter()
    gateways = list(Account.objects.filter(name__in=GATEWAY_ACCOUNTS).values_list("id", flat=True))
    performance_rollup_rebuild(days=days, account_ids=gateways)
    seconds = time.perf_counter() - started
    for table in ("finops_signaturedailyperformance", "finops_dailyperformance", "finops_monthlyperformance"):
        bench_lines.analyze(table)
    rows = DailyPerformance.objects.count()
    requests = DailyPerformance.objects.aggregate(n=Sum("requests"))["n"] or 0
    echo(f"performance rollup over {len(days)} days: {seconds:.1f} s ({rows:,} daily rows, {requests:,} requests)")
    return {"seconds": round(seconds, 1), "days": len(days), "daily_rows": rows, "requests": requests}


def business_facts(*, seed: int = 5) -> dict:
    """Outcome counts (every day of the year, for the agent workloads) and eval scores (each quarter, for the gateway
    workloads' models): the scorecard's other two sources, at a realistic size. Replaces the bench's earlier ones."""
    rng = random.Random(seed)
    workloads = list(Workload.objects.order_by("id"))
    OutcomeCount.objects.filter(source="bench").delete()
    EvalScore.objects.filter(name=EVAL_NAME).delete()
    first = DailySpend.objects.order_by("day").values_list("day", flat=True).first() or pages.today()
    days = [first + dt.timedelta(days=n) for n in range((pages.today() - first).days)]
    agents = [w for w in workloads if w.slug.endswith("-agent")]
    Workload.objects.filter(id__in=[w.id for w in agents]).update(outcome_unit="ticket resolved")
    OutcomeCount.objects.bulk_create(
        [OutcomeCount(workload=w, day=day, count=rng.randint(50, 800), source="bench") for w in agents for day in days],
        batch_size=5000,
    )
    served = (
        DailyPerformance.objects.filter(workload__isnull=False)
        .values_list("workload_id", "provider_id", "model")
        .distinct()
        .order_by()
    )
    quarters = sorted({selectors.quarter_key(day) for day in days})
    scores = []
    for workload_id, provider_id, model in served:
        for key in quarters:
            q = selectors.quarter(key, today=pages.today())
            scores.append(
                EvalScore(
                    workload_id=workload_id,
                    provider_id=provider_id,
                    model=model,
                    name=EVAL_NAME,
                    period_start=q.start,
                    period_end=q.end,
                    score=Decimal(rng.randint(700, 980)) / 1000,
                )
            )
    EvalScore.objects.bulk_create(scores, batch_size=5000)
    return {"outcome_rows": len(agents) * len(days), "outcome_workloads": len(agents), "eval_scores": len(scores)}


def _timed_runs(run, repeats: int, warmups: int = WARMUPS) -> dict:
    times = []
    for n in range(warmups + repeats):
        started = time.perf_counter()
        run()
        if n >= warmups:
            times.append((time.perf_counter() - started) * 1000)
    return {
        "p50_ms": round(timing.percentile(times, 0.5), 1),
        "p95_ms": round(timing.percentile(times, 0.95), 1),
        "mean_ms": round(sum(times) / len(times), 1),
        "max_ms": round(max(times), 1),
    }


def scorecard_table(user, quarter: selectors.Quarter, today: dt.date) -> int:
    """The selector and the table as the page builds it: rows sorted, every cell rendered. Returns the row count."""
    card = selectors.scorecard(user, quarter, today=today)
    rows = selectors.sort_rows(card.rows, "cost", descending=True)
    data_table({}, SCORECARD, rows, sort={"key": "cost", "dir": "desc"})  # what {% data_table %} renders: every cell
    return len(rows)


def _control(quarter: selectors.Quarter) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM finops_dailyspend WHERE day >= %s AND day < %s", [quarter.start, quarter.end]
        )
        cursor.fetchone()


@served_in_process()
def measure(*, repeats: int = REPEATS, echo=print) -> dict:
    today = pages.today()
    quarter = last_full_quarter(today)
    urls, team = pages.page_urls()
    users = {"admin": pages._user("admin", User.Role.ADMIN), "team_lead": pages._user("lead", User.Role.MEMBER, team)}
    results = {"quarter": quarter.key, "lead_of": team.slug, "repeats": repeats, "warmups": WARMUPS, "by_user": {}}
    for who, user in users.items():
        rows = scorecard_table(user, quarter, today)
        probe = timing.QueryClock()
        with connection.execute_wrapper(probe):
            scorecard_table(user, quarter, today)
        client = Client()
        client.force_login(user)
        url = f"/scorecard/?quarter={quarter.key}"

        def page(client=client, url=url, who=who, cold=True):
            if cold:  # as after a write: the page cache (finops/web/page_cache.py) computes the page again
                data_version.bump()
            response = client.get(url)
            if response.status_code != 200:
                raise SystemExit(f"bench_scorecard: {url} as {who} answered {response.status_code}")

        entry = {
            "rows": rows,
            "queries": probe.queries,
            "scorecard": _timed_runs(lambda user=user: scorecard_table(user, quarter, today), repeats),
            "page": _timed_runs(page, repeats),
            "page_warm": _timed_runs(lambda page=page: page(cold=False), repeats),
            "control_count_daily_rows": _timed_runs(lambda: _control(quarter), repeats),
        }
        entry["meets_target"] = entry["scorecard"]["p95_ms"] <= TARGET_MS and entry["page"]["p95_ms"] <= TARGET_MS
        results["by_user"][who] = entry
        echo(
            f"  scorecard {quarter.key} as {who:<9} {rows:>4} workloads  selector+table p50 "
            f"{entry['scorecard']['p50_ms']:>7.1f} ms "
            f"p95 {entry['scorecard']['p95_ms']:>7.1f} ms · page p95 {entry['page']['p95_ms']:>7.1f} ms "
            f"(warm, from the page cache: p95 {entry['page_warm']['p95_ms']:.1f} ms) · "
            f"control p95 {entry['control_count_daily_rows']['p95_ms']:.1f} ms ({probe.queries} queries)"
        )
    return results


def run_bench(*, lines: int, out, reuse: bool = True, repeats: int = REPEATS, rebuild: bool = True, echo=print) -> dict:
    from bench.machine import machine_facts

    results = {  # the command has checked pages.guard(): this database is the bench's own
        "benchmark": "the quarterly scorecard of the last complete quarter on a year of generated usage lines, latency "
        "on every gateway line (Postgres)",
        "measured_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "targets": {"scorecard_p95_ms": TARGET_MS},
        "machine": machine_facts(),
        "loadavg_before": timing.loadavg(),
    }
    timed = lambda: Account.objects.filter(name__in=GATEWAY_ACCOUNTS).exists()  # noqa: E731 (lines with latency)
    results["generation"] = pages.lines_ready(lines, reuse=reuse, echo=echo, also=timed)
    if results["generation"].get("reused"):
        if rebuild:
            results["performance_rollup"] = rebuild_performance(echo=echo)
    else:
        results["performance_rollup"] = {
            "seconds": results["generation"]["performance_rollup_s"],
            "days": 365,
            "daily_rows": DailyPerformance.objects.count(),
            "built_by": "rollup_rebuild",
        }
        echo(
            f"generated in {results['generation']['total_s']} s (performance rollup "
            f"{results['generation']['performance_rollup_s']} s)"
        )
    started = time.perf_counter()
    results["business_facts"] = business_facts()
    results["business_facts"]["seconds"] = round(time.perf_counter() - started, 1)
    results["measured_requests"] = DailyPerformance.objects.aggregate(n=Sum("requests"))["n"] or 0
    echo(f"scorecard ({repeats} timed runs each after {WARMUPS} warm-ups):")
    # Settled as a web process is at start-up (finops/wsgi.py, as bench_pages does): what is alive now — the year's
    # rebuild and the bench's own objects among it — frozen, so that the full collections a scorecard sets off walk
    # what a server's would, not the bench's heap.
    results["gc_frozen"] = settle()
    results["scorecard"] = measure(repeats=repeats, echo=echo)
    results["loadavg_after"] = timing.loadavg()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2, default=str) + "\n")
    echo(f"figures written to {out}")
    return results
