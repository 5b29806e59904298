"""Gateway-log ingest throughput on Postgres: a generated LiteLLM_SpendLogs CSV through `usage_file_import`, beside a
plain COPY of the lines it wrote (issue 15: ≥ 150k requests/s end to end, 5M-request peak within 20 % of 1M's).

The parent (`manage.py bench_ingest --requests N`) writes the file (gateway_export.py, streamed), then runs each
measurement in a fresh `python -m bench.gateway_ingest <kind> …` child, as focus_ingest.py does for FOCUS,
so peak RSS is that run's alone. requests/s = requests in the file / wall seconds of the measured call (commit
included).

- end_to_end: `usage_file_import` into a fresh gateway_log account: the column reader and writer (or the row
  reader, if it declined: `reader` says which), hourly lines priced, attributed, COPYed, what they replace deleted,
  daily rollups (spend and performance) rebuilt, commit. Checked: every request is counted in the stored lines.
- copy_table: the lines end_to_end wrote, dumped with COPY TO, then COPY FROM into the emptied usage-line table
  (focus_ingest.measure_copy): the database's ceiling for writing those lines, the control.
- python_only (--breakdown, smallest size): the column reader alone on the file, no database.
- end_to_end_by_records (--breakdown, smallest size): end_to_end with the record reader (gateway/log.py), the
  figure the column reader is to beat, measured on the same machine at the same time.
"""

import datetime as dt
import json
import os
import signal
import sys
import tempfile
import time
from pathlib import Path

from .focus_ingest import _child, finish, measure_copy, measure_end_to_end
from .machine import machine_facts, maxrss_mb

TARGET_REQUESTS_PER_S = 150_000
MODULE = "bench.gateway_ingest"


def measure_gateway_end_to_end(path: Path, requests: int, *, by_records: bool = False) -> dict:
    """`by_records`: the record reader's figure on the same file (the column reader made to decline at once)."""
    from django.db.models import Sum

    from finops.models import UsageLine
    from ingest.connectors.base import BatchDeclined
    from ingest.connectors.gateway.log import GatewayLog

    read_by = ["rows"]
    columns, lines = GatewayLog.column_groups, GatewayLog.column_lines

    def column_groups(*args, **kwargs):
        if by_records:
            raise BatchDeclined("bench: the record reader's figure")
        groups = columns(*args, **kwargs)
        read_by[0] = "columns, row writer"
        return groups

    def column_lines(*args, **kwargs):
        if by_records:
            raise BatchDeclined("bench: the record reader's figure")
        found = lines(*args, **kwargs)
        read_by[0] = "columns"
        return found

    GatewayLog.column_groups = staticmethod(column_groups)
    GatewayLog.column_lines = staticmethod(column_lines)
    result = measure_end_to_end(path, requests, provider="groq", connector="gateway_log")
    stored = UsageLine.objects.aggregate(requests=Sum("requests"))["requests"]
    if stored != requests:
        raise SystemExit(f"bench: {stored} requests stored of {requests}: {result}")
    result["requests"] = result.pop("lines")
    result["requests_per_s"] = result.pop("lines_per_s")
    result["reader"] = read_by[0]
    return result


def measure_python_only(path: Path, requests: int) -> dict:
    from ingest.connectors.gateway.log import GatewayLog

    started = time.perf_counter()
    with open(path, "rb") as stream:
        groups = GatewayLog.column_groups(stream, file_name=path.name)
    read_s = time.perf_counter() - started
    started = time.perf_counter()
    rows = list(groups.rows())
    rows_s = time.perf_counter() - started
    assert sum(row.requests for row in rows) == requests
    return {
        "requests": requests,
        "read_s": round(read_s, 3),
        "read_us_per_request": round(read_s / requests * 1e6, 2),
        "rows_with_latency_json_s": round(rows_s, 3),
        "peak_rss_mb": round(maxrss_mb(), 1),
    }


def _child_main(argv: list[str]) -> None:
    kind, path, count, out = argv[0], Path(argv[1]), int(argv[2]), Path(argv[3])
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "finops.settings")
    import django

    django.setup()
    if kind == "end_to_end":
        result = measure_gateway_end_to_end(path, count)
    elif kind == "end_to_end_by_records":
        result = measure_gateway_end_to_end(path, count, by_records=True)
    elif kind == "copy":
        result = measure_copy(path, count)  # count: the lines end_to_end wrote
    elif kind == "python_only":
        result = measure_python_only(path, count)
    else:
        raise SystemExit(f"unknown measurement {kind!r}")
    out.write_text(json.dumps(result))


SHAPES = {
    "busy-day": "one busy day: 40 keys, 8 models, ≤ 3,840 hourly lines",
    "scattered": "23 days, 300 keys × 50 users × 7 teams drawn independently: requests rarely share a line",
    "proxy": "23 days, each of 300 keys one user, team and model: ~6 requests a line at 1M",
}
TARGETS = {"busy-day": (250_000, None), "scattered": (60_000, 5.0), "proxy": (150_000, None)}  # issue 23


