"""Page server times on a year of generated usage, a re-attribution moving a fifth of the lines, and the
rollup-equals-raw check (docs/architecture.md invariant 7) before and after it. Figures go to bench-results/pages.json.

Server time is the time Django takes to produce the response, in process through the test Client (middleware,
selectors, SQL, charts and templates included; no network, no browser). Each page is requested WARMUPS times, then
REPEATS times timed, cold (the data version moved before each request, so the page cache computes it) and then warm
(served from the page cache; finops/web/page_cache.py), as an admin (sees everything) and as the lead of the busiest
team; p50 and p95 are nearest-rank percentiles of the timed requests. Before each round of pages the process is
settled as a web process is at start-up (finops/web/startup.py: views loaded, start-up objects frozen). The bench
owns its database (it empties the usage-line and rollup tables and the organisation in it), so it refuses any
database whose name does not end in "_bench" or "_bench<size>" (finops_bench10m).
"""

import datetime as dt
import random
import re
import time

from django.db import connection, transaction
from django.db.models import Sum
from django.test import Client
from django.utils import timezone

from bench.served import served_in_process
from finops.core.reporting_period import resolve
from finops.models import (
    Account,
    AttributionRule,
    AuditEntry,
    DailySpend,
    Membership,
    MonthlySpend,
    ReattributionJob,
    Team,
    User,
    Workload,
)
from finops.org.services.users import user_set_role
from finops.spend.services import attribution, monthly_rollup, rollups, team_rollup
from finops.spend.services.attribution import history_reattribute, signatures_attribute
from finops.spend.services.rollups import rollup_rebuild, rollups_vacuum
from finops.web.startup import settle

from . import lines as bench_lines
from . import timing
from .org import PREFIX, Scale, build_org

PAGE_TARGET_MS = 100  # issue 23 (150 before)
REATTRIBUTION_TARGET_S = 20  # issue 23 (60 before)
ROLLUP_TARGET_S = 60  # issue 23: the rollup of the whole year of lines
MOVE_SHARE = 0.20
WARMUPS, REPEATS = 2, 20
DB_NAME = re.compile(r"_bench[0-9a-z]*$")


def guard() -> None:
    name = str(connection.settings_dict["NAME"])
    if connection.vendor != "postgresql" or not DB_NAME.search(name):
        raise SystemExit(
            f"bench_pages: refusing database {name!r} ({connection.vendor}): it empties the usage lines and the "
            "organisation there; use a Postgres database of its own named *_bench or *_bench<size>"
        )


def reset() -> None:
    """An empty organisation: the bench's database holds nothing but the bench's data. Callers check guard()
    first (run_bench does; the generator's test runs in pytest's own test database)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "TRUNCATE finops_usageline, finops_dailyspend, finops_monthlyspend, finops_dailyperformance, "
            "finops_monthlyperformance, finops_signaturedailyperformance"
        )
    for model in (AuditEntry, ReattributionJob, AttributionRule, Membership):
        model.objects.all().delete()
    Workload.objects.all().delete()
    Team.objects.all().delete()
    Account.objects.filter(name__startswith=PREFIX).delete()
    User.objects.filter(username__startswith=PREFIX).delete()


def today() -> dt.date:
    return timezone.now().astimezone(dt.UTC).date()


def generate(lines: int, *, echo=print) -> dict:
    """A fresh organisation and `lines` usage lines over the 365 days before today, attributed, rolled up.
    Empties the database's organisation and usage first: only after guard(), or in a test database."""
    reset()
    scale = Scale.for_lines(lines)
    first_day = today() - dt.timedelta(days=scale.days)
    started = time.perf_counter()
    org = build_org(scale)
    figures = {"org_s": round(time.perf_counter() - started, 1)}
    echo(
        f"organisation: {len(org.teams)} teams, {len(org.workloads)} workloads, {len(org.accounts)} accounts, "
        f"{len({s.api_key_ref for s in org.series})} API keys, {len({s.model for s in org.series})} models, "
        f"{len(org.rules)} rules; writing {lines:,} lines …"
    )
    figures.update(bench_lines.load(org, first_day, echo=echo))
    rollup_started, rollup_cpu = time.perf_counter(), timing.cpu_seconds()
    phases = {"performance_rollup_s": 0.0}
    # The spend rollup builds the performance rollup (the gateway lines' latency) in the same call: timed apart.
    with timing.timed_calls(rollups, "performance_rollup_rebuild", phases, "performance_rollup_s"):
        rollup_rebuild(days={first_day + dt.timedelta(days=n) for n in range(scale.days)})
    for table in (
        "finops_dailyspend",
        "finops_monthlyspend",
        "finops_teamdailyspend",
        "finops_signaturedailyperformance",
        "finops_dailyperformance",
        "finops_monthlyperformance",
    ):
        bench_lines.analyze(table)
    figures["rollup_s"] = round(time.perf_counter() - rollup_started, 1)
    figures["rollup_cpu_s"] = timing.cpu_seconds(since=rollup_cpu)
    figures["performance_rollup_s"] = round(phases["performance_rollup_s"], 1)
    # The generator attributed each line as its rules say; the real service must find nothing to change.
    check_started = time.perf_counter()
    with transaction.atomic():
        changed = signatures_attribute()
    figures["attribution_check"] = {
        "lines_changed": changed.lines,
        "seconds": round(time.perf_counter() - check_started, 1),
    }
    if changed.lines:
        raise SystemExit(
            f"bench_pages: the attribution service moved {changed.lines:,} generated lines: generator and rules "
            f"disagree"
        )
    figures["total_s"] = round(time.perf_counter() - started, 1)
    figures["shape"] = shape()
    return figures


