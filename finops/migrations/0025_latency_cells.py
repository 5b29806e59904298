"""Latency as columns and cells (issue 23): every stored Performance JSON — a usage line's `latency`, a rollup row's
or a reported hour's `performance` — becomes columns (finops.performance.measures.COLUMNS / LINE_COLUMNS) and one array of
latency cells (finops.performance.latency), so that the performance rollup merges rows in SQL. The figures are the same: the
cells hold the same buckets and counts, the counters the same sums.

Lines written before issue 12 (a summary `{"count", "sum_ms", "p50_ms", "p95_ms", "max_ms", …}`, read as summary-only
bounded by its slowest request) keep exactly that: `summary_requests` = count, `summary_p99_ms` = max_ms.

Postgres converts in one UPDATE per table (a table of 10M lines in a few minutes, no table recreated); other
databases (the demo's SQLite) and the way back go row by row through the functions below, which are this
migration's own (frozen here: later changes to finops.performance.measures do not change what it did).
"""

from django.db import migrations, models

import finops.performance.models.performance

COUNT_BITS, OFFSET = 40, 2048
LINE_JSON, ROLLUP_JSON = "latency_json", "performance"
ROLLUP_TABLES = ("DailyPerformance", "MonthlyPerformance", "ReportedPerformance")
COUNTERS = ("streamed_tokens", "streamed_ms", "timed_tokens", "timed_ms")


# --- Postgres: one UPDATE a table ---

def _cells_sql(column: str) -> str:
    """The cells of the two distributions in the jsonb `column`, sorted (NULL when both are empty)."""
    return f"""(SELECT array_agg(cell ORDER BY cell) FROM (
        SELECT ((d.kind::bigint << 12 | (b.key::int + {OFFSET})) << {COUNT_BITS}) | b.value::bigint AS cell
          FROM (VALUES (0, {column}->'e2e'), (1, {column}->'ttft')) d(kind, dist), jsonb_each_text(d.dist->'buckets') b
         WHERE b.value::bigint > 0
        UNION ALL
        SELECT ((d.kind::bigint << 12) << {COUNT_BITS}) | (d.dist->>'zero')::bigint
          FROM (VALUES (0, {column}->'e2e'), (1, {column}->'ttft')) d(kind, dist)
         WHERE coalesce((d.dist->>'zero')::bigint, 0) > 0) cells)"""


def _forward_postgres(schema_editor) -> None:
    j = LINE_JSON
    counters = ", ".join(f"{name} = CASE WHEN {j} ? 'v' THEN coalesce(({j}->>'{name}')::bigint, 0) END" for name in COUNTERS)
    statements = [f"""UPDATE finops_usageline SET
        errors = CASE WHEN {j} ? 'v' THEN coalesce(({j}->>'errors')::bigint, 0) END, {counters},
        summary_requests = CASE WHEN {j} ? 'v' THEN nullif(coalesce(({j}->>'summary_requests')::bigint, 0), 0)
                                ELSE coalesce(({j}->>'count')::bigint, 0) END,
        summary_p99_ms = CASE WHEN {j} ? 'v' THEN ({j}->>'summary_p99_ms')::float8 ELSE ({j}->>'max_ms')::float8 END,
        latency = CASE WHEN {j} ? 'v' THEN {_cells_sql(j)} END
        WHERE {j} IS NOT NULL"""]
    p = ROLLUP_JSON
    sums = ", ".join(f"{name} = coalesce(({p}->>'{name}')::bigint, 0)"
                     for name in (*COUNTERS, "summary_errors", "summary_counted"))
    for table in ("finops_dailyperformance", "finops_monthlyperformance", "finops_reportedperformance"):
        statements.append(f"""UPDATE {table} SET {sums}, summary_p99_ms = ({p}->>'summary_p99_ms')::float8,
            latency = {_cells_sql(p)}""")
    # A reported hour had no counters of its own (the rollup rows had requests, errors and summary_requests).
    statements.append(f"""UPDATE finops_reportedperformance SET requests = coalesce(({p}->>'requests')::bigint, 0),
        errors = coalesce(({p}->>'errors')::bigint, 0), summary_requests = coalesce(({p}->>'summary_requests')::bigint, 0)""")
    with schema_editor.connection.cursor() as cursor:
        for statement in statements:
            cursor.execute(statement)
    _settle_triggers(schema_editor)


