"""Throughput under concurrent sessions (issue 23): gunicorn as the compose file runs it, a mix of pages and API
calls, at 1, 8 and 32 concurrent sessions; figures to bench-results/load.json.

- Server: `gunicorn finops.wsgi:application --workers N` (docker-compose.yml's command; N = 4 by default, as issue
  23's targets are stated, the compose file runs 3), DEBUG off with WhiteNoise's compressed manifest (collectstatic
  first when STATIC_ROOT has no manifest, as the image's build does; delete staticfiles/ after changing static
  files), bound to 127.0.0.1 on a free port: loopback only, plain HTTP (so the secure-
  cookie and HTTPS-redirect settings are off for the bench server alone).
- Organisation: whatever the bench database holds (the page bench's, `make bench-pages`), else `lines` generated
  lines (a small organisation: 200,000 by default) through the page bench's generator.
- Sessions: each a thread with its own HTTP connection, signed in through the login page as the bench admin (pages)
  and holding a read API token (`/api/v1/spend`), requesting the MIX round robin from its own starting point. A level
  runs until `duration_s` or `max_requests` requests, whichever comes first (bounded in time and count; no retries).
- Figures per level: requests/s = completed requests / the level's wall seconds; p50 / p95 (nearest rank) of every
  request's wall time as the client saw it; errors (any status but 200). The client runs on the same machine as the
  server and Postgres: on this 2-core machine it takes CPU from them, as a browser on the same box would.
"""

import datetime as dt
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import requests
from django.conf import settings

from finops.models import User

from . import pages, timing

LEVELS = (1, 8, 32)
DURATION_S, MAX_REQUESTS = 30.0, 2000
TIMEOUT_S = 60
WORKERS = 4
TARGET = {"sessions": 32, "requests_per_s": 30, "p95_ms": 1500}  # issue 23
PASSWORD = "bench-load-password-not-a-secret"


def mix(today: dt.date) -> dict[str, str]:
    """The six the issue names: overview, teams, Explore, /api/v1/spend, caps, scorecard; and last month's report
    (issue 23: a closed month's page is its published snapshot — publish_last_month)."""
    start = today - dt.timedelta(days=90)
    last_month = (today.replace(day=1) - dt.timedelta(days=1)).replace(day=1)
    return {
        "overview": "/",
        "teams": "/teams/",
        "explore": f"/explore/?start={start}&end={today}&group_by=team",
        "api spend": f"/api/v1/spend?start={start}&end={today}&group_by=team",
        "caps": "/caps/",
        "scorecard": "/scorecard/",
        "report": f"/reports/{last_month:%Y-%m}/",
    }


def publish_last_month(user, today: dt.date) -> dict:
    """Last month's report published once (as finance would, or the monthly email's schedule), so that its page is
    served from the snapshot as for any closed, published month."""
    from finops.models import ReportSnapshot
    from finops.reports.selectors.tco_report import report_month, tco_report
    from finops.reports.services.reports import report_publish

    month = report_month(None, today=today)
    latest = ReportSnapshot.objects.filter(month=month).order_by("-version").first()
    if latest is None:
        started = time.perf_counter()
        latest = report_publish(report=tco_report(user, month, today=today), by=None)
        return {"month": month.isoformat(), "version": latest.version, "published_s": time.perf_counter() - started}
    return {"month": month.isoformat(), "version": latest.version}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _server_env() -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO_SETTINGS")}
    env.update(
        DEBUG="0",
        ALLOWED_HOSTS="127.0.0.1",
        SECURE_SSL_REDIRECT="0",
        SESSION_COOKIE_SECURE="0",
        CSRF_COOKIE_SECURE="0",
        SECURE_HSTS_SECONDS="0",
        DJANGO_SETTINGS_MODULE="finops.settings",
        SECRET_KEY=os.environ.get("SECRET_KEY") or "bench-only-not-a-secret",
    )
    return env


