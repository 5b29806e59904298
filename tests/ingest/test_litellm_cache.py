"""What LiteLLM's spend logs carry besides the totals (tests/ingest/litellm_records.py): cached tokens only in
`metadata.additional_usage_values`, for OpenAI, Anthropic and Bedrock shapes, and the responses LiteLLM served
from its own cache — read alike by the API pull, the JSON export and the CSV export (row and column readers)."""

import csv
import datetime as dt
import io
import json
from decimal import Decimal

import pytest
from django.core.management import call_command
from django.db.models import Sum
from django.urls import reverse

from finops.models import AttributionRule, GatewayCacheHit, UsageLine
from finops.spend.selectors.cache_hits import cache_savings
from ingest.connectors.base import GATEWAY_CACHE_HIT
from ingest.connectors.gateway.log import GatewayLog
from tests.fakes.litellm_proxy import SPEND_LOGS, SpendLogs
from tests.fakes.provider_server import FakeProviderServer
from tests.ingest.litellm_records import anthropic_usage, openai_usage, spend_log
from tests.ingest.test_litellm_api import comparable, fetch, gateway_account

JUN_14 = dt.datetime(2026, 6, 14, tzinfo=dt.UTC)


@pytest.fixture
def server():
    with FakeProviderServer() as fake:
        yield fake


def logs(day: dt.datetime = JUN_14) -> list[dict]:
    made = []
    for n in range(4):  # OpenAI: 204,800 prompt tokens, half of them cached
        made.append(
            spend_log(
                n,
                start=day + dt.timedelta(hours=9, minutes=n),
                provider="openai",
                model="gpt-4o",
                prompt=51_200,
                completion=100,
                extra_usage=openai_usage(51_200, 100, 25_600),
            )
        )
    made.append(
        spend_log(
            10,
            start=day + dt.timedelta(hours=10),
            provider="anthropic",
            model="claude-sonnet-4-20250514",
            prompt=3000 + 20_000 + 5000,
            completion=400,
            extra_usage=anthropic_usage(3000, 20_000, 5000),
        )
    )
    made.append(
        spend_log(
            20,
            start=day + dt.timedelta(hours=11),
            provider="bedrock",
            model="anthropic.claude-3-5-sonnet-20240620-v1:0",
            prompt=700 + 9000 + 1200,
            completion=90,
            extra_usage=anthropic_usage(700, 9000, 1200),
        )
    )
    for n in range(100):  # served from LiteLLM's cache: 1,200 input and 300 output tokens each
        made.append(
            spend_log(
                100 + n,
                start=day + dt.timedelta(hours=12, seconds=n),
                provider="openai",
                model="gpt-4o",
                prompt=1200,
                completion=300,
                extra_usage=openai_usage(1200, 300, 0),
                cache_hit=True,
            )
        )
    return made


