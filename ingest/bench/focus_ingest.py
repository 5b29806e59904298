"""FOCUS ingest throughput on Postgres: a generated export through `usage_file_import`, beside a plain COPY.

`manage.py bench_ingest` is the parent: it writes the file (streamed, never held in memory), then runs each
measurement in a fresh `python -m ingest.bench.focus_ingest <kind> …` child, so peak RSS is that run's alone.
lines/s = file lines / wall seconds of the measured call (the commit included).

- end_to_end: `usage_file_import` of the file into a fresh focus_file account: parse, price, attribute, COPY
  into the usage-line table, DELETE of what it replaces, daily rollup, commit, run bookkeeping. Its phases are
  timed by wrapping those functions (exclusive of nested timed calls), in the child only; "python" is the rest:
  reading, parsing, preparing and attributing rows.
- copy_table: the rows end_to_end wrote, dumped with COPY TO (untimed), then COPY FROM of that text into
  finops_usageline (same indexes and constraints): the database's ceiling for the table.
- python_only (--breakdown): the file through the column reader (FocusFile.parse_batches) alone, then also
  the usage-line columns and their CSV text, with no database writes: the Python share of the time.

The bench owns its database: it TRUNCATEs finops_usageline and the rollups before each run, so it
refuses any database whose name does not end in "_bench".
"""

import datetime as dt
import json
import math
import os
import platform
import random
import resource
import signal
import subprocess
import sys
import tempfile
import time
import uuid
import zlib
from pathlib import Path

TARGET_LINES_PER_S = 100_000
FLAT_MEMORY_TOLERANCE = 0.20
ACCOUNT_PREFIX = "bench-focus-"

# --- the generated export: "FOCUS 1.2 with AWS columns" (57 FOCUS columns + 3 AWS ones), Bedrock per-token rows ---

HEADER = (
    "AvailabilityZone", "BilledCost", "BillingAccountId", "BillingAccountName", "BillingAccountType", "BillingCurrency",
    "BillingPeriodEnd", "BillingPeriodStart", "CapacityReservationId", "CapacityReservationStatus", "ChargeCategory",
    "ChargeClass", "ChargeDescription", "ChargeFrequency", "ChargePeriodEnd", "ChargePeriodStart",
    "CommitmentDiscountCategory", "CommitmentDiscountId", "CommitmentDiscountName", "CommitmentDiscountQuantity",
    "CommitmentDiscountStatus", "CommitmentDiscountType", "CommitmentDiscountUnit", "ConsumedQuantity", "ConsumedUnit",
    "ContractedCost", "ContractedUnitPrice", "EffectiveCost", "InvoiceId", "InvoiceIssuerName", "ListCost",
    "ListUnitPrice", "PricingCategory", "PricingCurrency", "PricingCurrencyContractedUnitPrice",
    "PricingCurrencyEffectiveCost", "PricingCurrencyListUnitPrice", "PricingQuantity", "PricingUnit", "ProviderName",
    "PublisherName", "RegionId", "RegionName", "ResourceId", "ResourceName", "ResourceType", "ServiceCategory",
    "ServiceName", "ServiceSubcategory", "SkuId", "SkuMeter", "SkuPriceDetails", "SkuPriceId", "SubAccountId",
    "SubAccountName", "SubAccountType", "Tags", "x_Discounts", "x_Operation", "x_ServiceCode",
)
COL = {name: i for i, name in enumerate(HEADER)}
COST_CELLS = tuple(COL[c] for c in ("BilledCost", "ContractedCost", "EffectiveCost", "ListCost", "PricingCurrencyEffectiveCost"))
QUANTITY_CELLS = (COL["ConsumedQuantity"], COL["PricingQuantity"])

DAYS = 30
FIRST_HOUR = dt.datetime(2026, 3, 1, tzinfo=dt.UTC)
BILLING_PERIOD = ("2026-03-01T00:00:00.000Z", "2026-04-01T00:00:00.000Z")
PAYER = "999988887777"
REGIONS = (("USE1", "us-east-1", "US East (N. Virginia)"), ("USW2", "us-west-2", "US West (Oregon)"),
           ("EUC1", "eu-central-1", "EU (Frankfurt)"))