def shape() -> dict:
    """What the database holds: the counts the issue names, and how much is unattributed or unpriced."""
    lines = DailySpend.objects.aggregate(n=Sum("line_count"))["n"] or 0
    unattributed = DailySpend.objects.filter(workload__isnull=True).aggregate(n=Sum("line_count"))["n"] or 0
    unpriced = DailySpend.objects.filter(cost_basis="unpriced").aggregate(n=Sum("line_count"))["n"] or 0
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(DISTINCT api_key_ref), min(period_start), max(period_end) FROM finops_usageline")
        keys, first, last = cursor.fetchone()
    return {
        "lines": lines,
        "teams": Team.objects.count(),
        "workloads": Workload.objects.count(),
        "api_keys": keys,
        "models": DailySpend.objects.values("model").distinct().count(),
        "accounts": Account.objects.filter(name__startswith=PREFIX).count(),
        "providers": DailySpend.objects.values("provider").distinct().count(),
        "rules": AttributionRule.objects.count(),
        "first": first.isoformat() if first else None,
        "last": last.isoformat() if last else None,
        "rollup_rows": DailySpend.objects.count(),
        "monthly_rollup_rows": MonthlySpend.objects.count(),
        "unattributed_share": round(unattributed / lines, 4) if lines else None,
        "unpriced_share": round(unpriced / lines, 4) if lines else None,
    }


def rollup_equals_raw() -> dict:
    """Per UTC day: Σ reporting cost, Σ tokens and the line count of the rollup against the raw lines."""
    with connection.cursor() as cursor:
        cursor.execute("""
            WITH raw AS (
                SELECT (period_start AT TIME ZONE 'UTC')::date AS day, sum(reporting_cost) AS cost,
                       sum(input_tokens + cached_input_tokens + cache_write_tokens + output_tokens) AS tokens, count(*)
                       AS lines
                FROM finops_usageline GROUP BY 1),
            rollup AS (
                SELECT day, sum(reporting_cost) AS cost,
                       sum(input_tokens + cached_input_tokens + cache_write_tokens + output_tokens) AS tokens,
                       sum(line_count) AS lines
                FROM finops_dailyspend GROUP BY 1)
            SELECT count(*), count(*) FILTER (WHERE raw.cost IS DISTINCT FROM rollup.cost OR raw.tokens IS DISTINCT
            FROM rollup.tokens
                                              OR raw.lines IS DISTINCT FROM rollup.lines),
                   sum(raw.lines), sum(rollup.lines)
            FROM raw FULL JOIN rollup ON raw.day = rollup.day""")
        days, mismatched, raw_lines, rollup_lines = cursor.fetchone()
    monthly = monthly_equals_daily()
    by_team = team_daily_equals_daily()
    return {
        "days": days,
        "days_mismatched": mismatched,
        "raw_lines": int(raw_lines or 0),
        "rollup_lines": int(rollup_lines or 0),
        "monthly": monthly,
        "team_daily": by_team,
        "equal": mismatched == 0 and monthly["equal"] and by_team["equal"],
    }


def team_daily_equals_daily() -> dict:
    """TeamDailySpend (the overview's rollup) against DailySpend summed by its keys, as monthly_equals_daily does."""
    dims = "team_id, provider_id, cost_basis, charge_category"
    return _derived_equals_daily("finops_teamdailyspend", f"day, {dims}", f"day, {dims}", team_rollup.MEASURES)


