"""What a bench import stored, as row counts and digests, to hold two versions of the code to the same figures.

`python -m bench.stored_figures` (DJANGO_SETTINGS_MODULE and DATABASE_URL of a *_bench database) after an import of
a generated file (`manage.py bench_ingest` deletes its files: generate one with bench.gateway_export and import it
with ingest.services.usage_file_import) prints, per table the import writes — usage lines (with their signatures'
key, user, model, workload and team), daily, monthly and overview spend, signature-day, daily and monthly
performance, the days of lines alone — its rows and a digest of them (ids of accounts and providers left out: each
import makes a new account), the lines' totals (requests, tokens, cost, reporting cost), and a digest of every daily
and monthly performance row's p50, p95 and p99 (end to end and time to first token). Run it after the same file's
import by each version: equal output, equal stored figures (docs/ingestion.md, the gateway reader, session 16).
"""

import hashlib

QUERIES = {
    "usage lines": """SELECT l.period_start, l.period_end, l.model, l.model_raw, l.api_key_ref, l.user_ref,
        l.input_tokens, l.cached_input_tokens, l.cache_write_tokens, l.output_tokens, l.requests, l.cost::text,
        l.currency, l.reporting_cost::text, l.cost_basis, l.charge_category, l.errors, l.streamed_tokens,
        l.streamed_ms, l.timed_tokens, l.timed_ms, l.summary_requests, l.summary_p99_ms, l.latency::text,
        s.api_key_ref, s.user_ref, s.model, s.workload_id, s.team_id
        FROM finops_usageline l JOIN finops_linesignature s ON s.id = l.signature_id ORDER BY 1, 3, 5, 6, 25, 26""",
    "daily spend": """SELECT * FROM finops_dailyspend
        ORDER BY day, model, workload_id, team_id, currency, cost_basis, charge_category""",
    "monthly spend": "SELECT * FROM finops_monthlyspend ORDER BY 1, 2, 3, 4, 5, 6, 7, 8, 9",
    "team daily spend": "SELECT * FROM finops_teamdailyspend ORDER BY 1, 2, 3, 4, 5, 6",
    "daily performance": "SELECT * FROM finops_dailyperformance ORDER BY day, model, workload_id, team_id",
    "monthly performance": "SELECT * FROM finops_monthlyperformance ORDER BY month, model, workload_id, team_id",
    "signature-day performance": """SELECT p.day, s.api_key_ref, s.user_ref, s.model, p.hours, p.requests, p.errors,
        p.latency::text
        FROM finops_signaturedailyperformance p JOIN finops_linesignature s ON s.id = p.signature_id
        ORDER BY 1, 2, 3, 4, 5, 6, 7, 8""",
    "days of lines alone": "SELECT day FROM finops_linesaloneday ORDER BY 1",
}
_NOT_COMPARED = ("id", "account_id", "provider_id")  # new with each import


def _kept(columns: list[str], row: tuple) -> tuple:
    return tuple(value for name, value in zip(columns, row) if name not in _NOT_COMPARED)


def _digest(rows: list) -> str:
    return hashlib.sha256(repr(rows).encode()).hexdigest()[:16]


def stored_figures() -> list[str]:
    from django.db import connection

    from finops.performance.latency import LatencyDistribution, absorb_cells

    said = []
    with connection.cursor() as cursor:
        for name, query in QUERIES.items():
            cursor.execute(query)
            columns = [d.name for d in cursor.description]
            rows = [_kept(columns, row) for row in cursor.fetchall()]
            said.append(f"{name}: {len(rows)} rows, digest {_digest(rows)}")
        cursor.execute(
            "SELECT count(*), sum(requests), sum(input_tokens), sum(cached_input_tokens), sum(cache_write_tokens), "
            "sum(output_tokens), sum(cost), sum(reporting_cost) FROM finops_usageline"
        )
        said.append(f"lines, requests, input, cached, cache write, output tokens, cost, reporting: {cursor.fetchone()}")
        for table in ("finops_dailyperformance", "finops_monthlyperformance"):
            cursor.execute(f"SELECT * FROM {table}")
            columns = [d.name for d in cursor.description]
            latency = columns.index("latency")
            quantiles = []
            for row in cursor.fetchall():
                e2e, ttft = LatencyDistribution(), LatencyDistribution()
                absorb_cells(e2e, ttft, row[latency])
                figures = tuple(d.quantile(q) for d in (e2e, ttft) for q in (0.5, 0.95, 0.99))
                quantiles.append((*_kept(columns, row)[:6], *figures))
            quantiles.sort(key=repr)
            said.append(f"{table} p50, p95, p99 (end to end, first token): {len(quantiles)} rows, {_digest(quantiles)}")
    return said


if __name__ == "__main__":
    import django

    django.setup()
    print("\n".join(stored_figures()))