# Usage-type model part, display name, $ per 1K input and output tokens, prompt caching.
MODELS = (
    ("Claude4.6Sonnet", "Claude 4.6 Sonnet", 0.003, 0.015, True),
    ("Claude4.6Opus", "Claude 4.6 Opus", 0.005, 0.025, True),
    ("Claude4.5Haiku", "Claude 4.5 Haiku", 0.001, 0.005, True),
    ("Claude4Sonnet", "Claude 4 Sonnet", 0.003, 0.015, True),
    ("Claude3Haiku", "Claude 3 Haiku", 0.00025, 0.00125, False),
    ("Nova2.0Lite", "Nova 2.0 Lite", 0.0003, 0.0025, True),
    ("NovaPro", "Nova Pro", 0.0008, 0.0032, False),
    ("NovaLite", "Nova Lite", 0.00006, 0.00024, False),
    ("NovaMicro", "Nova Micro", 0.000035, 0.00014, False),
    ("Llama4-Maverick-17B", "Llama 4 Maverick 17B", 0.00024, 0.00097, False),
)
MANTLE_MODELS = (("mistral.voxtral-small-24b-2507", "Voxtral Small 24B", 0.0001, 0.0003),
                 ("qwen.qwen3-coder-480b-a35b-instruct", "Qwen3 Coder 480B", 0.00022, 0.0018))
# Direction: usage-type part, words for the description, price factor on the input price (None: output price),
# log-normal median of thousands of tokens per line.
DIRECTIONS = (("input-tokens", "input tokens", 1.0, 40.0), ("output-tokens", "output tokens", None, 6.0),
              ("cache-read-input-token-count", "cache read input tokens", 0.1, 120.0),
              ("cache-write-input-token-count", "cache write input tokens", 1.25, 15.0))
TIERS = (("", 1.0), ("-cross-region-global", 1.0), ("-batch", 0.5), ("-priority", 1.75))
MANTLE_TIERS = (("-standard", 1.0), ("-flex", 0.5), ("-priority", 1.75), ("-global-standard", 1.0))
OPERATIONS = ("InvokeModelInference", "InvokeModelStreamingInference", "Converse", "ConverseStream")
TEAMS = ("search", "support", "growth", "risk", "platform", "data", "sales", "legal")
APPS = ("agent", "rag", "summariser", "classifier", "copilot", "batch-eval")


def _csv(value: str) -> str:
    return '"' + value.replace('"', '""') + '"' if any(c in value for c in ',"\n\r') else value