def monthly_equals_daily() -> dict:
    """MonthlySpend against DailySpend summed by month, on every dimension and measure."""
    dims = ", ".join(monthly_rollup.DIMENSIONS)
    return _derived_equals_daily(
        "finops_monthlyspend", f"date_trunc('month', day)::date, {dims}", f"month, {dims}", monthly_rollup.MEASURES
    )


def _derived_equals_daily(table: str, daily_keys: str, keys: str, measures) -> dict:
    """A rollup derived from DailySpend against DailySpend summed by its keys: the groups in one and not in the
    other (EXCEPT ALL both ways; NULLs compare equal there)."""
    daily = (
        f"SELECT {daily_keys}, {', '.join(f'sum({m})' for m in measures)} FROM finops_dailyspend GROUP BY {daily_keys}"
    )
    derived = f"SELECT {keys}, {', '.join(measures)} FROM {table}"
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT (SELECT count(*) FROM ({daily} EXCEPT ALL {derived}) a), "
            f"(SELECT count(*) FROM ({derived} EXCEPT ALL {daily}) b), (SELECT count(*) FROM {table})"
        )
        missing, extra, rows = cursor.fetchone()
    return {"rows": rows, "missing": missing, "extra": extra, "equal": missing == 0 and extra == 0}


# --- pages ---


def _user(username: str, role: str, team: Team | None = None) -> User:
    user, _ = User.objects.get_or_create(
        username=f"{PREFIX}{username}", defaults={"email": f"{username}@bench.invalid"}
    )
    user_set_role(user=user, role=role)
    if team is not None:
        Membership.objects.get_or_create(user=user, team=team, defaults={"role": Membership.Role.LEAD})
    return user


def _busiest(field: str):
    """The team or workload with the most spend over the last 30 days: the heaviest page of its kind."""
    since = today() - dt.timedelta(days=30)
    row = (
        DailySpend.objects.filter(day__gte=since, **{f"{field}__isnull": False})
        .values(field)
        .annotate(cost=Sum("reporting_cost"))
        .order_by("-cost")
        .first()
    )
    return row[field]


def page_urls() -> tuple[dict, Team]:
    team = Team.objects.get(id=_busiest("team"))
    workload = Workload.objects.filter(team=team).get(id=_busiest_in(team))
    end = today()
    start = end - dt.timedelta(days=365)
    quarter = resolve("last-month", today=end).start  # the quarter holding last month: up to 92 days of daily rows
    return {
        "overview": "/",
        "overview, last month": "/?period=last-month",
        "team": f"/teams/{team.slug}/",
        "team, a quarter": f"/teams/{team.slug}/?period={quarter.year}-Q{(quarter.month - 1) // 3 + 1}",
        "workload": f"/workloads/{workload.slug}/",
        "teams, 6 months": (
            f"/teams/?period=custom&start={(end - dt.timedelta(days=183)).isoformat()}&end={end.isoformat()}"
        ),
        "explore": f"/explore/?start={start.isoformat()}&end={end.isoformat()}&group_by=team",
    }, team


def _busiest_in(team: Team) -> int:
    since = today() - dt.timedelta(days=30)
    return (
        DailySpend.objects.filter(day__gte=since, team=team, workload__isnull=False)
        .values("workload")
        .annotate(cost=Sum("reporting_cost"))
        .order_by("-cost")
        .first()["workload"]
    )


@served_in_process()
def measure_pages(*, repeats: int = REPEATS, warmups: int = WARMUPS, echo=print) -> dict:
    """Each page cold, then warm (issue 23's page cache, finops/web/page_cache.py). Cold: the data version is moved
    before every request, as by a write, so each timed request computes its page (the figures before the cache are
    these, with the cache's own cost in them). Warm: the same URL again and again, so every timed request after the
    first is served from the cache. With PAGE_CACHE_SECONDS=0 both are computed."""
    urls, team = page_urls()
    users = {"admin": _user("admin", User.Role.ADMIN), "team_lead": _user("lead", User.Role.MEMBER, team)}
    results = {"urls": urls, "lead_of": team.slug, "repeats": repeats, "warmups": warmups, "pages": {}}
    for who, user in users.items():
        client = Client()
        client.force_login(user)
        for page, url in urls.items():
            entry = _timed_page(client, url, who, repeats, warmups, cold=True)
            entry["warm"] = _timed_page(client, url, who, repeats, warmups, cold=False)
            entry["meets_target"] = entry["p95_ms"] <= PAGE_TARGET_MS
            results["pages"].setdefault(page, {})[who] = entry
            echo(
                f"  {page:<20} as {who:<9} cold p50 {entry['p50_ms']:>7.1f} ms  p95 {entry['p95_ms']:>7.1f} ms  "
                f"({entry['queries']} queries, {entry['sql_mean_ms']} ms in SQL) · warm p50 "
                f"{entry['warm']['p50_ms']:>6.1f} ms  p95 {entry['warm']['p95_ms']:>6.1f} ms ({entry['warm']['cache']})"
            )
    return results


