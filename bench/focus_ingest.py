"""FOCUS ingest throughput on Postgres: a generated export through `usage_file_import`, beside a plain COPY.

`manage.py bench_ingest` is the parent: it writes the file (streamed, never held in memory), then runs each
measurement in a fresh `python -m bench.focus_ingest <kind> …` child, so peak RSS is that run's alone.
lines/s = file lines / wall seconds of the measured call (the commit included).

- end_to_end: `usage_file_import` of the file into a fresh focus_file account: parse, price, attribute, COPY
  into the usage-line table, DELETE of what it replaces, daily rollup, commit, run bookkeeping. Its phases are
  timed by wrapping those functions (exclusive of nested timed calls), in the child only; "python" is the rest:
  reading, parsing, preparing and attributing rows.
- copy_table: the rows end_to_end wrote, dumped with COPY TO (untimed), then COPY FROM of that text into
  finops_usageline (same indexes and constraints): the database's ceiling for the table.
- python_only (--breakdown): the file through the column reader (FocusFile.parse_batches) alone, then also
  the usage-line columns and their binary COPY rows, with no database writes: the Python share of the time.

The bench owns its database: it TRUNCATEs finops_usageline and the rollups before each run, so it
refuses any database whose name does not end in "_bench".
"""

import datetime as dt
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from bench.machine import backend_cpu_s, machine_facts, maxrss_mb, process_cpu_s

TARGET_LINES_PER_S = 100_000
# Issue 23, per shape: (lines/s end to end, at most this many times a plain COPY of the same lines).
TARGETS = {"hourly": (TARGET_LINES_PER_S, 1 / 0.6), "per-resource": (50_000, 5.0), "toolkit-aws": (50_000, 5.0)}
FLAT_MEMORY_TOLERANCE = 0.20
ACCOUNT_PREFIX = "bench-focus-"


def _cpu_split(python_cpu: float, backend_cpu: float | None) -> dict:
    """Where the wall time went: the Python process's CPU, the Postgres backend's CPU (when readable), the load."""
    split = {"python_cpu_s": round(python_cpu, 2), "loadavg_1m": round(os.getloadavg()[0], 2)}
    if backend_cpu is not None:
        split["postgres_cpu_s"] = round(backend_cpu, 2)
    return split


def _guard(connection) -> None:
    name = connection.settings_dict["NAME"]
    if connection.vendor != "postgresql" or not str(name).endswith("_bench"):
        raise SystemExit(
            f"bench: refusing database {name!r} ({connection.vendor}): it TRUNCATEs usage lines; use a Postgres "
            "database named *_bench"
        )


def _reset() -> None:
    """An empty fact table and rollup, no earlier bench accounts: every run starts from the same state."""
    from django.db import connection

    from finops.models import (
        Account,
        DailyPerformance,
        LinesAloneDay,
        LineSignature,
        MonthlyPerformance,
        SignatureDailyPerformance,
    )

    _guard(connection)
    bench_accounts = Account.objects.filter(name__startswith=ACCOUNT_PREFIX)
    # The bench accounts' signatures and performance rows, one statement each (the account's cascade would load
    # each as a model instance: a scattered log of 1M requests leaves ~600k signatures and ~1M signature-day rows).
    emptied = (LineSignature, SignatureDailyPerformance, LinesAloneDay, DailyPerformance, MonthlyPerformance)
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE finops_usageline, finops_dailyspend, finops_monthlyspend")
        query, params = bench_accounts.values("id").query.sql_with_params()
        for model in emptied:
            cursor.execute(f"DELETE FROM {model._meta.db_table} WHERE account_id IN ({query})", params)
    bench_accounts.delete()
    with connection.cursor() as cursor:
        # What was deleted leaves dead rows that autovacuum may not reach before the next run: without this, each
        # run inserted its signatures into (and the rollup joined its lines to) a table and indexes bloated by every
        # earlier run's (875 MB for 178k live signatures after a dozen scattered runs; 7M dead signature-day rows,
        # 1.6 GB, after a few scattered 1M runs, which the daily performance rollup read through), which no user's
        # database looks like (signatures are never deleted in bulk).
        tables = ", ".join(["finops_usageline", "finops_tagset", *(model._meta.db_table for model in emptied)])
        cursor.execute(f"VACUUM ANALYZE {tables}")
        cursor.execute("CHECKPOINT")  # so a checkpoint of the previous run's writes does not land inside this one