def _meters() -> list[tuple]:
    """Every meter (usage type × region × tier): (the row's cells with the meter-fixed columns filled, unit price,
    tokens per quantity unit, log-normal median of thousands of tokens per line)."""
    base = [""] * len(HEADER)
    for column, value in (
        ("BillingAccountId", PAYER), ("BillingAccountName", "Acme payer"), ("BillingAccountType", "Billing Account"),
        ("BillingCurrency", "USD"), ("BillingPeriodEnd", BILLING_PERIOD[1]), ("BillingPeriodStart", BILLING_PERIOD[0]),
        ("ChargeCategory", "Usage"), ("ChargeFrequency", "Usage-Based"), ("InvoiceIssuerName", "AWS"),
        ("PricingCategory", "Standard"), ("PricingCurrency", "USD"), ("ProviderName", "AWS"),
        ("ServiceCategory", "AI and Machine Learning"), ("ServiceSubcategory", "Generative AI"),
        ("SubAccountType", "AWS Account"), ("x_Discounts", "{}"),
    ):
        base[COL[column]] = value

    def meter(region, usage_type, description, price, unit, service, publisher, service_code, sku):
        cells = list(base)
        for column, value in (
            ("ChargeDescription", _csv(description)), ("ConsumedUnit", unit), ("PricingUnit", unit),
            ("ContractedUnitPrice", repr(price)), ("ListUnitPrice", repr(price)),
            ("PricingCurrencyContractedUnitPrice", repr(price)), ("PricingCurrencyListUnitPrice", repr(price)),
            ("PublisherName", publisher), ("RegionId", region[1]), ("RegionName", region[2]),
            ("ServiceName", _csv(service)), ("SkuId", sku), ("SkuMeter", usage_type), ("SkuPriceId", f"{sku}.JRTCKXETXF"),
            ("x_ServiceCode", service_code),
        ):
            cells[COL[column]] = value
        return cells, price

    meters = []
    for region in REGIONS:
        for part, name, price_in, price_out, caching in MODELS:
            for direction, words, factor, median in DIRECTIONS if caching else DIRECTIONS[:2]:
                for suffix, tier_factor in TIERS:
                    price = round((price_out if factor is None else price_in * factor) * tier_factor, 8)
                    sku = f"{zlib.crc32(f'{region[0]}{part}{direction}{suffix}'.encode()):010d}"
                    meters.append((*meter(
                        region, f"{region[0]}-{part}-{direction}{suffix}",
                        f"${price} per 1K {words} for {name} in {region[2]}", price, "1K tokens", "Amazon Bedrock", "AWS",
                        "AmazonBedrock", sku,
                    ), 1000, median))
        for model_id, name, price_in, price_out in MANTLE_MODELS:
            for direction, words, factor, median in (DIRECTIONS[0], DIRECTIONS[1]):
                for suffix, tier_factor in MANTLE_TIERS:
                    price = round((price_out if factor is None else price_in) * tier_factor, 8)
                    meters.append((*meter(
                        region, f"{region[0]}-{model_id}-mantle-{direction}{suffix}",
                        f"${price} per 1K {words} for {name} in {region[2]}", price, "1K tokens", "Amazon Bedrock", "AWS",
                        "AmazonBedrock", f"M{zlib.crc32(f'{region[0]}{model_id}{direction}{suffix}'.encode()):010d}",
                    ), 1000, median))
        # Claude bought through AWS Marketplace: one unit = one token, the model is in the service name only.
        for kind, price, median in (("InputTokenCount", 0.000003, 40.0), ("OutputTokenCount", 0.000015, 6.0),
                                    ("CacheReadInputTokenCount", 0.0000003, 120.0)):
            meters.append((*meter(
                region, f"{region[0]}-MP:{region[0]}_{kind}-Units", "", price, "Units",
                "Claude Sonnet 4.5 (Amazon Bedrock Edition)", "Anthropic", "prod-8x2yq7abcd1234efgh5678",
                f"MP{region[0]}{kind}",
            ), 1, median))
    return meters