def _timed_page(client: Client, url: str, who: str, repeats: int, warmups: int, *, cold: bool) -> dict:
    from finops.web import data_version
    from finops.web.page_cache import HEADER

    times, served = [], {}
    clock = timing.QueryClock()
    for n in range(warmups + repeats):
        if cold:
            data_version.bump()
        probe = timing.QueryClock()
        with connection.execute_wrapper(probe):
            started = time.perf_counter()
            response = client.get(url)
            elapsed = time.perf_counter() - started
        if response.status_code != 200:
            raise SystemExit(f"bench_pages: {url} as {who} answered {response.status_code}")
        if n >= warmups:
            times.append(elapsed * 1000)
            clock.queries, clock.seconds = probe.queries, clock.seconds + probe.seconds
            served[response.get(HEADER, "off")] = served.get(response.get(HEADER, "off"), 0) + 1
    return {
        "p50_ms": round(timing.percentile(times, 0.5), 1),
        "p95_ms": round(timing.percentile(times, 0.95), 1),
        "mean_ms": round(sum(times) / len(times), 1),
        "max_ms": round(max(times), 1),
        "queries": clock.queries,
        "sql_mean_ms": round(clock.seconds * 1000 / len(times), 1),
        "bytes": len(response.content),
        "cache": ", ".join(f"{k} {v}" for k, v in sorted(served.items())),
    }


# --- re-attribution ---