def measure_end_to_end(
    path: Path,
    lines: int,
    *,
    trace: bool = False,
    provider: str = "aws-bedrock",
    connector: str = "focus_file",
    every_service: bool = False,
) -> dict:
    """`lines`: the file's lines (FOCUS: each one a usage line); a gateway log's requests, which it groups into
    fewer lines (gateway_ingest.py checks those). `every_service`: the account includes every ServiceName of the
    file (`focus_services_include`), so a cloud export's rows of other services are imported too (the
    focus-data-toolkit file: EC2, VPC, Glue … and no Bedrock)."""
    import tracemalloc

    from django.db import DEFAULT_DB_ALIAS, connection, connections

    from finops.models import Account, ConnectorKind, IngestRun, Provider
    from ingest import columnar, services, writing

    _reset()
    account = Account.objects.create(
        name=f"{ACCOUNT_PREFIX}{uuid.uuid4().hex[:8]}",
        provider=Provider.objects.get(slug=provider),
        connector=connector,
        focus_services_include=_services(path) if every_service else [],
    )
    phases = {"copy_s": 0.0, "replace_s": 0.0, "rollup_s": 0.0, "commit_s": 0.0}
    nested = [0.0]  # time spent in timed calls inside the current one, so each phase counts its own time only

    def timed(owner, name, phase):
        original = getattr(owner, name)

        def wrapper(*args, **kwargs):
            outer, nested[0] = nested[0], 0.0
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                spent = time.perf_counter() - started
                phases[phase] += spent - nested[0]
                nested[0] = outer + spent

        setattr(owner, name, wrapper)

    timed(columnar.ColumnarWriter, "copy", "copy_s")  # storing the batch's new tag sets, then its COPY
    timed(columnar.ColumnarWriter, "replace", "replace_s")  # the DELETE of what the file replaces
    timed(columnar, "replace_ahead", "replace_s")  # or most of it, before the first COPY (writing.replace_ahead)
    timed(writing.CopyWriter, "flush", "copy_s")  # the same, for a file read row by row
    timed(writing.CopyWriter, "replace", "replace_s")
    timed(writing, "rollup_rebuild", "rollup_s")
    timed(connections[DEFAULT_DB_ALIAS], "commit", "commit_s")
    rss_before = maxrss_mb()
    if trace:
        tracemalloc.start()
    backend_before, cpu_before = backend_cpu_s(connection), process_cpu_s()
    started = time.perf_counter()
    with open(path, "rb") as stream:
        run = services.usage_file_import(
            account=account, stream=stream, file_name=path.name, trigger=IngestRun.Trigger.COMMAND
        )
    seconds = time.perf_counter() - started
    cpu, backend_after = process_cpu_s() - cpu_before, backend_cpu_s(connection)
    with connection.cursor() as cursor:  # the table was emptied first: all of it is this run's lines
        cursor.execute("SELECT pg_total_relation_size('finops_usageline')")
        stored_bytes = cursor.fetchone()[0]
    result = {
        "lines": lines,
        "seconds": round(seconds, 3),
        "lines_per_s": round(lines / seconds),
        "peak_rss_mb": round(maxrss_mb(), 1),
        "rss_before_mb": round(rss_before, 1),
        "ru_maxrss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "status": run.status,
        "error": run.error,
        "written": run.lines_written,
        "bytes_per_line": round(stored_bytes / max(run.lines_written, 1)),
        "phases": {k: round(v, 3) for k, v in phases.items()},
        **_cpu_split(cpu, None if backend_before is None else backend_after - backend_before),
    }
    result["phases"]["python_s"] = round(seconds - sum(phases.values()), 3)
    if trace:
        result["tracemalloc_peak_mb"] = round(tracemalloc.get_traced_memory()[1] / 2**20, 1)
        tracemalloc.stop()
    grouped = connector == ConnectorKind.GATEWAY_LOG  # requests in, hourly lines out
    if run.status != IngestRun.Status.SUCCEEDED or (not grouped and run.lines_written != lines):
        raise SystemExit(f"bench: the import did not write every line: {result}")
    return result


def _services(path: Path) -> list[str]:
    """The ServiceNames of a FOCUS CSV (read before the measured import)."""
    import pyarrow.compute as pc
    import pyarrow.csv as pcsv

    table = pcsv.read_csv(path, convert_options=pcsv.ConvertOptions(include_columns=["ServiceName"]))
    return sorted(name for name in pc.unique(table.column("ServiceName")).to_pylist() if name)


