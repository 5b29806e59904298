"""How the benches measure (bench/pages.py and the benches of its organisation: alerts, scorecard, what-if, report,
load): nearest-rank percentiles, the queries of a request, a control query read beside every timing, the time spent
in a function while a block runs, CPU seconds of the process and its Postgres backend, the machine's load."""

import math
import os
import time

from django.db import connection


def percentile(values: list[float], share: float) -> float:
    """Nearest rank: the smallest value with at least `share` of the values at or below it."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


class QueryClock:
    """Counts the queries of a request and the time spent in them (connection.execute_wrapper)."""

    def __init__(self):
        self.queries, self.seconds = 0, 0.0

    def __call__(self, execute, sql, params, many, context):
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            self.queries += 1
            self.seconds += time.perf_counter() - started


def control_query() -> float:
    """Seconds for a plain scan of every line (count and sums, no join): what the machine gives a query at this
    moment, so the rollup and re-attribution timings of one run can be read against it (the machine is shared)."""
    started = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*), sum(requests), sum(output_tokens), sum(reporting_cost) FROM finops_usageline")
        cursor.fetchone()
    return round(time.perf_counter() - started, 2)


class timed_calls:
    """Adds the time spent in `owner.name` to phases[phase] while the block runs (the ingest bench's way)."""

    def __init__(self, owner, name, phases, phase):
        self.owner, self.name, self.phases, self.phase = owner, name, phases, phase

    def __enter__(self):
        self.original = getattr(self.owner, self.name)

        def wrapper(*args, **kwargs):
            started = time.perf_counter()
            try:
                return self.original(*args, **kwargs)
            finally:
                self.phases[self.phase] += time.perf_counter() - started

        setattr(self.owner, self.name, wrapper)

    def __exit__(self, *exc):
        if self.owner is connection:
            delattr(self.owner, self.name)  # back to the class's method
        else:
            setattr(self.owner, self.name, self.original)


def cpu_seconds(since: dict | None = None) -> dict:
    """CPU seconds used so far by this process and by its Postgres backend (read from /proc when the server runs
    on this machine, as the bench's does; None elsewhere), or since an earlier reading. On a shared 2-core machine
    wall time follows the neighbours' load; CPU seconds are what a change saves."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    try:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        backend = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        backend = None
    now = {"python": time.process_time(), "postgres": backend}
    if since is None:
        return now
    return {
        name: None if now[name] is None or since[name] is None else round(now[name] - since[name], 1) for name in now
    }


def loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]
