"""Reported metrics (issue 12): teams that measure outside the gateway post an hour of requests per workload,
provider and model (`POST /api/v1/metrics`) as this product's distribution, a histogram or count + percentiles;
`GET /api/v1/metrics` answers the merged performance over any period. All or nothing, corrections replace,
team isolation."""

import datetime as dt
import math
import random

import pytest

from finops.models import Account, AttributionRule, DailyPerformance, MonthlyPerformance, Provider, ReportedPerformance
from finops.performance.latency import LatencyDistribution
from finops.performance.measures import COLUMNS
from finops.performance.selectors.performance import performance_by
from finops.spend.services.attribution import history_reattribute
from tests.test_performance_rollup import import_log, request

JSON = {"content_type": "application/json"}
DAY = dt.date(2026, 10, 5)
H = [dt.datetime(2026, 10, 5, hour, tzinfo=dt.UTC) for hour in range(24)]
PERIOD = {"start": "2026-10-05", "end": "2026-10-06"}


def row(hour: dt.datetime = H[10], **values) -> dict:
    return {
        "workload": "support-agent",
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
        "hour": hour.isoformat(),
        "requests": 100,
        "latency": {"histogram": [[100, 50], [200, 40], [500, 9], [1000, 1]]},
        **values,
    }


def post(client, rows):
    return client.post("/api/v1/metrics", rows, **JSON)


def figures(client, **params):
    response = client.get("/api/v1/metrics", {**PERIOD, **params})
    assert response.status_code == 200, response.content
    return response.json()


def exact(values: list[float], q: float) -> float:
    return sorted(values)[max(1, math.ceil(q * len(values))) - 1]


def stored_state():
    return (
        sorted(
            ReportedPerformance.objects.values_list(
                "workload_id", "provider_id", "model", "hour", "source", "kind", *COLUMNS
            )
        ),
        sorted(DailyPerformance.objects.values_list("day", "workload_id", "model", *COLUMNS)),
        sorted(MonthlyPerformance.objects.values_list("month", "workload_id", "model", *COLUMNS)),
    )


def test_a_histogram_report_places_each_bucket_at_its_upper_bound_so_percentiles_are_never_understated(
    sam, support_agent, client_as
):
    client = client_as(sam)
    response = post(client, [row(errors=3)])
    assert response.status_code == 201, response.content
    assert response.json() == {"rows": 1, "created": 1, "replaced": 0, "unchanged": 0}
    assert ReportedPerformance.objects.get().kind == "histogram"

    (found,) = figures(client)
    # 50 requests ≤ 100 ms, 40 ≤ 200, 9 ≤ 500, 1 ≤ 1000: the median is in the first bucket, the p95 and the
    # p99 (the 99th request) in the third; each read as its bucket's bound, within the sketch's 1 %.
    latency = found["latency_ms"]
    assert abs(latency["p50"] - 100) <= 1 and abs(latency["p95"] - 500) <= 5 and abs(latency["p99"] - 500) <= 5
    assert latency["p99"] >= 500 * 0.99  # the true p99 lies in (200, 500]: the bound is not below it
    assert (found["workload"], found["provider"], found["model"]) == ("support-agent", "anthropic", "claude-sonnet-4-5")
    assert (found["requests"], found["errors"], found["error_rate"], found["summary_only"]) == (
        100,
        3,
        "0.030000",
        False,
    )
    assert found["sla"]["status"] == "meets"  # support agent: 4 s SLA


def test_a_prometheus_cumulative_histogram_is_differenced_into_the_same_distribution(ada, support_agent, client_as):
    client = client_as(ada)
    plain = row(latency={"histogram": [[100, 50], [200, 40], [500, 9], [1000, 1], ["+Inf", 0]]})
    cumulative = row(
        H[11], latency={"histogram": [[100, 50], [200, 90], [500, 99], [1000, 100], ["+Inf", 100]], "cumulative": True}
    )
    assert post(client, [plain, cumulative]).status_code == 201
    first, second = ReportedPerformance.objects.order_by("hour")
    assert first.performance == second.performance


def test_an_unbounded_last_bucket_holding_requests_rejects_the_row(ada, support_agent, client_as):
    response = post(
        client_as(ada), [row(latency={"histogram": [[100, 50], [1000, 90], ["+Inf", 100]], "cumulative": True})]
    )
    assert response.status_code == 400
    assert response.json()["errors"] == [
        "row 1: latency.histogram: 10 requests above the last bound (1000 ms) have no upper bound: their latency is "
        "unknown; end with a bound above your timeout"
    ]