def run_gateway_bench(
    *,
    shapes: dict[str, list[int]],
    out: Path,
    workdir: Path | None = None,
    seed: int = 20260302,
    breakdown: bool = False,
    echo=print,
) -> dict:
    """Measure every size of every shape (`shapes`: shape -> request counts); the JSON is rewritten after each one."""
    from django.db import connection

    # Here, not at the top: the generator imports the product's gateway reader, hence its models, and the measuring
    # child (`python -m bench.gateway_ingest`) imports this module before it sets Django up.
    from . import gateway_export

    results = {
        "benchmark": "LiteLLM_SpendLogs CSVs through usage_file_import on Postgres: "
        + "; ".join(f"{shape}: {SHAPES[shape]}" for shape, sizes in shapes.items() if sizes),
        "measured_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "target_requests_per_s": TARGET_REQUESTS_PER_S,
        "machine": machine_facts(),
        "runs": [],
        "complete": False,
    }
    connection.close()
    out.parent.mkdir(parents=True, exist_ok=True)
    directory = Path(workdir or tempfile.gettempdir())
    directory.mkdir(parents=True, exist_ok=True)
    smallest = min(shapes.get("busy-day") or [0])  # --breakdown: the busy day's smallest size
    previous = signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        for shape, requests in ((name, n) for name in SHAPES for n in sorted(set(shapes.get(name, ())))):
            path = directory / f"gateway-bench-{shape}-{requests}-{os.getpid()}.csv"
            try:
                started = time.perf_counter()
                size = gateway_export.write_spend_logs_csv(path, requests, seed=seed, shape=shape)
                entry = {
                    "shape": shape,
                    "requests": requests,
                    "file_mb": round(size / 2**20, 1),
                    "generate_s": round(time.perf_counter() - started, 1),
                }
                echo(
                    f"generated a {requests:,}-request {shape} LiteLLM log ({entry['file_mb']:,} MB) in "
                    f"{entry['generate_s']} s; importing …"
                )
                entry["end_to_end"] = _child("end_to_end", path, requests, module=MODULE)
                entry["lines_written"] = entry["end_to_end"]["written"]
                entry.update(_child("copy", path, entry["lines_written"], module=MODULE))
                entry["copy_ratio"] = round(entry["end_to_end"]["seconds"] / entry["copy_table"]["seconds"], 2)
                if breakdown and requests == smallest and shape == "busy-day":
                    entry["python_only"] = _child("python_only", path, requests, module=MODULE)
                    entry["end_to_end_by_records"] = _child("end_to_end_by_records", path, requests, module=MODULE)
            finally:
                path.unlink(missing_ok=True)
            results["runs"].append(entry)
            out.write_text(json.dumps(results, indent=2) + "\n")
    finally:
        signal.signal(signal.SIGTERM, previous)
    return finish(results, out, echo, size="requests", table=format_table)


def format_table(results: dict) -> str:
    m = results["machine"]
    rows = [
        f"Gateway-log ingest on Postgres {m['postgres']['version']} — {m['nproc']} CPUs ({m['cpu']}), "
        f"{m['ram_gb']} GB RAM",
        f"{'requests':>10}  "
        f"{'run':<30}{'seconds':>9}{'per s':>11}{'lines':>11}{'B/line':>8}{'peak RSS MB':>13}{'× COPY':>8}",
    ]
    for run in results["runs"]:
        e2e, copy = run["end_to_end"], run["copy_table"]
        label = f"{run.get('shape', 'busy-day')} end to end ({e2e['reader']})"
        rows.append(
            f"{run['requests']:>10,}  {label:<30}{e2e['seconds']:>9.2f}{e2e['requests_per_s']:>11,}"
            f"{run['lines_written']:>11,}{e2e.get('bytes_per_line', 0):>8,}{e2e['peak_rss_mb']:>13,.1f}"
            f"{run.get('copy_ratio', 0):>8.2f}  requests/s"
        )
        rows.append(
            f"{'':>10}  {'COPY of the same lines':<30}{copy['seconds']:>9.2f}{copy['lines_per_s']:>11,}{'':>19}"
            f"{copy['peak_rss_mb']:>13,.1f}          lines/s"
        )
        phases = ", ".join(f"{k[:-2]} {v:.1f} s" for k, v in e2e["phases"].items())
        rows.append(f"{'':>10}  end-to-end phases: {phases}")
        if "end_to_end_by_records" in run:
            rows_run = run["end_to_end_by_records"]
            rows.append(
                f"{'':>10}  {'end to end (record reader)':<30}{rows_run['seconds']:>9.2f}"
                f"{rows_run['requests_per_s']:>11,}{'':>19}{rows_run['peak_rss_mb']:>13,.1f}          requests/s"
            )
        if "python_only" in run:
            p = run["python_only"]
            rows.append(
                f"{'':>10}  column reader alone: {p['read_us_per_request']} µs/request; "
                f"hourly rows + latency JSON {p['rows_with_latency_json_s']} s"
            )
    for shape, (target, ratio) in TARGETS.items():
        runs = [run for run in results["runs"] if run.get("shape", "busy-day") == shape]
        if runs:
            speeds = [run["end_to_end"]["requests_per_s"] for run in runs]
            met = min(speeds) >= target and (ratio is None or max(run["copy_ratio"] for run in runs) <= ratio)
            rows.append(
                f"{shape}: target ≥{target:,} requests/s{f' and ≤ {ratio}× COPY' if ratio else ''} end to end: "
                f"{'met' if met else 'not met by every size'} ({', '.join(f'{v:,}' for v in speeds)})"
            )
    ratio = results.get("peak_rss_ratio")
    if ratio:
        a, b = ratio["requests"]
        rows.append(
            f"peak RSS {b:,} / {a:,} requests: {ratio['ratio']:.3f} — "
            f"{'flat (within 20%)' if ratio['flat'] else 'NOT flat (beyond 20%)'}"
        )
    return "\n".join(rows)


if __name__ == "__main__":
    _child_main(sys.argv[1:])