def start_server(workers: int, echo=print) -> tuple[subprocess.Popen, str]:
    env = _server_env()
    if not (Path(settings.STATIC_ROOT) / "staticfiles.json").exists():  # compressing Plotly's JS takes minutes
        echo("collectstatic (once: WhiteNoise's manifest and compressed files, as the image's build makes them) …")
        subprocess.run(
            [sys.executable, "manage.py", "collectstatic", "--no-input", "-v", "0"],
            cwd=settings.BASE_DIR,
            env=env,
            check=True,
        )
    port = _free_port()
    gunicorn = Path(sys.executable).with_name("gunicorn")
    log = tempfile.TemporaryFile()  # not a pipe: nobody reads it while the bench runs, and a full pipe blocks gunicorn
    server = subprocess.Popen(
        [
            str(gunicorn),
            "finops.wsgi:application",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            str(workers),
            "--timeout",
            str(TIMEOUT_S * 2),
        ],
        cwd=settings.BASE_DIR,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180  # four workers importing Django, pandas and Plotly on a busy 2-core machine
    try:
        while time.monotonic() < deadline:
            if server.poll() is not None:
                log.seek(0)
                raise SystemExit(f"bench_load: gunicorn stopped: {log.read().decode(errors='replace')[-2000:]}")
            try:
                if requests.get(f"{base}/healthz", timeout=10).status_code == 200:
                    echo(f"gunicorn ({workers} workers) answering at {base}")
                    return server, base
            except requests.RequestException:  # not listening yet, or a worker still loading
                pass
            time.sleep(0.5)
        raise SystemExit("bench_load: gunicorn did not answer /healthz within 180 s")
    except BaseException:
        stop_server(server)
        raise


def stop_server(server: subprocess.Popen) -> None:
    """TERM (gunicorn's graceful stop), then KILL if it has not stopped within 30 s."""
    server.terminate()
    try:
        server.wait(30)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait(10)


def _bench_user() -> tuple[str, str]:
    """The bench admin (its password set here) and a fresh read API token for it."""
    from finops.org.services.api_tokens import api_token_create
    from finops.org.services.users import user_set_role

    username = f"{pages.PREFIX}load-admin"
    user = User.objects.filter(username=username).first() or User.objects.create_user(
        username=username, password=PASSWORD
    )
    user.set_password(PASSWORD)
    user.save(update_fields=["password"])
    user_set_role(user=user, role=User.Role.ADMIN)
    _, secret = api_token_create(user=user, name="bench_load", description="", scope="read", days=1)
    return username, secret


def _session(base: str, username: str) -> requests.Session:
    http = requests.Session()
    form = http.get(f"{base}/accounts/login/", timeout=TIMEOUT_S)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text).group(1)
    done = http.post(
        f"{base}/accounts/login/",
        data={"username": username, "password": PASSWORD, "csrfmiddlewaretoken": token},
        headers={"Referer": f"{base}/accounts/login/"},
        timeout=TIMEOUT_S,
    )
    if done.status_code != 200 or "sessionid" not in http.cookies:
        raise SystemExit(f"bench_load: signing in answered {done.status_code}")
    return http


def run_level(
    base: str,
    urls: dict[str, str],
    sessions: list[requests.Session],
    api_token: str,
    *,
    duration_s: float,
    max_requests: int,
    write_every_s: float = 0,
) -> dict:
    """One level. With `write_every_s`, a writer moves the data version that often while the level runs (as an
    import or a rule change would), so that cached pages are computed again: the figures then include the cold
    requests after each write, in the proportion such a rhythm of writes makes."""
    from finops.web.page_cache import HEADER

    names = list(urls)
    served: dict[str, int] = {}
    times: list[float] = []
    by_page: dict[str, list[float]] = {name: [] for name in names}
    errors: list[str] = []
    budget = [max_requests]
    lock = threading.Lock()
    started = time.perf_counter()
    deadline = started + duration_s

    def work(n: int, http: requests.Session):
        turn = n
        while time.perf_counter() < deadline:
            with lock:
                if budget[0] <= 0:
                    return
                budget[0] -= 1
            name = names[turn % len(names)]
            turn += 1
            headers = {"Authorization": f"Token {api_token}"} if urls[name].startswith("/api/") else {}
            begun = time.perf_counter()
            try:
                response = http.get(base + urls[name], headers=headers, timeout=TIMEOUT_S, allow_redirects=False)
                status, cache = response.status_code, response.headers.get(HEADER, "not cached")
            except requests.RequestException as error:
                status, cache = type(error).__name__, "error"
            elapsed = (time.perf_counter() - begun) * 1000
            with lock:
                times.append(elapsed)
                by_page[name].append(elapsed)
                served[cache] = served.get(cache, 0) + 1
                if status != 200:
                    errors.append(f"{name}: {status}")

    writes = [0]

    def writer():
        from django.db import connection

        from finops.web import data_version

        try:
            while time.perf_counter() + write_every_s < deadline:
                time.sleep(write_every_s)
                data_version.bump()
                writes[0] += 1
        finally:
            connection.close()

    threads = [threading.Thread(target=work, args=(n, http), daemon=True) for n, http in enumerate(sessions)]
    if write_every_s > 0:
        threads.append(threading.Thread(target=writer, daemon=True))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(duration_s + TIMEOUT_S + 5)
    seconds = time.perf_counter() - started
    return {
        "sessions": len(sessions),
        "requests": len(times),
        "seconds": round(seconds, 2),
        "requests_per_s": round(len(times) / seconds, 2),
        "p50_ms": round(timing.percentile(times, 0.5), 1) if times else None,
        "p95_ms": round(timing.percentile(times, 0.95), 1) if times else None,
        "errors": len(errors),
        "error_examples": sorted(set(errors))[:5],
        "pages_p50_ms": {name: round(timing.percentile(t, 0.5), 1) for name, t in by_page.items() if t},
        "pages_p95_ms": {name: round(timing.percentile(t, 0.95), 1) for name, t in by_page.items() if t},
        "page_cache": served,
        "writes": writes[0],
    }