def test_a_percentiles_only_report_is_kept_as_a_summary_bounded_by_its_p99(sam, support_agent, client_as):
    client = client_as(sam)
    summary = row(requests=800, errors=2, latency={"count": 800, "p50_ms": 1900, "p95_ms": 4100, "p99_ms": 6200})
    assert post(client, [summary]).status_code == 201
    assert ReportedPerformance.objects.get().kind == "percentiles"

    (found,) = figures(client)
    assert found["summary_only"] is True
    assert found["latency_ms"] == {"p50": None, "p95": None, "p99": None}  # not measurable from a summary
    assert (found["summary_p99_ms"], found["summary_requests"], found["requests_with_distribution"]) == (6200, 800, 0)
    # its request and error counts add exactly, so they are in the error rate
    assert (found["requests"], found["errors"], found["error_rate"]) == (800, 2, "0.002500")
    # the 4 s SLA against a 6.2 s bound: nothing can be said
    assert (found["sla"]["status"], found["sla"]["bound"], found["sla"]["p99_ms"]) == ("unknown", True, 6200)
    # read over the whole month (the monthly rollup), the summary and its errors are the same
    (month,) = figures(client, start="2026-10-01", end="2026-11-01")
    assert month == found


def test_a_summary_beside_a_histogram_leaves_the_percentiles_to_the_histogram(sam, support_agent, client_as):
    client = client_as(sam)
    summary = row(H[11], requests=800, errors=2, latency={"count": 800, "p99_ms": 6200})
    assert post(client, [row(errors=3), summary]).status_code == 201
    (found,) = figures(client)
    assert found["summary_only"] is False and abs(found["latency_ms"]["p99"] - 500) <= 5
    assert (found["requests"], found["requests_with_distribution"], found["summary_requests"]) == (900, 100, 800)
    assert (found["errors"], found["error_rate"]) == (5, "0.005556")  # 5 of 900, sum over sum


def test_the_period_figures_are_the_percentiles_of_the_merged_distributions_not_averages(ada, support_agent, client_as):
    """Six hours posted as this product's distribution: five quiet ones and a busy one with a slow tail. The
    answer is the merged distribution's, within 1 % of the exact percentile of every request."""
    rng = random.Random(12)
    rows, everything, hourly_p99 = [], [], []
    for n, hour in enumerate(H[8:14]):
        busy = n == 3
        values = [
            rng.uniform(20_000, 40_000) if busy and i % 20 == 0 else rng.uniform(300, 700)
            for i in range(2000 if busy else 200)
        ]
        everything += values
        hourly_p99.append(exact(values, 0.99))
        ttft = LatencyDistribution.of(v / 4 for v in values)
        rows.append(
            row(hour, requests=len(values), latency=LatencyDistribution.of(values).as_json(), ttft=ttft.as_json())
        )
    client = client_as(ada)
    assert post(client, rows).status_code == 201
    assert set(ReportedPerformance.objects.values_list("kind", flat=True)) == {"sketch"}

    (found,) = figures(client)
    merged, merged_ttft = LatencyDistribution.of(everything), LatencyDistribution.of(v / 4 for v in everything)
    for name, q in (("p50", 0.5), ("p95", 0.95), ("p99", 0.99)):
        assert found["latency_ms"][name] == round(merged.quantile(q))
        assert abs(found["latency_ms"][name] - exact(everything, q)) <= 0.01 * exact(everything, q) + 1
        assert found["ttft_ms"][name] == round(merged_ttft.quantile(q))
    assert abs(sum(hourly_p99) / len(hourly_p99) - exact(everything, 0.99)) > 0.5 * exact(everything, 0.99)
    assert found["requests"] == len(everything) and found["sla"]["status"] == "fails"
    # the GET reads the rollup: the same figure as the selector every page reads
    (performance,) = performance_by([support_agent.id], DAY, DAY + dt.timedelta(days=1)).values()
    assert round(performance.p_ms(0.99)) == found["latency_ms"]["p99"]


def test_the_same_batch_posted_twice_leaves_the_same_state(sam, support_agent, client_as):
    client = client_as(sam)
    batch = [row(), row(H[11], latency={"count": 100, "p99_ms": 900})]
    assert post(client, batch).status_code == 201
    before = stored_state()
    again = post(client, batch)
    assert again.status_code == 201 and again.json() == {"rows": 2, "created": 0, "replaced": 0, "unchanged": 2}
    assert stored_state() == before