def _settle_triggers(schema_editor) -> None:
    """Postgres: run the deferred foreign-key checks the updates queued now, so that the columns can be dropped
    in this transaction ("cannot ALTER TABLE … because it has pending trigger events"); then defer them again."""
    if schema_editor.connection.vendor == "postgresql":
        with schema_editor.connection.cursor() as cursor:
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
            cursor.execute("SET CONSTRAINTS ALL DEFERRED")


# --- elsewhere, and back: row by row ---

def _cells(data: dict) -> list[int] | None:
    found = []
    for kind, name in enumerate(("e2e", "ttft")):
        dist = data.get(name) or {}
        if int(dist.get("zero", 0)):
            found.append(((kind << 12) << COUNT_BITS) | int(dist["zero"]))
        found += [((kind << 12 | (int(i) + OFFSET)) << COUNT_BITS) | int(n) for i, n in (dist.get("buckets") or {}).items() if n]
    return sorted(found) or None


def _distributions(cells) -> tuple[dict, dict]:
    found = ({"v": 1, "alpha": "0.01", "zero": 0, "buckets": {}}, {"v": 1, "alpha": "0.01", "zero": 0, "buckets": {}})
    for cell in cells or ():
        count, bin_ = cell & ((1 << COUNT_BITS) - 1), cell >> COUNT_BITS
        dist, index = found[bin_ >> 12], (bin_ & 0xFFF) - OFFSET
        if index == -OFFSET:
            dist["zero"] += count
        else:
            dist["buckets"][str(index)] = dist["buckets"].get(str(index), 0) + count
    for dist in found:
        dist["buckets"] = dict(sorted(dist["buckets"].items(), key=lambda item: int(item[0])))
    return found


def _line_columns(data: dict) -> dict:
    if "v" not in data:  # before issue 12: a summary
        return {"summary_requests": int(data.get("count", 0)), "summary_p99_ms": data.get("max_ms")}
    return {"errors": int(data.get("errors", 0)), **{name: int(data.get(name, 0)) for name in COUNTERS},
            "summary_requests": int(data.get("summary_requests", 0)) or None,
            "summary_p99_ms": data.get("summary_p99_ms"), "latency": _cells(data)}


def _rollup_columns(data: dict) -> dict:
    return {**{name: int(data.get(name, 0)) for name in
               ("requests", "errors", *COUNTERS, "summary_requests", "summary_errors", "summary_counted")},
            "summary_p99_ms": data.get("summary_p99_ms"), "latency": _cells(data)}


def _as_json(row, requests: int) -> dict:
    e2e, ttft = _distributions(row.latency)
    return {"v": 2, "requests": requests, "errors": row.errors or 0, "e2e": e2e, "ttft": ttft,
            **{name: getattr(row, name) or 0 for name in COUNTERS},
            "summary_requests": getattr(row, "summary_requests", 0) or 0, "summary_p99_ms": row.summary_p99_ms,
            "summary_errors": getattr(row, "summary_errors", 0) or 0,
            "summary_counted": getattr(row, "summary_counted", 0) or 0}


def _each(model, **where):
    return model.objects.filter(**where).order_by("pk").iterator(chunk_size=2000)


def forward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        _forward_postgres(schema_editor)
        return
    for line in _each(apps.get_model("finops", "UsageLine"), latency_json__isnull=False):
        for name, value in _line_columns(line.latency_json).items():
            setattr(line, name, value)
        line.save()
    for name in ROLLUP_TABLES:
        for row in _each(apps.get_model("finops", name)):
            for column, value in _rollup_columns(row.performance).items():
                setattr(row, column, value)
            row.save()