def as_csv(records: list[dict]) -> bytes:
    """The LiteLLM_SpendLogs table exported as CSV: JSON columns as JSON text."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(records[0]), lineterminator="\n")
    writer.writeheader()
    for record in records:
        writer.writerow(
            {k: json.dumps(v) if isinstance(v, (dict, list)) else ("" if v is None else v) for k, v in record.items()}
        )
    return out.getvalue().encode()


def usage(rows) -> dict:
    return {
        (r.provider_slug, r.period_start.hour): (
            r.input_tokens,
            r.cached_input_tokens,
            r.cache_write_tokens,
            r.output_tokens,
            r.requests,
        )
        for r in rows
        if r.charge_category == "usage"
    }


def test_cached_tokens_only_in_additional_usage_values_are_exact_for_each_provider(server):
    server.route(SPEND_LOGS, SpendLogs(logs()))

    rows = fetch(server)

    assert usage(rows) == {
        ("openai", 9): (102_400, 102_400, 0, 400, 4),
        ("anthropic", 10): (3000, 20_000, 5000, 400, 1),
        ("aws-bedrock", 11): (700, 9000, 1200, 90, 1),
    }


def test_cache_hits_are_no_provider_usage_but_a_line_of_their_own(server):
    server.route(SPEND_LOGS, SpendLogs(logs()))

    rows = fetch(server)

    [hits] = [r for r in rows if r.charge_category == GATEWAY_CACHE_HIT]
    assert (hits.requests, hits.input_tokens, hits.output_tokens, hits.latency) == (100, 120_000, 30_000, None)
    assert sum(r.requests for r in rows if r.charge_category == "usage") == 6


def test_the_api_pull_the_json_export_and_the_csv_export_read_alike(server):
    records = logs()
    server.route(SPEND_LOGS, SpendLogs(records))
    pulled = fetch(server)
    data = as_csv(records)

    by_rows = list(GatewayLog.row_groups(io.BytesIO(data), file_name="spend_logs.csv").rows())
    by_columns = list(GatewayLog.column_groups(io.BytesIO(data), file_name="spend_logs.csv").rows())
    from_json = list(GatewayLog().parse(io.BytesIO(json.dumps(records).encode()), file_name="spend_logs.json"))

    assert comparable(by_columns) == comparable(by_rows) == comparable(from_json) == comparable(pulled)


# --- stored: the same lines by API and by file; cache hits apart, per workload ---


@pytest.fixture
def gateway(db, server):
    return gateway_account("gateway-prod", server, provider="openai")


def stored() -> tuple[list, list]:
    lines = sorted(
        UsageLine.objects.values_list(
            "provider__slug",
            "period_start",
            "model",
            "api_key_ref",
            "signature_id",
            "input_tokens",
            "cached_input_tokens",
            "cache_write_tokens",
            "output_tokens",
            "requests",
            "reporting_cost",
            "cost_basis",
            "latency",
        )
    )
    hits = sorted(
        GatewayCacheHit.objects.values_list(
            "provider__slug",
            "period_start",
            "model",
            "signature_id",
            "input_tokens",
            "cached_input_tokens",
            "output_tokens",
            "requests",
            "list_cost",
        )
    )
    return lines, hits


def test_pulled_and_imported_records_store_identical_lines_and_cache_hits(gateway, server, tmp_path, support_agent):
    AttributionRule.objects.create(workload=support_agent, priority=1, tags={"key_alias": "support-bot"})
    server.route(SPEND_LOGS, SpendLogs(logs()))
    call_command(
        "sync",
        "--account",
        "gateway-prod",
        "--start",
        "2026-06-14",
        "--end",
        "2026-06-15",
        stdout=io.StringIO(),
        stderr=io.StringIO(),
    )
    pulled = stored()

    UsageLine.objects.all().delete()
    GatewayCacheHit.objects.all().delete()
    export = tmp_path / "spend_logs.csv"
    export.write_bytes(as_csv(logs()))
    call_command("import_usage", str(export), "--account", "gateway-prod", stdout=io.StringIO(), stderr=io.StringIO())

    assert stored() == pulled
    lines, hits = pulled
    assert sum(line[9] for line in lines) == 6  # provider requests: the 100 cache hits are not among them
    assert UsageLine.objects.aggregate(n=Sum("input_tokens"))["n"] == 102_400 + 3000 + 700
    [hit] = hits
    assert hit[:3] == ("openai", JUN_14 + dt.timedelta(hours=12), "gpt-4o") and hit[4:8] == (120_000, 0, 30_000, 100)

    savings = cache_savings(start=JUN_14.date(), end=JUN_14.date(), workload=support_agent)
    assert savings.total["requests"] == 100 and savings.total["input_tokens"] == 120_000
    # gpt-4o at list (the catalog's $2.50 in, $10 out per M): 120k × 2.5 + 30k × 10 per M = $0.60, an estimate.
    assert savings.total["list_cost"] == hit[8] == Decimal("0.6")


def test_a_re_pull_replaces_the_cache_hits_of_its_window(gateway, server):
    server.route(SPEND_LOGS, SpendLogs(logs()))
    for _ in range(2):
        call_command(
            "sync",
            "--account",
            "gateway-prod",
            "--start",
            "2026-06-14",
            "--end",
            "2026-06-15",
            stdout=io.StringIO(),
            stderr=io.StringIO(),
        )

    assert GatewayCacheHit.objects.aggregate(n=Sum("requests"))["n"] == 100


def test_the_workload_and_source_pages_show_what_the_cache_served_as_an_estimate(
    gateway, server, support_agent, client_as, fiona
):
    AttributionRule.objects.create(workload=support_agent, priority=1, tags={"key_alias": "support-bot"})
    yesterday = dt.datetime.combine(dt.datetime.now(dt.UTC).date(), dt.time(), tzinfo=dt.UTC) - dt.timedelta(days=1)
    server.route(SPEND_LOGS, SpendLogs(logs(yesterday)))
    call_command(
        "sync",
        "--account",
        "gateway-prod",
        "--start",
        f"{yesterday:%Y-%m-%d}",
        "--end",
        f"{yesterday + dt.timedelta(days=1):%Y-%m-%d}",
        stdout=io.StringIO(),
        stderr=io.StringIO(),
    )
    client = client_as(fiona)

    for page in (reverse("workload-detail", args=["support-agent"]), reverse("source-detail", args=[gateway.pk])):
        html = client.get(page).content.decode()
        section = html[html.index('data-testid="cache-savings"') :]
        section = section[: section.index("</section>")]
        assert "Served from the gateway's cache" in section and "estimate" in section
        assert ">100<" in section and ">120.0k<" in section and "≈ $0.60" in section