def test_a_later_report_for_the_same_hour_and_source_replaces_the_earlier_one(sam, support_agent, client_as):
    client = client_as(sam)
    post(client, [row(source="datadog"), row(source="grafana")])
    corrected = post(client, [row(source="datadog", requests=10, latency={"histogram": [[300, 10]]})])
    assert corrected.json() == {"rows": 1, "created": 0, "replaced": 1, "unchanged": 0}
    assert ReportedPerformance.objects.count() == 2  # one per source
    (found,) = figures(client)
    assert found["requests"] == 110  # grafana's 100 and datadog's corrected 10, never 210


def test_hours_with_an_offset_are_converted_to_utc(sam, support_agent, client_as):
    post(client_as(sam), [row(hour=dt.datetime(2026, 10, 5, 15, tzinfo=dt.timezone(dt.timedelta(hours=1))))])
    assert ReportedPerformance.objects.get().hour == H[14]


def test_a_bad_batch_is_rejected_whole_naming_each_row_and_field(sam, support_agent, search_ranker, client_as):
    client = client_as(sam)
    future = (dt.datetime.now(dt.UTC) + dt.timedelta(hours=3)).replace(minute=0, second=0, microsecond=0)
    rows = [
        row(),  # 1: fine
        row(H[1], requests=-5),  # 2
        row(H[2], errors=101),  # 3
        row(H[3], requests=99),  # 4: the histogram counts 100
        row(H[4], workload="search-ranker"),  # 5: another team's
        row(H[5], provider="acme-ai"),  # 6
        {**row(), "hour": "2026-10-05T10:30:00Z"},  # 7
        row(future),  # 8
        {**row(), "hour": "2026-10-05T10:00:00"},  # 9: no offset
        row(),  # 10: repeats row 1
        row(H[6], latency={"histogram": [[200, 50], [100, 50]]}),  # 11: bounds fall
        row(H[7], ttft={"count": 100, "p99_ms": 300}),  # 12
        row(H[8], output_tokens=5000),  # 13: without generation_seconds
        {**row(H[9]), "latency_p99": 5},  # 14: a typo
        row(H[12], requests=1, latency={"v": 1, "alpha": "0.01", "zero": 0, "buckets": {"5000": 1}}),  # 15
        row(H[13], latency={"count": 100, "p99_ms": 9e9}),  # 16: not milliseconds
    ]
    response = post(client, rows)
    assert response.status_code == 400
    errors = response.json()["errors"]
    assert errors == [
        "row 2: requests: -5 is negative",
        "row 3: errors: 101 failed of 100 requests",
        "row 4: latency: counts 100 requests, the row 99: a distribution counts every request of the hour, failed "
        "ones included",
        "row 5: workload: unknown workload 'search-ranker'",
        "row 6: provider: unknown provider 'acme-ai' (a provider's slug, as GET /api/v1/providers lists)",
        "row 7: hour: '2026-10-05T10:30:00Z' is 10:30:00 UTC, not the start of a UTC hour",
        f"row 8: hour: {future.isoformat()} is more than an hour ahead of now",
        "row 9: hour: '2026-10-05T10:00:00' has no UTC offset: add Z (UTC) or +hh:mm",
        "row 10: repeats row 1 (workload 'support-agent', provider 'anthropic', model 'claude-sonnet-4-5', hour "
        "2026-10-05T10:00:00+00:00, source ''): send one per key",
        "row 11: latency.histogram[1]: upper bounds must increase (100 ms after 200 ms)",
        "row 12: ttft: percentiles of time to first token cannot be kept (only a distribution or a histogram "
        "merges); send a histogram, or leave ttft out",
        "row 13: output_tokens and generation_seconds go together (output speed is tokens over the time spent "
        "generating them)",
        "row 14: unknown field 'latency_p99'",
        "row 15: latency.buckets: index 5000 is outside -345…914 (1 µs to a day)",
        "row 16: latency.p99_ms: 9000000000.0 ms is over a day (latencies are in milliseconds)",
    ]
    assert stored_state() == ([], [], [])  # nothing half-applied
    assert post(client, {"workload": "support-agent"}).status_code == 400  # not a list
    assert post(client, []).json() == {"errors": ["the batch has no rows"]}


def test_output_speed_is_generation_tokens_over_generation_time(sam, support_agent, client_as):
    client = client_as(sam)
    post(
        client,
        [
            row(output_tokens=45_000, generation_seconds="562.5"),
            row(H[11], output_tokens=5_000, generation_seconds=62.5),
        ],
    )
    (found,) = figures(client)
    assert (found["output_tokens_per_s"], found["output_tokens_per_s_basis"]) == ("80.0", "generation")