def data_rows(path: Path) -> int:
    """The rows of a CSV file (its lines less the header; a quoted cell may hold a newline)."""
    import pyarrow.csv as pcsv

    return sum(
        batch.num_rows for batch in pcsv.open_csv(path, parse_options=pcsv.ParseOptions(newlines_in_values=True))
    )


def measure_copy(path: Path, lines: int) -> dict:
    """COPY the rows end_to_end wrote (dumped first, untimed) back into the truncated table."""
    from django.db import connection, transaction

    from ingest.lines import COLUMNS

    _guard(connection)
    columns = ", ".join(COLUMNS)
    dump = path.with_suffix(".copy")
    with connection.cursor() as cursor, open(dump, "wb") as out:
        with cursor.cursor.copy(f"COPY (SELECT {columns} FROM finops_usageline ORDER BY id) TO STDOUT") as copy:
            for block in copy:
                out.write(block)
    try:
        with connection.cursor() as cursor:
            cursor.execute("TRUNCATE finops_usageline, finops_dailyspend, finops_monthlyspend")
            cursor.execute("CHECKPOINT")
        results = {}
        rss_before = maxrss_mb()
        for name, target in (("copy_table", "finops_usageline"),):
            with transaction.atomic(), connection.cursor() as cursor:
                backend_before, cpu_before = backend_cpu_s(connection), process_cpu_s()
                started = time.perf_counter()
                with open(dump, "rb") as source, cursor.cursor.copy(f"COPY {target} ({columns}) FROM STDIN") as copy:
                    while block := source.read(1 << 20):
                        copy.write(block)
                copied = cursor.cursor.rowcount
            seconds = time.perf_counter() - started  # the commit included, as end_to_end's
            backend_after = backend_cpu_s(connection)
            if copied != lines:
                raise SystemExit(f"bench: {name} copied {copied} rows, expected {lines}")
            results[name] = {
                "lines": lines,
                "seconds": round(seconds, 3),
                "lines_per_s": round(lines / seconds),
                **_cpu_split(
                    process_cpu_s() - cpu_before, None if backend_before is None else backend_after - backend_before
                ),
            }
        results["copy_table"]["peak_rss_mb"] = round(maxrss_mb(), 1)
        results["copy_table"]["rss_before_mb"] = round(rss_before, 1)
        results["copy_bytes_mb"] = round(dump.stat().st_size / 2**20, 1)
        return results
    finally:
        dump.unlink(missing_ok=True)


def measure_python_only(path: Path, lines: int) -> dict:
    """The Python share: the column reader alone, then reader + line columns + COPY rows (all but the database)."""
    from finops.models import Account, IngestRun, Provider
    from ingest.columnar import ColumnarWriter
    from ingest.connectors.focus.file import FocusFile
    from ingest.preparing import LinePreparer

    source = FocusFile()
    started = time.perf_counter()
    with open(path, "rb") as stream:
        parsed = sum(len(batch) for batch in source.parse_batches(stream, file_name=path.name))
    read_s = time.perf_counter() - started
    account = Account(id=0, name="bench", provider=Provider.objects.get(slug="aws-bedrock"), connector="focus_file")
    writer = ColumnarWriter(LinePreparer(account, IngestRun(id=0, account=account)))
    started = time.perf_counter()
    with open(path, "rb") as stream:
        for batch in source.parse_batches(stream, file_name=path.name):
            writer.lines(batch)
    prepared_s = time.perf_counter() - started
    assert parsed == lines, (parsed, lines)
    return {
        "lines": lines,
        "read_s": round(read_s, 3),
        "read_us_per_line": round(read_s / lines * 1e6, 2),
        "read_prepare_copy_s": round(prepared_s, 3),
        "read_prepare_copy_us_per_line": round(prepared_s / lines * 1e6, 2),
        "peak_rss_mb": round(maxrss_mb(), 1),
    }


def _child_main(argv: list[str]) -> None:
    kind, path, lines, out = argv[0], Path(argv[1]), int(argv[2]), Path(argv[3])
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stopped by the bench: still remove the COPY dump
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "finops.settings")
    import django

    django.setup()
    if kind == "end_to_end":
        result = measure_end_to_end(path, lines, trace="--tracemalloc" in argv, every_service="--every-service" in argv)
    elif kind == "copy":
        result = measure_copy(path, lines)
    elif kind == "python_only":
        result = measure_python_only(path, lines)
    else:
        raise SystemExit(f"unknown measurement {kind!r}")
    out.write_text(json.dumps(result))


