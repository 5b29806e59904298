"""The monthly TCO report at scale (issue 14): on the page bench's organisation (10M lines over a year, 50 teams,
400 workloads), the report of the last full month as an admin. Figures go to bench-results/report.json.
Targets: the page (selector + render) ≤ 1 s, the PDF ≤ 10 s.

What is timed, WARMUPS then REPEATS times each (p50/p95, nearest rank; the PDF fewer times, it is slow by nature):
- `selector`: finops.reports.selectors.tco_report.tco_report alone, and each of its parts once, so a slow section shows;
- `charts`: the section charts drawn from the rows (finops.reports.tco_charts), their per-process cache emptied
  before every run, so this is a first view's cost;
- `page`: GET /reports/<month>/ through the test Client (middleware, selector, charts drawn afresh, template);
- `pdf`, `csv`, `xlsx`: the selector and the file, as GET /reports/<month>/report.<kind> computes it;
- `control`: a plain `SELECT count(*)` of the month's DailySpend rows in the same run, so a slow machine shows as
  a slow control rather than as a slow report.
Without the page bench's lines first (or with --lines differing), it generates them (pages.generate).
"""

import cProfile
import datetime as dt
import io
import json
import pstats
import time

from django.db import connection
from django.test import Client

from bench.served import served_in_process
from finops.models import DailySpend, User
from finops.reports import tco_charts, tco_formats
from finops.reports.selectors import tco_report as selector
from finops.reports.tco_pdf import report_pdf

from . import pages, timing

TARGETS = {"page_p95_ms": 1000, "pdf_p95_ms": 10_000}
WARMUPS, REPEATS, PDF_REPEATS = 1, 7, 3


def _timed(run, repeats: int, warmups: int = WARMUPS, before=lambda: None) -> dict:
    """Wall time (what a user waits) and this process's CPU time (what the code costs: on a machine other jobs
    share, the wall time grows with the load and the CPU time barely moves; Postgres's own time is not in it)."""
    times, cpu = [], []
    for n in range(warmups + repeats):
        before()
        started, cpu_started = time.perf_counter(), time.process_time()
        run()
        if n >= warmups:
            times.append((time.perf_counter() - started) * 1000)
            cpu.append((time.process_time() - cpu_started) * 1000)
    return {
        "p50_ms": round(timing.percentile(times, 0.5), 1),
        "p95_ms": round(timing.percentile(times, 0.95), 1),
        "mean_ms": round(sum(times) / len(times), 1),
        "max_ms": round(max(times), 1),
        "runs": len(times),
        "cpu_p50_ms": round(timing.percentile(cpu, 0.5), 1),
        "cpu_p95_ms": round(timing.percentile(cpu, 0.95), 1),
    }


def _control(month: dt.date) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM finops_dailyspend WHERE day >= %s AND day < %s", [month, selector.next_month(month)]
        )
        cursor.fetchone()


def sections_profile(user, month: dt.date, today: dt.date, *, top: int = 12) -> list[dict]:
    """The selector's slowest functions (cumulative), to say which section costs what."""
    profile = cProfile.Profile()
    profile.enable()
    selector.tco_report(user, month, today=today)
    profile.disable()
    stats = pstats.Stats(profile)
    found = []
    for (path, _line, name), (_, _, _, cumulative, _) in stats.stats.items():
        if "/finops/" in path and "/bench/" not in path:
            found.append(
                {"function": f"{path.split('/finops/', 1)[1]}:{name}", "cumulative_ms": round(cumulative * 1000, 1)}
            )
    return sorted(found, key=lambda f: -f["cumulative_ms"])[:top]


@served_in_process()
def measure(*, repeats: int = REPEATS, pdf_repeats: int = PDF_REPEATS, echo=print) -> dict:
    today = pages.today()
    month = selector.last_full_month(today)
    admin = pages._user("admin", User.Role.ADMIN)
    client = Client()
    client.force_login(admin)
    key = f"{month:%Y-%m}"
    fresh = tco_charts._drawn_once.cache_clear

    def get(url: str) -> bytes:
        response = client.get(url)
        if response.status_code != 200:
            raise SystemExit(f"bench_report: {url} answered {response.status_code}")
        return response.content

    report = selector.tco_report(admin, month, today=today)
    results = {
        "month": key,
        "as": "admin",
        "repeats": repeats,
        "pdf_repeats": pdf_repeats,
        "warmups": WARMUPS,
        "rows": {name: len(rows) for name, rows in report.tables.items()},
    }
    results["selector"] = _timed(lambda: selector.tco_report(admin, month, today=today), repeats)
    results["charts"] = _timed(lambda: tco_charts.section_charts(report), repeats, before=fresh)
    results["page"] = _timed(lambda: get(f"/reports/{key}/"), repeats, before=fresh)
    results["page_charts_cached"] = _timed(lambda: get(f"/reports/{key}/"), repeats)
    results["pdf"] = _timed(lambda: get(f"/reports/{key}/report.pdf"), pdf_repeats, before=fresh)
    results["pdf_render_only"] = _timed(lambda: report_pdf(report), pdf_repeats, before=fresh)
    results["csv"] = _timed(lambda: get(f"/reports/{key}/report.csv"), repeats)
    results["xlsx"] = _timed(lambda: get(f"/reports/{key}/report.xlsx"), repeats)
    results["control_count_daily_rows"] = _timed(lambda: _control(month), repeats)
    results["pdf_bytes"] = len(report_pdf(report))
    stream = io.StringIO()
    tco_formats.write_csv(report, stream)
    results["csv_bytes"] = len(stream.getvalue().encode())
    results["slowest_in_selector"] = sections_profile(admin, month, today)
    results["meets_targets"] = {
        "page": results["page"]["p95_ms"] <= TARGETS["page_p95_ms"],
        "pdf": results["pdf"]["p95_ms"] <= TARGETS["pdf_p95_ms"],
    }
    for name in ("selector", "charts", "page", "page_charts_cached", "pdf", "csv", "xlsx", "control_count_daily_rows"):
        echo(
            f"  {name:<26} p50 {results[name]['p50_ms']:>8.1f} ms  p95 {results[name]['p95_ms']:>8.1f} ms  "
            f"(CPU of this process p50 {results[name]['cpu_p50_ms']:>7.1f} ms)"
        )
    return results


def run_bench(*, lines: int, out, reuse: bool = True, repeats: int = REPEATS, echo=print) -> dict:
    from bench.machine import machine_facts

    results = {  # the command has checked pages.guard(): this database is the bench's own
        "benchmark": "the monthly TCO report of the last full month on a year of generated usage lines, as an admin "
        "(Postgres): the page, the PDF, the CSV and the XLSX",
        "measured_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "targets": TARGETS,
        "machine": machine_facts(),
        "loadavg_before": timing.loadavg(),
    }
    results["generation"] = pages.lines_ready(lines, reuse=reuse, echo=echo)
    results["month_daily_rows"] = DailySpend.objects.filter(
        day__gte=selector.last_full_month(pages.today()),
        day__lt=selector.next_month(selector.last_full_month(pages.today())),
    ).count()
    echo(f"report ({repeats} timed runs each after {WARMUPS} warm-up; the PDF {PDF_REPEATS}):")
    results["report"] = measure(repeats=repeats, echo=echo)
    results["loadavg_after"] = timing.loadavg()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2, default=str) + "\n")
    echo(f"figures written to {out}")
    return results