def run_bench(
    *,
    lines: int,
    out: Path,
    levels=LEVELS,
    duration_s: float = DURATION_S,
    max_requests: int = MAX_REQUESTS,
    workers: int = WORKERS,
    write_every_s: float = 0,
    echo=print,
) -> dict:
    from django.db import connection

    from bench.machine import machine_facts

    held = pages.shape()["lines"]
    generation = {"reused": True, "lines": held} if held else pages.lines_ready(lines, reuse=False, echo=echo)
    results = {
        "benchmark": f"gunicorn ({workers} workers), a mix of pages and API calls, at {'/'.join(map(str, levels))} "
        "concurrent sessions (loopback)",
        "measured_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": machine_facts(),
        "organisation": pages.shape(),
        "generation": generation,
        "target": TARGET,
        "levels": [],
        "bounds": {"duration_s": duration_s, "max_requests": max_requests},
        "write_every_s": write_every_s,
        "page_cache_seconds": settings.PAGE_CACHE_SECONDS,
        "loadavg_before": timing.loadavg(),
    }
    urls = mix(pages.today())
    results["urls"] = urls
    username, api_token = _bench_user()
    results["report"] = publish_last_month(User.objects.get(username=username), pages.today())
    connection.close()  # the server's workers do the work from here
    server, base = start_server(workers, echo)
    try:
        for level in levels:
            sessions = [_session(base, username) for _ in range(level)]
            for http in sessions[:1]:  # one warm pass: each worker's first requests load code and caches
                for url in urls.values():
                    http.get(
                        base + url,
                        headers={"Authorization": f"Token {api_token}"} if url.startswith("/api/") else {},
                        timeout=TIMEOUT_S,
                    )
            entry = run_level(
                base,
                urls,
                sessions,
                api_token,
                duration_s=duration_s,
                max_requests=max_requests,
                write_every_s=write_every_s,
            )
            entry["loadavg_after"] = timing.loadavg()
            results["levels"].append(entry)
            echo(
                f"{level:>3} sessions: {entry['requests']:>5} requests in {entry['seconds']:>6.1f} s = "
                f"{entry['requests_per_s']:>6.1f} req/s, p50 {entry['p50_ms']} ms, p95 {entry['p95_ms']} ms, "
                f"{entry['errors']} errors; page cache {entry['page_cache']}, {entry['writes']} writes; "
                f"load {entry['loadavg_after'][0]}"
            )
            for http in sessions:
                http.close()
    finally:
        stop_server(server)
    top = next((e for e in results["levels"] if e["sessions"] == TARGET["sessions"]), None)
    if top:
        results["meets_target"] = (
            top["requests_per_s"] >= TARGET["requests_per_s"]
            and top["errors"] == 0
            and top["p95_ms"] <= TARGET["p95_ms"]
        )
        echo(
            f"target at {TARGET['sessions']} sessions (≥ {TARGET['requests_per_s']} req/s, p95 ≤ {TARGET['p95_ms']} "
            f"ms): "
            f"{'met' if results['meets_target'] else 'not met'}"
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2, default=str) + "\n")
    echo(f"figures written to {out}")
    return results