def move_rules(share: float = MOVE_SHARE, *, seed: int = 3) -> dict:
    """A reorganisation: the rules of workloads holding about `share` of the lines now point to a workload of
    another team. Picked from the rollup's line counts; the rules are repointed with a plain ORM update (the
    UI's rule service would also queue the background job; the bench calls the job's service itself)."""
    counts = dict(
        DailySpend.objects.filter(workload__isnull=False)
        .values_list("workload")
        .annotate(n=Sum("line_count"))
        .order_by()
    )
    total = DailySpend.objects.aggregate(n=Sum("line_count"))["n"]
    workloads = list(Workload.objects.order_by("id"))
    order = list(workloads)
    random.Random(seed).shuffle(order)
    picked, claimed = [], 0
    for workload in order:
        if claimed >= share * total:
            break
        picked.append(workload)
        claimed += counts.get(workload.id, 0)
    # The workload half the list away belongs to another team (8 workloads a team). The rules are collected
    # before any is repointed: repointed one workload after the other, a rule moved to a workload picked later
    # would move on again (or back).
    plan = [
        (
            list(AttributionRule.objects.filter(workload=w, priority__gte=100).values_list("id", flat=True)),
            workloads[(workloads.index(w) + len(workloads) // 2) % len(workloads)],
        )
        for w in picked
    ]
    moves = sum(AttributionRule.objects.filter(id__in=ids).update(workload=target) for ids, target in plan)
    return {
        "workloads": len(picked),
        "rules_changed": moves,
        "lines_expected": claimed,
        "share_expected": round(claimed / total, 4),
    }


def measure_reattribution(*, echo=print) -> dict:
    moved = move_rules()
    echo(
        f"re-attribution: {moved['rules_changed']} rules of {moved['workloads']} workloads repointed "
        f"(≈{moved['share_expected']:.1%} of lines) …"
    )
    # performance_s: the part of rollup_s that moves the gateway lines' latency (issue 12's performance rollup).
    phases = {"attribute_s": 0.0, "rollup_s": 0.0, "performance_s": 0.0, "commit_s": 0.0, "vacuum_s": 0.0}
    started, cpu = time.perf_counter(), timing.cpu_seconds()
    with (
        timing.timed_calls(attribution, "signatures_attribute", phases, "attribute_s"),
        timing.timed_calls(attribution, "_rollup_moved", phases, "rollup_s"),
        timing.timed_calls(rollups, "performance_rollup_rebuild", phases, "performance_s"),
        timing.timed_calls(connection, "commit", phases, "commit_s"),
    ):  # the commit runs the deferred foreign-key checks
        result = history_reattribute()
    vacuum_started = time.perf_counter()
    rollups_vacuum()  # what the job does after its commit (finops.spend.services.rules.reattribution_run)
    phases["vacuum_s"] = time.perf_counter() - vacuum_started
    seconds = time.perf_counter() - started
    used = timing.cpu_seconds(since=cpu)
    total = DailySpend.objects.aggregate(n=Sum("line_count"))["n"]
    figures = {
        "seconds": round(seconds, 1),
        "cpu_s": used,
        "lines_moved": result.lines,
        "share_moved": round(result.lines / total, 4),
        "days_rebuilt": len(result.days),
        "phases": {k: round(v, 3) for k, v in phases.items()},  # to the ms: a small run's rollups take ms
        "workloads_rebuilt": len(result.workloads),
        "rules": moved,
        "meets_target": seconds <= REATTRIBUTION_TARGET_S,
    }
    echo(
        f"  {result.lines:,} lines ({figures['share_moved']:.1%}) moved over {len(result.days)} days in {seconds:.1f} "
        f"s "
        f"({', '.join(f'{k[:-2]} {v} s' for k, v in figures['phases'].items())}); CPU {used}, load {timing.loadavg()}"
    )
    return figures


def lines_ready(lines: int, *, reuse: bool, echo=print, also=lambda: True) -> dict:
    """The organisation's lines: those already in the database when `reuse` and there are exactly `lines` of them
    (and `also()` holds), else a fresh generation. What every bench of this organisation starts with."""
    held = DailySpend.objects.aggregate(n=Sum("line_count"))["n"] or 0
    if reuse and held == lines and also():
        echo(f"reusing the {held:,} lines already in {connection.settings_dict['NAME']}")
        return {"reused": True, "shape": shape()}
    return generate(lines, echo=echo)


def run_bench(
    *, lines: int, out, reuse: bool = False, repeats: int = REPEATS, reattribute: bool = True, echo=print
) -> dict:
    import json

    from bench.machine import machine_facts

    guard()
    results = {
        "benchmark": "spend pages and re-attribution on a year of generated usage lines (Postgres)",
        "measured_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "targets": {
            "page_p95_ms": PAGE_TARGET_MS,
            "reattribution_s": REATTRIBUTION_TARGET_S,
            "rollup_s": ROLLUP_TARGET_S,
            "move_share": MOVE_SHARE,
        },
        "machine": machine_facts(),
        "loadavg_before": timing.loadavg(),
    }
    results["generation"] = lines_ready(lines, reuse=reuse, echo=echo)
    if not results["generation"].get("reused"):
        g = results["generation"]
        echo(
            f"generated in {g['total_s']} s: COPY {g['copy_s']} s ({g['lines_per_s']:,} lines/s), indexes "
            f"{g['indexes_s']} s, "
            f"vacuum {g['vacuum_analyze_s']} s, rollup {g['rollup_s']} s (performance {g['performance_rollup_s']} s; "
            f"CPU {g['rollup_cpu_s']}, load {timing.loadavg()}), "
            f"attribution check {g['attribution_check']['seconds']} s"
        )
    results["control"] = {"after_generation_s": timing.control_query()}
    results["rollup_equals_raw_before"] = rollup_equals_raw()
    echo(f"rollup equals raw: {results['rollup_equals_raw_before']}")
    echo(f"pages ({repeats} timed requests each after {WARMUPS} warm-ups):")
    # As a web process starts (finops/wsgi.py): the pages' code loaded and what is alive then (here the bench's own
    # objects too) frozen, so that the full collections a request sets off are as short as the server's.
    results["gc_frozen"] = settle()
    results["pages"] = measure_pages(repeats=repeats, echo=echo)
    if reattribute:
        results["reattribution"] = measure_reattribution(echo=echo)
        results["control"]["after_reattribution_s"] = timing.control_query()
        results["rollup_equals_raw_after"] = rollup_equals_raw()
        echo(f"rollup equals raw after re-attribution: {results['rollup_equals_raw_after']}")
        echo("pages after the re-attribution:")
        settle()
        results["pages_after_reattribution"] = measure_pages(repeats=repeats, echo=echo)
    results["loadavg_after"] = timing.loadavg()
    echo(f"control query (every line scanned and summed): {results['control']}")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2, default=str) + "\n")
    echo(f"figures written to {out}")
    return results