def backward(apps, schema_editor):
    UsageLine = apps.get_model("finops", "UsageLine")
    for line in _each(UsageLine, errors__isnull=False):
        line.latency_json = _as_json(line, line.requests - (line.summary_requests or 0))
        line.save()
    for line in _each(UsageLine, errors__isnull=True, summary_requests__isnull=False):
        line.latency_json = {"count": line.summary_requests, "max_ms": line.summary_p99_ms}
        line.save()
    for name in ROLLUP_TABLES:
        for row in _each(apps.get_model("finops", name)):
            row.performance = _as_json(row, row.requests)
            row.save()
    _settle_triggers(schema_editor)


def _cells_field():
    return finops.performance.models.performance.LatencyCells(
        blank=True, null=True, help_text="End-to-end and time-to-first-token distributions (finops.performance.latency cells).")


def _rollup_fields(model: str) -> list:
    count = lambda text: models.PositiveBigIntegerField(default=0, help_text=text)  # noqa: E731
    return [
        migrations.AddField(model, "streamed_tokens", count("Output tokens of streamed requests.")),
        migrations.AddField(model, "streamed_ms", count("Their generation time (end − first token), ms.")),
        migrations.AddField(model, "timed_tokens", count("Output tokens of timed requests.")),
        migrations.AddField(model, "timed_ms", count("Their end-to-end time, ms.")),
        migrations.AddField(model, "summary_p99_ms", models.FloatField(blank=True, null=True, help_text="Upper bound of the summaries' p99.")),
        migrations.AddField(model, "summary_errors", count("Failed, among the summaries that say.")),
        migrations.AddField(model, "summary_counted", count("Summary requests whose failures are known.")),
        migrations.AddField(model, "latency", _cells_field()),
    ]


def _optional_count(help_text: str = "") -> models.PositiveBigIntegerField:
    return models.PositiveBigIntegerField(blank=True, null=True, help_text=help_text)


class Migration(migrations.Migration):

    dependencies = [
        ("finops", "0024_gateway_cache_hits"),
    ]

    operations = [
        migrations.RenameField("usageline", "latency", LINE_JSON),
        migrations.AddField("usageline", "errors", _optional_count("Failed requests; null: no per-request data.")),
        *[migrations.AddField("usageline", name, _optional_count()) for name in COUNTERS],
        migrations.AddField("usageline", "summary_requests", _optional_count(
            "Lines written before issue 12: their requests, known from a summary only.")),
        migrations.AddField("usageline", "summary_p99_ms", models.FloatField(
            blank=True, null=True, help_text="… and their slowest request (bounds the p99).")),
        migrations.AddField("usageline", "latency", finops.performance.models.performance.LatencyCells(
            blank=True, null=True, help_text="Latency distributions as finops.performance.latency cells.")),
        *_rollup_fields("dailyperformance"),
        *_rollup_fields("monthlyperformance"),
        *_rollup_fields("reportedperformance"),
        migrations.AddField("reportedperformance", "requests", models.PositiveBigIntegerField(default=0, help_text="Requests with per-request data.")),
        migrations.AddField("reportedperformance", "errors", models.PositiveBigIntegerField(default=0)),
        migrations.AddField("reportedperformance", "summary_requests", models.PositiveBigIntegerField(default=0, help_text="Requests known from summaries only.")),
        # Nullable before the conversion, so that going back re-adds them empty and `backward` fills them.
        *[migrations.AlterField(model, "performance", models.JSONField(null=True, help_text="finops.performance.measures.Performance.as_json()."))
          for model in ("dailyperformance", "monthlyperformance", "reportedperformance")],
        migrations.RunPython(forward, backward),
        migrations.RemoveField("usageline", LINE_JSON),
        migrations.RemoveField("dailyperformance", "performance"),
        migrations.RemoveField("monthlyperformance", "performance"),
        migrations.RemoveField("reportedperformance", "performance"),
    ]