def write_focus_csv(path: Path, lines: int, *, seed: int = 20260301, accounts: int = 160) -> int:
    """Write `lines` FOCUS rows (30 days of hourly Bedrock lines) to `path`, streaming; returns the bytes written.

    A line is one series (sub-account × meter × inference profile, with its operation) in one hour. Like a real
    organisation's export, an hour holds about two thirds of a population of series 1.5 × the lines per hour,
    and the population drifts (a fifth of it is replaced over the month); series do not repeat within an hour,
    so identities are unique. Quantities are log-normal, costs are quantity × unit price rendered as AWS doubles.
    """
    rng = random.Random(seed)
    meters = _meters()
    subaccounts = []
    for a in range(accounts):
        account_id = f"{210000000000 + a * 7919:012d}"
        team, env = TEAMS[a % len(TEAMS)], ("prod", "staging", "dev")[a % 3]
        profiles = []
        for p in range(3):  # two application inference profiles, and direct invocations
            app = APPS[(a + p) % len(APPS)]
            tags = {"user:team": team, "user:env": env, "user:cost-center": f"CC-{400 + a % 40}"}
            if p < 2:
                tags["user:app"] = app
            profiles.append((p < 2, f"{uuid.UUID(int=a * 3 + p + 1).hex[-12:]}", _csv(json.dumps(tags, separators=(",", ":")))))
        subaccounts.append((account_id, f"{team}-{env}-{a:03d}", profiles))
    combos = accounts * len(meters) * 3
    stride = 7919
    while math.gcd(stride, combos) != 1:
        stride += 2
    hours = DAYS * 24
    population = math.ceil(lines / hours * 1.5)
    if population > combos:
        raise ValueError(f"{lines} lines need more series than the generator has ({combos})")
    end_at, start_at, resource_at, type_at = COL["ChargePeriodEnd"], COL["ChargePeriodStart"], COL["ResourceId"], COL["ResourceType"]
    region_at, operation_at = COL["RegionId"], COL["x_Operation"]
    account_at, name_at, tags_at = COL["SubAccountId"], COL["SubAccountName"], COL["Tags"]
    log, lognormal, sample = math.log, rng.lognormvariate, rng.sample
    with open(path, "w", encoding="utf-8", newline="", buffering=1 << 20) as out:
        out.write(",".join(HEADER) + "\n")
        for hour in range(hours):
            start = FIRST_HOUR + dt.timedelta(hours=hour)
            start_text = start.strftime("%Y-%m-%dT%H:00:00.000Z")
            end_text = (start + dt.timedelta(hours=1)).strftime("%Y-%m-%dT%H:00:00.000Z")
            count = lines * (hour + 1) // hours - lines * hour // hours
            first_series = hour * population // (hours * 5)
            batch = []
            for k in sample(range(population), count):
                combo = (first_series + k) * stride % combos
                a, rest = combo % accounts, combo // accounts
                cells, price, per_quantity, median = meters[rest // 3]
                account_id, account_name, profiles = subaccounts[a]
                is_profile, profile_id, tags = profiles[rest % 3]
                cells = list(cells)
                thousands = max(0.001, round(lognormal(log(median), 1.1), 3))
                quantity = repr(thousands) if per_quantity == 1000 else str(max(1, int(thousands * 1000)))
                cost = repr(round(float(quantity) * price, 10))
                for i in COST_CELLS:
                    cells[i] = cost
                for i in QUANTITY_CELLS:
                    cells[i] = quantity
                cells[end_at], cells[start_at] = end_text, start_text
                if is_profile:
                    cells[resource_at] = f"arn:aws:bedrock:{cells[region_at]}:{account_id}:application-inference-profile/{profile_id}"
                    cells[type_at] = "Application Inference Profile"
                cells[account_at], cells[name_at], cells[tags_at] = account_id, account_name, tags
                cells[operation_at] = OPERATIONS[(a + rest) % len(OPERATIONS)]
                batch.append(",".join(cells))
                if len(batch) == 10_000:
                    out.write("\n".join(batch) + "\n")
                    batch = []
            if batch:
                out.write("\n".join(batch) + "\n")
    return os.path.getsize(path)


# --- measurements (run in a child process each) ---


def _maxrss_mb() -> float:
    """This process's peak RSS: VmHWM, the high-water mark of its own address space.

    Not ru_maxrss: Linux carries that across exec, so a child's reads at least the parent's RSS at fork time
    (the parent here has just written the file). ru_maxrss is the fallback where /proc is missing.
    """
    try:
        status = Path("/proc/self/status").read_text()
        return next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:")) / 1024
    except (OSError, StopIteration, ValueError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: kilobytes


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _backend_cpu_s(connection) -> float | None:
    """CPU seconds of this connection's Postgres backend so far (local server: /proc), else None."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def _cpu_split(python_cpu: float, backend_cpu: float | None) -> dict:
    """Where the wall time went: the Python process's CPU, the Postgres backend's CPU (when readable), the load."""
    split = {"python_cpu_s": round(python_cpu, 2), "loadavg_1m": round(os.getloadavg()[0], 2)}
    if backend_cpu is not None:
        split["postgres_cpu_s"] = round(backend_cpu, 2)
    return split


def _guard(connection) -> None:
    name = connection.settings_dict["NAME"]
    if connection.vendor != "postgresql" or not str(name).endswith("_bench"):
        raise SystemExit(f"bench: refusing database {name!r} ({connection.vendor}): it TRUNCATEs usage lines; use a Postgres database named *_bench")


def _reset() -> None:
    """An empty fact table and rollup, no earlier bench accounts: every run starts from the same state."""
    from django.db import connection

    from finops.models import Account

    _guard(connection)
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE finops_usageline, finops_dailyspend, finops_monthlyspend")
    Account.objects.filter(name__startswith=ACCOUNT_PREFIX).delete()
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE finops_usageline")
        cursor.execute("CHECKPOINT")  # so a checkpoint of the previous run's writes does not land inside this one


def measure_end_to_end(path: Path, lines: int, *, trace: bool = False) -> dict:
    import tracemalloc

    from django.db import DEFAULT_DB_ALIAS, connection, connections

    from finops.models import Account, ConnectorKind, IngestRun, Provider
    from ingest import columnar, services, writing

    _reset()
    account = Account.objects.create(
        name=f"{ACCOUNT_PREFIX}{uuid.uuid4().hex[:8]}", provider=Provider.objects.get(slug="aws-bedrock"),
        connector=ConnectorKind.FOCUS_FILE,
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
    timed(writing.CopyWriter, "flush", "copy_s")  # the same, for a file read row by row
    timed(writing.CopyWriter, "replace", "replace_s")
    timed(writing, "rollup_rebuild", "rollup_s")
    timed(connections[DEFAULT_DB_ALIAS], "commit", "commit_s")
    rss_before = _maxrss_mb()
    if trace:
        tracemalloc.start()
    backend_before, cpu_before = _backend_cpu_s(connection), _cpu_s()
    started = time.perf_counter()
    with open(path, "rb") as stream:
        run = services.usage_file_import(account=account, stream=stream, file_name=path.name, trigger=IngestRun.Trigger.COMMAND)
    seconds = time.perf_counter() - started
    cpu, backend_after = _cpu_s() - cpu_before, _backend_cpu_s(connection)
    result = {
        "lines": lines, "seconds": round(seconds, 3), "lines_per_s": round(lines / seconds),
        "peak_rss_mb": round(_maxrss_mb(), 1), "rss_before_mb": round(rss_before, 1),
        "ru_maxrss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "status": run.status, "error": run.error, "written": run.lines_written,
        "phases": {k: round(v, 3) for k, v in phases.items()},
        **_cpu_split(cpu, None if backend_before is None else backend_after - backend_before),
    }
    result["phases"]["python_s"] = round(seconds - sum(phases.values()), 3)
    if trace:
        result["tracemalloc_peak_mb"] = round(tracemalloc.get_traced_memory()[1] / 2**20, 1)
        tracemalloc.stop()
    if run.status != IngestRun.Status.SUCCEEDED or run.lines_written != lines:
        raise SystemExit(f"bench: the import did not write every line: {result}")
    return result


def measure_copy(path: Path, lines: int) -> dict:
    """COPY the rows end_to_end wrote (dumped first, untimed) back into the truncated table."""
    from django.db import connection, transaction

    from ingest.writing import COLUMNS

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
        rss_before = _maxrss_mb()
        for name, target in (("copy_table", "finops_usageline"),):
            with transaction.atomic(), connection.cursor() as cursor:
                backend_before, cpu_before = _backend_cpu_s(connection), _cpu_s()
                started = time.perf_counter()
                with open(dump, "rb") as source, cursor.cursor.copy(f"COPY {target} ({columns}) FROM STDIN") as copy:
                    while block := source.read(1 << 20):
                        copy.write(block)
                copied = cursor.cursor.rowcount
            seconds = time.perf_counter() - started  # the commit included, as end_to_end's
            backend_after = _backend_cpu_s(connection)
            if copied != lines:
                raise SystemExit(f"bench: {name} copied {copied} rows, expected {lines}")
            results[name] = {
                "lines": lines, "seconds": round(seconds, 3), "lines_per_s": round(lines / seconds),
                **_cpu_split(_cpu_s() - cpu_before, None if backend_before is None else backend_after - backend_before),
            }
        results["copy_table"]["peak_rss_mb"] = round(_maxrss_mb(), 1)
        results["copy_table"]["rss_before_mb"] = round(rss_before, 1)
        results["copy_bytes_mb"] = round(dump.stat().st_size / 2**20, 1)
        return results
    finally:
        dump.unlink(missing_ok=True)


def measure_python_only(path: Path, lines: int) -> dict:
    """The Python share: the column reader alone, then reader + line columns + CSV text (all but the database)."""
    import pyarrow as pa
    import pyarrow.csv as pcsv

    from finops.models import Account, IngestRun, Provider
    from ingest.columnar import ColumnarWriter
    from ingest.providers.focus_file import FocusFile
    from ingest.writing import LinePreparer

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
            pcsv.write_csv(writer.lines(batch), pa.BufferOutputStream(), pcsv.WriteOptions(include_header=False))
    prepared_s = time.perf_counter() - started
    assert parsed == lines, (parsed, lines)
    return {
        "lines": lines, "read_s": round(read_s, 3), "read_us_per_line": round(read_s / lines * 1e6, 2),
        "read_prepare_csv_s": round(prepared_s, 3),
        "read_prepare_csv_us_per_line": round(prepared_s / lines * 1e6, 2),
        "peak_rss_mb": round(_maxrss_mb(), 1),
    }


def _child_main(argv: list[str]) -> None:
    kind, path, lines, out = argv[0], Path(argv[1]), int(argv[2]), Path(argv[3])
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stopped by the bench: still remove the COPY dump
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "finops.settings")
    import django

    django.setup()
    if kind == "end_to_end":
        result = measure_end_to_end(path, lines, trace="--tracemalloc" in argv)
    elif kind == "copy":
        result = measure_copy(path, lines)
    elif kind == "python_only":
        result = measure_python_only(path, lines)
    else:
        raise SystemExit(f"unknown measurement {kind!r}")
    out.write_text(json.dumps(result))


# --- the parent ---


def _child(kind: str, path: Path, lines: int, *extra: str) -> dict:
    from django.conf import settings

    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as handle:
        out = Path(handle.name)
    try:
        env = {**os.environ, "DJANGO_SETTINGS_MODULE": settings.SETTINGS_MODULE}
        command = [sys.executable, "-m", "ingest.bench.focus_ingest", kind, str(path), str(lines), str(out), *extra]
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


def machine_facts() -> dict:
    import django
    import psycopg
    from django.db import connection

    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    mem_kb = next(int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines() if line.startswith("MemTotal"))
    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        server_version = cursor.fetchone()[0]
        pg = {"version": server_version}
        for setting in ("shared_buffers", "work_mem", "maintenance_work_mem", "max_wal_size", "synchronous_commit",
                        "fsync", "wal_level", "temp_buffers"):
            cursor.execute(f"SHOW {setting}")
            pg[setting] = cursor.fetchone()[0]
    return {
        "nproc": len(os.sched_getaffinity(0)), "cpu": cpu, "ram_gb": round(mem_kb / 2**20, 1),
        "python": platform.python_version(), "django": django.get_version(),
        "psycopg": f"{psycopg.__version__} ({psycopg.pq.__impl__})", "postgres": pg,
        "postgres_host": connection.settings_dict.get("HOST") or "local socket",
    }


def run_bench(*, sizes: list[int], out: Path, workdir: Path | None = None, seed: int = 20260301,
              breakdown: bool = False, trace: bool = False, echo=print) -> dict:
    """Measure every size; the JSON is rewritten after each one, so a run stopped midway keeps what it measured."""
    from django.db import connection

    results = {
        "benchmark": "FOCUS 1.2 export (AWS Bedrock, hourly per-token lines) through usage_file_import on Postgres",
        "measured_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "target_lines_per_s": TARGET_LINES_PER_S, "machine": machine_facts(), "runs": [], "complete": False,
    }
    connection.close()  # the children truncate tables: hold no connection meanwhile
    out.parent.mkdir(parents=True, exist_ok=True)
    directory = Path(workdir or tempfile.gettempdir())
    directory.mkdir(parents=True, exist_ok=True)
    # A stopped bench (SIGTERM) still stops its child and removes its file: raise SystemExit, run the finally blocks.
    previous = signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        for lines in sorted(set(sizes)):
            path = directory / f"focus-bench-{lines}-{os.getpid()}.csv"
            try:
                started = time.perf_counter()
                size = write_focus_csv(path, lines, seed=seed)
                entry = {"lines": lines, "file_mb": round(size / 2**20, 1), "generate_s": round(time.perf_counter() - started, 1)}
                echo(f"generated {lines:,} lines ({entry['file_mb']:,} MB) in {entry['generate_s']} s; importing …")
                entry["end_to_end"] = _child("end_to_end", path, lines)
                entry.update(_child("copy", path, lines))
                if breakdown and lines == min(sizes):
                    entry["python_only"] = _child("python_only", path, lines)
                if trace:
                    entry["end_to_end_tracemalloc"] = _child("end_to_end", path, lines, "--tracemalloc")
            finally:
                path.unlink(missing_ok=True)
            results["runs"].append(entry)
            out.write_text(json.dumps(results, indent=2) + "\n")
    finally:
        signal.signal(signal.SIGTERM, previous)
    with connection.cursor() as cursor:  # leave the bench database small
        _guard(connection)
        cursor.execute("TRUNCATE finops_usageline, finops_dailyspend, finops_monthlyspend")
    runs = results["runs"]
    if len(runs) > 1:
        small, large = runs[0]["end_to_end"]["peak_rss_mb"], runs[-1]["end_to_end"]["peak_rss_mb"]
        results["peak_rss_ratio"] = {
            "lines": [runs[0]["lines"], runs[-1]["lines"]], "ratio": round(large / small, 3),
            "flat": abs(large / small - 1) <= FLAT_MEMORY_TOLERANCE,
        }
    results["complete"] = True
    out.write_text(json.dumps(results, indent=2) + "\n")
    echo(format_table(results))
    return results


def format_table(results: dict) -> str:
    m = results["machine"]
    rows = [f"FOCUS ingest on Postgres {m['postgres']['version']} — {m['nproc']} CPUs ({m['cpu']}), {m['ram_gb']} GB RAM",
            f"{'lines':>10}  {'run':<22}{'seconds':>9}{'lines/s':>11}{'peak RSS MB':>13}"]
    for run in results["runs"]:
        e2e = run["end_to_end"]
        for label, r in (("end to end", e2e), ("COPY into usage lines", run["copy_table"])):
            rss = f"{r['peak_rss_mb']:>13,.1f}" if "peak_rss_mb" in r else ""
            first = f"{run['lines']:>10,}" if label == "end to end" else " " * 10
            rows.append(f"{first}  {label:<22}{r['seconds']:>9.2f}{r['lines_per_s']:>11,}{rss}")
        phases = ", ".join(f"{k[:-2]} {v:.1f} s" for k, v in e2e["phases"].items())
        rows.append(f"{'':>10}  end-to-end phases: {phases}")
        if "python_only" in run:
            p = run["python_only"]
            rows.append(f"{'':>10}  Python only: read {p['read_us_per_line']} µs/line, "
                        f"read + line columns + CSV {p['read_prepare_csv_us_per_line']} µs/line")
        if "end_to_end_tracemalloc" in run:
            rows.append(f"{'':>10}  tracemalloc peak (traced run): {run['end_to_end_tracemalloc']['tracemalloc_peak_mb']} MB")
    target = results["target_lines_per_s"]
    speeds = [run["end_to_end"]["lines_per_s"] for run in results["runs"]]
    verdict = "met" if min(speeds) >= target else "not met by every size"  # the 1M file is the yardstick
    rows.append(f"target ≥{target:,} lines/s end to end: {verdict} ({', '.join(f'{v:,}' for v in speeds)})")
    ratio = results.get("peak_rss_ratio")
    if ratio:
        a, b = ratio["lines"]
        verdict = "flat (within 20%)" if ratio["flat"] else "NOT flat (beyond 20%)"
        rows.append(f"peak RSS {b:,} / {a:,} lines: {ratio['ratio']:.3f} — {verdict}")
    return "\n".join(rows)


if __name__ == "__main__":
    _child_main(sys.argv[1:])