def test_the_model_is_normalised_like_usage_lines(sam, support_agent, client_as):
    client = client_as(sam)
    post(client, [row(model="claude-sonnet-4-5-20250929"), row(H[11], model="anthropic/claude-sonnet-4-5")])
    assert set(ReportedPerformance.objects.values_list("model", flat=True)) == {"claude-sonnet-4-5"}
    (found,) = figures(client)
    assert found["requests"] == 200


def test_who_may_post_and_read_metrics(ada, fiona, sam, tess, support_agent, search_ranker, client_as):
    assert post(client_as(fiona), [row()]).status_code == 403  # finance reads, writes none
    assert post(client_as(tess), [row()]).json()["errors"] == ["row 1: workload: unknown workload 'support-agent'"]
    assert post(client_as(sam), [row()]).status_code == 201
    assert post(client_as(ada), [row(workload="search-ranker")]).status_code == 201  # admins: any workload

    assert [f["workload"] for f in figures(client_as(fiona))] == ["search-ranker", "support-agent"]
    assert [f["workload"] for f in figures(client_as(tess))] == ["search-ranker"]
    assert client_as(tess).get("/api/v1/metrics", {**PERIOD, "workload": "support-agent"}).status_code == 404
    assert [f["workload"] for f in figures(client_as(sam), workload="support-agent")] == ["support-agent"]
    assert client_as(sam).get("/api/v1/metrics", {**PERIOD, "end": "2026-10-01"}).status_code == 400
    assert client_as(sam).get("/api/v1/metrics", {**PERIOD, "period": "2026Q4"}).status_code == 400  # unknown parameter
    assert client_as(sam).get("/api/v1/metrics", {"start": "2026-10-05"}).status_code == 400  # end required


def test_an_empty_period_answers_an_empty_list(sam, support_agent, client_as):
    assert figures(client_as(sam)) == []


@pytest.mark.parametrize("path", [b"/api/v1/metrics", b"/api/v1/evals"])
def test_the_metrics_and_evals_apis_are_in_the_openapi_schema(ada, client_as, path):
    schema = client_as(ada).get("/api/schema/", {"format": "json"})
    assert schema.status_code == 200 and path in schema.content


def test_gateway_timings_and_reports_merge_and_only_those_who_see_every_team_see_unattributed_requests(
    ada, fiona, sam, support_agent, client_as
):
    gateway = Account.objects.create(
        name="gateway", provider=Provider.objects.get(slug="groq"), connector="gateway_log"
    )
    import_log(gateway, [request(H[9] + dt.timedelta(minutes=n), 400, team="nobody") for n in range(3)])  # no rule
    groq = {"provider": "groq", "model": "llama-3.3-70b-versatile"}
    assert post(client_as(sam), [row(**groq, requests=2, latency={"histogram": [[2000, 2]]})]).status_code == 201
    assert [(f["workload"], f["requests"]) for f in figures(client_as(ada))] == [("support-agent", 2), (None, 3)]
    assert [f["workload"] for f in figures(client_as(fiona))] == ["support-agent", None]
    assert [f["workload"] for f in figures(client_as(sam))] == ["support-agent"]

    # once a rule gives the gateway's requests to the support agent, its timings and its report are one merge
    AttributionRule.objects.create(workload=support_agent, priority=1, account=gateway)
    history_reattribute()
    (found,) = figures(client_as(sam))
    assert (
        found["requests"] == 5
        and abs(found["latency_ms"]["p50"] - 400) <= 4
        and abs(found["latency_ms"]["p99"] - 2000) <= 20
    )


def test_the_error_rate_counts_reports_that_said_how_many_failed_and_not_old_lines_that_did_not():
    from finops.performance.measures import Performance

    old = Performance.from_json({"count": 40, "sum_ms": 20000, "p50_ms": 450, "p95_ms": 900, "max_ms": 1800})
    report = Performance(summary_requests=100, summary_counted=100, summary_errors=2, summary_p99_ms=6200.0)
    measured = Performance()
    for n in range(10):
        measured.add_request(duration_ms=500, ttft_ms=100, output_tokens=10, failed=n == 0)
    total = Performance()
    for part in (old, report, measured):
        total.absorb(Performance.from_json(part.as_json()))  # as stored, then merged
    assert (total.all_requests, total.all_errors, total.summary_p99_ms) == (150, 3, 6200.0)
    assert total.error_rate == 3 / 110  # the old lines' 40 requests said nothing of failures
