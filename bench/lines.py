"""The bench's usage lines: a year of hourly and daily lines written with one COPY, streamed in chunks.

`COPY_COLUMNS`, `series_tail` and `line_text` are the only code that knows the usage-line columns (and
`store_keys` the tag sets and line signatures the series point at).

Gateway-log series (org.GATEWAY_ACCOUNTS) carry measured latency on every line, as a real gateway-log import
writes it: a finops.performance.measures.Performance as columns (LINE_COLUMNS) with its requests' latency cells.
Building one
per line
would make the generator the bottleneck, so a few hundred are built per provider profile up front
(`latency_pools`) and each line picks one (its `requests` are the picked Performance's).

The load runs in one transaction that first empties the fact table and the rollup, so COPY can write frozen
rows (no later hint-bit rewrites). For speed, and only in the bench's own database, it drops the table's
secondary indexes and constraints for the load and recreates them from their saved definitions afterwards,
and sets `session_replication_role = replica` for the load so Postgres does not queue a foreign-key check per
row: the generator writes only ids it has just created.
"""

import datetime as dt
import math
import random
import time

from django.db import connection, transaction

from finops.models import LineSignature, TagSet
from finops.performance.measures import LINE_COLUMNS, Performance
from finops.spend.models.usage import signature_id, tag_set_id, tags_text

from .org import Org, Series

TABLE = "finops_usageline"
CHUNK_LINES = 20_000

# --- the one place that maps a generated line onto the table ---

COPY_COLUMNS = (
    # per line
    "period_start",
    "period_end",
    "input_tokens",
    "cached_input_tokens",
    "cache_write_tokens",
    "output_tokens",
    "requests",
    "cost",
    "reporting_cost",
    *LINE_COLUMNS,
    # per series
    "account_id",
    "provider_id",
    "model",
    "model_raw",
    "service_tier",
    "project_ref",
    "api_key_ref",
    "user_ref",
    "tag_set_id",
    "currency",
    "cost_basis",
    "charge_category",
    "signature_id",
)


def series_tail(series: Series) -> str:
    """COPY text of the per-series columns, from account_id on."""
    cells = (
        series.account.id,
        series.account.provider_id,
        series.model,
        series.model_raw,
        "default",
        series.project_ref,
        series.api_key_ref,
        series.user_ref,
        tag_set_id(tags_text(series.tags)),
        "USD",
        series.basis,
        "usage",
        signature_id(*_signature_key(series)),
    )
    return "\t".join(str(c) for c in cells)


def _signature_key(series: Series) -> tuple:
    """The series' line signature, in LineSignature.KEY order."""
    return (
        series.account.id,
        series.account.provider_id,
        series.project_ref,
        series.api_key_ref,
        series.user_ref,
        series.model,
        series.model_raw,
        tag_set_id(tags_text(series.tags)),
    )


def store_keys(org: Org) -> None:
    """The tag sets and the line signatures (with the workload and team the generator gave each series)."""
    TagSet.objects.bulk_create(
        [TagSet(id=tag_set_id(tags_text(s.tags)), tags=s.tags) for s in org.series], ignore_conflicts=True
    )
    signatures = {}
    for s in org.series:
        key = _signature_key(s)
        signatures[signature_id(*key)] = LineSignature(
            id=signature_id(*key),
            **dict(zip(LineSignature.KEY, key)),
            workload_id=s.workload.id if s.workload else None,
            team_id=s.team_id,
        )
    LineSignature.objects.bulk_create(list(signatures.values()), ignore_conflicts=True, batch_size=2000)


NO_LATENCY = "\t".join([r"\N"] * len(LINE_COLUMNS))


def line_text(
    period: str, tail: str, tokens: tuple[int, int, int, int], requests: int, cost: str, latency: str = NO_LATENCY
) -> str:
    """One COPY text line: period ("start\\tend"), the per-line measures (latency: the LINE_COLUMNS' COPY text, or
    nulls for lines of sources that measure none), then the series' tail."""
    return (
        f"{period}\t{tokens[0]}\t{tokens[1]}\t{tokens[2]}\t{tokens[3]}\t{requests}\t{cost}\t{cost}\t{latency}\t{tail}\n"
    )


# --- measured latency of the gateway series ---