# --- the parent ---


def _child(kind: str, path: Path, lines: int, *extra: str, module: str = "bench.focus_ingest") -> dict:
    from django.conf import settings

    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as handle:
        out = Path(handle.name)
    try:
        env = {**os.environ, "DJANGO_SETTINGS_MODULE": settings.SETTINGS_MODULE}
        command = [sys.executable, "-m", module, kind, str(path), str(lines), str(out), *extra]
        child = subprocess.Popen(command, cwd=settings.BASE_DIR, env=env)
        try:
            if child.wait():
                raise subprocess.CalledProcessError(child.returncode, command)
        finally:
            if child.poll() is None:  # the bench itself is being stopped: stop the measurement too
                child.terminate()
                child.wait()
        return json.loads(out.read_text())
    finally:
        out.unlink(missing_ok=True)


SHAPES = {  # file shape -> (generator, what the table calls it)
    "hourly": ("write_focus_csv", "hourly Bedrock meters (few series)"),
    "per-resource": ("write_resource_focus_csv", "per-resource Bedrock (5,000+ profiles, 6 regions)"),
    "toolkit-aws": (None, "a focus-data-toolkit AWS FOCUS 1.2 file, every service kept (--toolkit-file)"),
}


def _write(shape: str, path: Path, lines: int, seed: int) -> int:
    from . import focus_export, focus_resources

    if shape == "hourly":
        return focus_export.write_focus_csv(path, lines, seed=seed)
    return focus_resources.write_resource_focus_csv(path, lines, seed=seed)


def run_bench(
    *,
    sizes: list[int],
    out: Path,
    workdir: Path | None = None,
    seed: int = 20260301,
    breakdown: bool = False,
    trace: bool = False,
    echo=print,
    resource_sizes: list[int] = (),
    toolkit_files: list[Path] = (),
) -> dict:
    """Measure every size of every shape (`sizes`: the hourly file, `resource_sizes`: the per-resource one,
    `toolkit_files`: focus-data-toolkit AWS files made beforehand, imported with every service kept and never
    deleted); the JSON is rewritten after each one, so a run stopped midway keeps what it measured."""
    from django.db import connection

    results = {
        "benchmark": "FOCUS 1.2 exports (AWS Bedrock: hourly per-token lines; daily per-resource rows) through "
        "usage_file_import on Postgres",
        "measured_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "target_lines_per_s": TARGET_LINES_PER_S,
        "machine": machine_facts(),
        "runs": [],
        "complete": False,
    }
    connection.close()  # the children truncate tables: hold no connection meanwhile
    out.parent.mkdir(parents=True, exist_ok=True)
    directory = Path(workdir or tempfile.gettempdir())
    directory.mkdir(parents=True, exist_ok=True)
    jobs = [("hourly", n) for n in sorted(set(sizes))] + [("per-resource", n) for n in sorted(set(resource_sizes))]
    jobs += [("toolkit-aws", Path(file)) for file in toolkit_files]
    # A stopped bench (SIGTERM) still stops its child and removes its file: raise SystemExit, run the finally blocks.
    previous = signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        for shape, lines in jobs:
            given = isinstance(lines, Path)  # a file made outside the bench: measured, never generated nor deleted
            path = lines if given else directory / f"focus-bench-{shape}-{lines}-{os.getpid()}.csv"
            extra = ("--every-service",) if given else ()
            try:
                started = time.perf_counter()
                if given:
                    lines, size = data_rows(path), path.stat().st_size
                else:
                    size = _write(shape, path, lines, seed)
                entry = {
                    "shape": shape,
                    "lines": lines,
                    "file_mb": round(size / 2**20, 1),
                    "generate_s": round(time.perf_counter() - started, 1),
                }
                if given:
                    entry["file"] = path.name
                echo(
                    f"{'counted' if given else 'generated'} {lines:,} {shape} lines ({entry['file_mb']:,} MB) in "
                    f"{entry['generate_s']} s; importing …"
                )
                entry["end_to_end"] = _child("end_to_end", path, lines, *extra)
                entry.update(_child("copy", path, lines))
                entry["copy_ratio"] = round(entry["end_to_end"]["seconds"] / entry["copy_table"]["seconds"], 2)
                if breakdown and lines == min(sizes or [0]) and shape == "hourly":
                    entry["python_only"] = _child("python_only", path, lines)
                if trace:
                    entry["end_to_end_tracemalloc"] = _child("end_to_end", path, lines, "--tracemalloc", *extra)
            finally:
                if not given:
                    path.unlink(missing_ok=True)
            results["runs"].append(entry)
            out.write_text(json.dumps(results, indent=2) + "\n")
    finally:
        signal.signal(signal.SIGTERM, previous)
    return finish(results, out, echo, size="lines", table=format_table)


