"""What a bench records of the machine it ran on, and the process measures the ingest benches take.

Machines of one size differ: the same test suite took 391 s on one 2-core machine of this workplace and 833 s on
another (28 Nov 2026). `cpu_reference_ms` times one fixed Python loop on one core, so figures from two machines can
be compared; `.ci/run` prints the same figure (`python3 -m bench.machine`) before the suite. This module imports
nothing but the standard library at its top, so CI runs it before any virtualenv exists.
"""

import os
import platform
import resource
import time
from pathlib import Path

REFERENCE_LOOP = 3_000_000


def cpu_reference_ms() -> float:
    """Milliseconds one core takes for a fixed pure-Python loop (sum of squares below REFERENCE_LOOP); lower is
    faster. Best of three, so one scheduling hiccup does not make a machine look slow."""
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        sum(i * i for i in range(REFERENCE_LOOP))
        best = min(best, time.perf_counter() - started)
    return round(best * 1000, 1)


def maxrss_mb() -> float:
    """This process's peak RSS: VmHWM, the high-water mark of its own address space.

    Not ru_maxrss: Linux carries that across exec, so a child's reads at least the parent's RSS at fork time
    (the parent here has just written the file). ru_maxrss is the fallback where /proc is missing.
    """
    try:
        status = Path("/proc/self/status").read_text()
        return next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:")) / 1024
    except (OSError, StopIteration, ValueError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: kilobytes


def process_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def backend_cpu_s(connection) -> float | None:
    """CPU seconds of this connection's Postgres backend so far (local server: /proc), else None."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def machine_facts() -> dict:
    import django
    import psycopg
    from django.db import connection

    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    mem_kb = next(
        int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines() if line.startswith("MemTotal")
    )
    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        server_version = cursor.fetchone()[0]
        pg = {"version": server_version}
        for setting in (
            "shared_buffers",
            "work_mem",
            "maintenance_work_mem",
            "max_wal_size",
            "synchronous_commit",
            "fsync",
            "wal_level",
            "temp_buffers",
        ):
            cursor.execute(f"SHOW {setting}")
            pg[setting] = cursor.fetchone()[0]
    return {
        "nproc": len(os.sched_getaffinity(0)),
        "cpu": cpu,
        "cpu_reference_ms": cpu_reference_ms(),
        "ram_gb": round(mem_kb / 2**20, 1),
        "python": platform.python_version(),
        "django": django.get_version(),
        "psycopg": f"{psycopg.__version__} ({psycopg.pq.__impl__})",
        "postgres": pg,
        "postgres_host": connection.settings_dict.get("HOST") or "local socket",
    }


if __name__ == "__main__":
    print(f"CPU reference: {cpu_reference_ms():.0f} ms for a fixed Python loop on one core (lower is faster)")