POOL = 256  # Performance texts per profile
# provider: (median time to first token ms, median output tokens/s of generation), as the market measures them
# (Cerebras ~1,500 tok/s on a 70B model, Groq ~300–400; issue 12's demo tells the same story).
SPEEDS = {"groq": (180, 350), "cerebras": (220, 1500)}
ERROR_SHARE, TAIL_SHARE = 0.01, 0.01  # failed requests; slow outliers (queueing), 3–8× their time


def _performance(rng: random.Random, ttft_median: float, speed: float) -> Performance:
    performance = Performance()
    for _ in range(max(1, int(rng.lognormvariate(math.log(20), 0.7)))):
        output = max(1, int(rng.lognormvariate(math.log(300), 0.6)))
        ttft = rng.lognormvariate(math.log(ttft_median), 0.4)
        generation = output / (speed * rng.lognormvariate(0, 0.2)) * 1000
        duration = (ttft + generation) * (rng.uniform(3, 8) if rng.random() < TAIL_SHARE else 1)
        performance.add_request(
            duration_ms=round(duration), ttft_ms=round(ttft), output_tokens=output, failed=rng.random() < ERROR_SHARE
        )
    return performance


def latency_pools(org: Org, rng: random.Random) -> dict[str, list[tuple[int, str]]]:
    """Per gateway provider: POOL (requests, Performance columns as COPY text) pairs to pick from, one per line."""
    pools = {}
    for slug in {s.account.provider.slug for s in org.series if s.timed}:
        ttft, speed = SPEEDS.get(slug, (300, 100))
        pools[slug] = []
        for _ in range(POOL):
            performance = _performance(rng, ttft, speed)
            pools[slug].append((performance.requests, _copy_text(performance.line_columns())))
    return pools


def _copy_text(columns: tuple) -> str:
    """LINE_COLUMNS values as COPY text: numbers, \\N for null, the cells as an array literal."""
    return "\t".join(
        r"\N" if value is None else "{" + ",".join(map(str, value)) + "}" if isinstance(value, list) else str(value)
        for value in columns
    )


# --- generation ---

FACTORS = 4096  # per-line volume noise, drawn from a precomputed log-normal table (random calls are slow)


