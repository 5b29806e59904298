"""Where a cold page's time goes: `bench_pages --reuse --profile PAGE` (a page of bench.pages.page_urls, e.g.
"overview" or "teams, 6 months"). The process is settled as bench_pages settles it, the page requested cold
(the data version moved before each request, so the page cache computes it) a few times unmeasured, then N times
timed without the profiler (wall ms, and CPU ms of this process and of its Postgres backend per request: on a
shared machine the CPU is what a change saves), then N times under cProfile, whose slowest functions (cumulative)
are printed. Nothing is written to the bench's JSON."""

import cProfile
import io
import os
import pstats
import time

from django.db import connection
from django.test import Client

from bench.served import served_in_process
from finops.models import User
from finops.web import data_version
from finops.web.startup import settle

from . import pages, timing

WARMUPS = 3


def _cpu() -> tuple[float, float]:
    """CPU seconds of this process and of its Postgres backend so far (timing.cpu_seconds unrounded)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return time.process_time(), (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@served_in_process()
def profile_page(page: str, *, who: str = "admin", requests: int = 30, top: int = 60, echo=print) -> dict:
    urls, team = pages.page_urls()
    if page not in urls:
        raise SystemExit(f"bench_pages --profile: no page {page!r}; one of {', '.join(urls)}")
    user = pages._user("admin", User.Role.ADMIN) if who == "admin" else pages._user("lead", User.Role.MEMBER, team)
    client = Client()
    client.force_login(user)

    def cold():
        data_version.bump()
        response = client.get(urls[page])
        if response.status_code != 200:
            raise SystemExit(f"bench_pages --profile: {urls[page]} answered {response.status_code}")

    for _ in range(WARMUPS):
        cold()
    settle()
    times = []
    python, backend = _cpu()
    for _ in range(requests):
        started = time.perf_counter()
        cold()
        times.append((time.perf_counter() - started) * 1000)
    python_after, backend_after = _cpu()
    figures = {
        "page": page,
        "who": who,
        "p50_ms": round(timing.percentile(times, 0.5), 1),
        "p95_ms": round(timing.percentile(times, 0.95), 1),
        "python_cpu_ms": round((python_after - python) * 1000 / requests, 1),
        "postgres_cpu_ms": round((backend_after - backend) * 1000 / requests, 1),
        "load": timing.loadavg(),
    }
    echo(
        f"{page} as {who}, {requests} cold requests: p50 {figures['p50_ms']} ms, p95 {figures['p95_ms']} ms; CPU a "
        f"request: Python {figures['python_cpu_ms']} ms, Postgres {figures['postgres_cpu_ms']} ms; load "
        f"{figures['load']}"
    )
    profile = cProfile.Profile()
    for _ in range(requests):
        profile.enable()
        cold()
        profile.disable()
    out = io.StringIO()
    stats = pstats.Stats(profile, stream=out)
    stats.sort_stats("cumulative").print_stats(top)
    echo(f"cProfile of {requests} more cold requests (cumulative; divide by {requests} for a request):")
    echo(out.getvalue())
    return figures