def finish(results: dict, out, echo, *, size: str, table) -> dict:
    """Empty the bench tables, add the peak-memory ratio of the largest run to the smallest (`size`: the key of a
    run's size, lines or requests), write the figures and print them (`table(results)`): every ingest bench ends so."""
    from django.db import connection

    with connection.cursor() as cursor:  # leave the bench database small
        _guard(connection)
        cursor.execute("TRUNCATE finops_usageline, finops_dailyspend, finops_monthlyspend")
    runs = (
        [run for run in results["runs"] if run.get("shape") == results["runs"][0].get("shape")]
        if results["runs"]
        else []
    )
    if len(runs) > 1:  # the same file shape at two sizes
        small, large = runs[0]["end_to_end"]["peak_rss_mb"], runs[-1]["end_to_end"]["peak_rss_mb"]
        results["peak_rss_ratio"] = {
            size: [runs[0][size], runs[-1][size]],
            "ratio": round(large / small, 3),
            "flat": abs(large / small - 1) <= FLAT_MEMORY_TOLERANCE,
        }
    results["complete"] = True
    out.write_text(json.dumps(results, indent=2) + "\n")
    echo(table(results))
    return results


def format_table(results: dict) -> str:
    m = results["machine"]
    rows = [
        f"FOCUS ingest on Postgres {m['postgres']['version']} — {m['nproc']} CPUs ({m['cpu']}), {m['ram_gb']} GB RAM",
        f"{'lines':>10}  {'run':<24}{'seconds':>9}{'lines/s':>11}{'written':>11}{'B/line':>8}{'peak RSS MB':>13}"
        f"{'× COPY':>8}",
    ]
    for run in results["runs"]:
        e2e, copy = run["end_to_end"], run["copy_table"]
        rows.append(
            f"{run['lines']:>10,}  {run.get('shape', 'hourly') + ' end to end':<24}{e2e['seconds']:>9.2f}"
            f"{e2e['lines_per_s']:>11,}{e2e['written']:>11,}{e2e.get('bytes_per_line', 0):>8,}"
            f"{e2e['peak_rss_mb']:>13,.1f}{run.get('copy_ratio', 0):>8.2f}"
        )
        rows.append(
            f"{'':>10}  {'COPY of the same lines':<24}{copy['seconds']:>9.2f}{copy['lines_per_s']:>11,}"
            f"{'':>19}{copy['peak_rss_mb']:>13,.1f}"
        )
        phases = ", ".join(f"{k[:-2]} {v:.1f} s" for k, v in e2e["phases"].items())
        rows.append(f"{'':>10}  end-to-end phases: {phases}")
        if "python_only" in run:
            p = run["python_only"]
            rows.append(
                f"{'':>10}  Python only: read {p['read_us_per_line']} µs/line, "
                f"read + line columns + COPY rows {p['read_prepare_copy_us_per_line']} µs/line"
            )
        if "end_to_end_tracemalloc" in run:
            rows.append(
                f"{'':>10}  tracemalloc peak (traced run): {run['end_to_end_tracemalloc']['tracemalloc_peak_mb']} MB"
            )
    for shape, (target, ratio) in TARGETS.items():
        runs = [run for run in results["runs"] if run.get("shape", "hourly") == shape]
        if runs:
            speeds = [run["end_to_end"]["lines_per_s"] for run in runs]
            ratios = [run["copy_ratio"] for run in runs]
            met = min(speeds) >= target and max(ratios) <= ratio
            rows.append(
                f"{shape}: target ≥{target:,} lines/s and ≤ {ratio}× COPY: {'met' if met else 'not met by every size'} "
                f"({', '.join(f'{v:,}' for v in speeds)} lines/s; {', '.join(f'{r}×' for r in ratios)})"
            )
    ratio = results.get("peak_rss_ratio")
    if ratio:
        a, b = ratio["lines"]
        verdict = "flat (within 20%)" if ratio["flat"] else "NOT flat (beyond 20%)"
        rows.append(f"peak RSS {b:,} / {a:,} lines: {ratio['ratio']:.3f} — {verdict}")
    return "\n".join(rows)


if __name__ == "__main__":
    _child_main(sys.argv[1:])