def _timestamp(moment: dt.datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S+00")


def _cost_text(pico: int) -> str:
    """Pico-dollars -> exact NUMERIC text (12 decimals; the column keeps 18)."""
    return f"{pico // 10**12}.{pico % 10**12:012d}"


def generate(org: Org, first_day: dt.date, *, seed: int = 11):
    """Yield COPY text chunks of exactly `org.scale.lines` lines over `org.scale.days` days, oldest first.

    A day holds lines of about 85 % of the daily-granularity series (capped at a quarter of the day's lines),
    and its remaining lines spread evenly over its 24 hours, each hour a random sample of the hourly series
    (a series at most once per period, as a provider reports it). Volumes grow over the year.
    """
    scale = org.scale
    rng = random.Random(seed)
    factors = [rng.lognormvariate(0, 0.6) for _ in range(FACTORS)]
    mask = FACTORS - 1
    tails = [series_tail(s) for s in org.series]
    pools = latency_pools(org, random.Random(seed + 1))
    latencies = [pools[s.account.provider.slug] if s.timed else None for s in org.series]
    daily = [n for n, s in enumerate(org.series) if s.granularity == "day"]
    hourly = [n for n, s in enumerate(org.series) if s.granularity == "hour"]
    series, sample, bits = org.series, rng.sample, rng.getrandbits
    chunk: list[str] = []
    for d in range(scale.days):
        day_lines = scale.lines * (d + 1) // scale.days - scale.lines * d // scale.days
        growth = 0.6 + 0.8 * d / scale.days
        start = dt.datetime.combine(first_day + dt.timedelta(days=d), dt.time(), tzinfo=dt.UTC)
        n_daily = min(math.floor(len(daily) * 0.85), day_lines // 4)
        plan = [
            (_timestamp(start) + "\t" + _timestamp(start + dt.timedelta(days=1)), 20 * growth, sample(daily, n_daily))
        ]
        rest = day_lines - n_daily
        for h in range(24):
            count = rest * (h + 1) // 24 - rest * h // 24
            if count > len(hourly):
                raise ValueError(
                    f"{scale.lines:,} lines need more hourly series than the organisation has ({len(hourly)})"
                )
            moment = start + dt.timedelta(hours=h)
            plan.append(
                (_timestamp(moment) + "\t" + _timestamp(moment + dt.timedelta(hours=1)), growth, sample(hourly, count))
            )
        for period, factor, members in plan:
            for n in members:
                s = series[n]
                inp = int(s.volume * factor * factors[bits(12) & mask]) + 1
                cached = int(inp * s.cache_share)
                write = cached // 8 if s.prices and s.prices[2] else 0
                out = int(inp * s.output_ratio)
                tokens = (inp, cached, write, out)
                if s.prices is None:
                    cost = r"\N"
                else:
                    p = s.prices
                    cost = _cost_text(inp * p[0] + cached * p[1] + write * p[2] + out * p[3])
                pool = latencies[n]
                if pool is None:
                    chunk.append(line_text(period, tails[n], tokens, inp // 1500 + 1, cost))
                else:
                    requests, latency = pool[bits(8) & (POOL - 1)]
                    chunk.append(line_text(period, tails[n], tokens, requests, cost, latency))
            if len(chunk) >= CHUNK_LINES:
                yield "".join(chunk)
                chunk = []
    if chunk:
        yield "".join(chunk)


# --- the load ---


def _secondary_indexes(cursor) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(constraints backed by an index but the primary key, other indexes): name and definition of each."""
    cursor.execute(
        "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = %s::regclass AND contype IN "
        "('u', 'x')",
        [TABLE],
    )
    constraints = cursor.fetchall()
    cursor.execute(
        "SELECT i.relname, pg_get_indexdef(i.oid) FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid "
        "WHERE x.indrelid = %s::regclass AND NOT x.indisprimary "
        "AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = x.indexrelid)",
        [TABLE],
    )
    return constraints, cursor.fetchall()


def load(org: Org, first_day: dt.date, *, echo=print) -> dict:
    """Empty the fact table and the rollup, then COPY the generated lines; returns timings."""
    figures = {}
    started = time.perf_counter()
    store_keys(org)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            f"TRUNCATE {TABLE}, finops_dailyspend, finops_monthlyspend, finops_dailyperformance, "
            f"finops_monthlyperformance, finops_signaturedailyperformance"
        )
        constraints, indexes = _secondary_indexes(cursor)
        for name, _ in constraints:
            cursor.execute(f'ALTER TABLE {TABLE} DROP CONSTRAINT "{name}"')
        for name, _ in indexes:
            cursor.execute(f'DROP INDEX "{name}"')
        cursor.execute("SET LOCAL session_replication_role = replica")
        cursor.execute("SET LOCAL maintenance_work_mem = '512MB'")
        written, report_at = 0, 1_000_000
        columns = ", ".join(COPY_COLUMNS)
        with cursor.cursor.copy(f"COPY {TABLE} ({columns}) FROM STDIN (FREEZE)") as copy:
            for block in generate(org, first_day):
                copy.write(block)
                written += block.count("\n")
                if written >= report_at:
                    echo(f"  … {written:,} lines ({written / (time.perf_counter() - started):,.0f} lines/s)")
                    report_at += 1_000_000
        figures["copy_s"] = round(time.perf_counter() - started, 1)
        index_started = time.perf_counter()
        for name, definition in constraints:
            cursor.execute(f'ALTER TABLE {TABLE} ADD CONSTRAINT "{name}" {definition}')
        for _, definition in indexes:
            cursor.execute(definition)
        figures["indexes_s"] = round(time.perf_counter() - index_started, 1)
        figures["indexes_rebuilt"] = [name for name, _ in constraints + indexes]
    if written != org.scale.lines:
        raise RuntimeError(f"bench: wrote {written:,} lines, expected {org.scale.lines:,}")
    vacuum_started = time.perf_counter()
    analyze(TABLE)
    figures["vacuum_analyze_s"] = round(time.perf_counter() - vacuum_started, 1)
    figures["lines"] = written
    figures["load_s"] = round(time.perf_counter() - started, 1)
    figures["lines_per_s"] = round(written / figures["copy_s"])
    return figures


def analyze(table: str) -> None:
    """VACUUM (ANALYZE): visibility map and statistics for the reads that follow; ANALYZE alone inside a
    transaction (the generator's test), where VACUUM cannot run."""
    with connection.cursor() as cursor:
        cursor.execute(f"{'ANALYZE' if connection.in_atomic_block else 'VACUUM (ANALYZE)'} {table}")
