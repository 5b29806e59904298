"""What a workload's owner sees of its performance (issue 12): the workload page's Performance section — per
provider × model and for the workload as a whole, with the SLA or batch-window verdict — its CSV, and the
provider page's measured speed, from gateway logs imported through the real import path and metrics reported
as percentiles only."""

import csv
import datetime as dt
import io
import json

import pytest
from django.urls import reverse

from finops.models import Account, AttributionRule, Provider, ReportedPerformance
from finops.performance.measures import Performance
from finops.performance.services.performance_rollup import performance_rollup_rebuild
from ingest.services import usage_file_import

DAY = dt.datetime(2026, 11, 20, 10, tzinfo=dt.UTC)


@pytest.fixture(autouse=True)
def _frozen(time_machine):
    time_machine.move_to(dt.datetime(2026, 11, 22, 12, tzinfo=dt.UTC))  # the default period: the last 30 days


def gateway(provider: str, name: str | None = None) -> Account:
    return Account.objects.create(
        name=name or f"{provider}-gateway", provider=Provider.objects.get(slug=provider), connector="gateway_log"
    )


def record(
    at: dt.datetime,
    n: int,
    *,
    provider: str,
    model: str,
    duration_ms: int,
    ttft_ms: int,
    output: int,
    status: str = "success",
) -> dict:
    """One request as LiteLLM's spend-log JSON writes it."""
    return {
        "request_id": f"{provider}-{at.isoformat()}-{n}",
        "startTime": (at + dt.timedelta(seconds=n)).isoformat(),
        "endTime": (at + dt.timedelta(seconds=n, milliseconds=duration_ms)).isoformat(),
        "completionStartTime": (at + dt.timedelta(seconds=n, milliseconds=ttft_ms)).isoformat(),
        "model": model,
        "custom_llm_provider": provider,
        "prompt_tokens": 1000,
        "completion_tokens": output,
        "api_key": "b" * 64,
        "team_id": "support",
        "metadata": {},
        "request_tags": [],
        "status": status,
    }


def import_log(account: Account, records: list[dict]) -> None:
    run = usage_file_import(
        account=account, stream=io.BytesIO(json.dumps(records).encode()), file_name="spend_logs.json"
    )
    assert run.status == "succeeded", run.error


def groq_and_cerebras(workload) -> None:
    """Groq: 98 requests of 500 ms (200 ms to first token, 150 tokens: 500 tokens/s) and 2 failures. Cerebras: 100
    requests of 5 s (100 ms to first token, 4,900 tokens: 1,000 tokens/s), every one over a 4 s SLA."""
    groq, cerebras = gateway("groq"), gateway("cerebras")
    for account in (groq, cerebras):
        AttributionRule.objects.create(workload=workload, priority=account.id, account=account)
    import_log(
        groq,
        [
            record(DAY, n, provider="groq", model="openai/gpt-oss-120b", duration_ms=500, ttft_ms=200, output=150)
            for n in range(98)
        ]
        + [
            record(
                DAY,
                98 + n,
                provider="groq",
                model="openai/gpt-oss-120b",
                duration_ms=300,
                ttft_ms=300,
                output=0,
                status="failure",
            )
            for n in range(2)
        ],
    )
    import_log(
        cerebras,
        [
            record(DAY, n, provider="cerebras", model="gpt-oss-120b", duration_ms=5000, ttft_ms=100, output=4900)
            for n in range(100)
        ],
    )


def page(client, workload, **query):
    return client.get(reverse("workload-detail", args=[workload.slug]), query)


def test_each_provider_and_model_is_judged_against_the_sla_and_the_workload_as_a_whole(client_as, ada, support_agent):
    groq_and_cerebras(support_agent)  # realtime, SLA 4 s

    response = page(client_as(ada), support_agent)

    section = response.context["performance"]
    rows = {row["label"]: row for row in section.rows}
    groq, cerebras, whole = rows["Groq"], rows["Cerebras"], section.total
    assert (groq["requests"], groq["errors"], groq["error_rate"]) == (100, 2, 0.02)
    assert groq["p50_s"] == pytest.approx(0.5, rel=0.01) and groq["p99_s"] == pytest.approx(0.5, rel=0.01)
    assert groq["ttft_p50_s"] == pytest.approx(0.2, rel=0.01)
    assert (groq["tokens_per_s"], groq["tokens_per_s_basis"]) == (500, "generation")  # 14,700 tokens over 29.4 s
    assert (groq["verdict_status"], groq["share_over_sla"]) == ("meets", 0)
    assert cerebras["tokens_per_s"] == 1000 and cerebras["p99_s"] == pytest.approx(5, rel=0.01)
    assert (cerebras["verdict_status"], cerebras["share_over_sla"]) == ("fails", 1)
    assert "p99 5 s against an SLA of 4 s" == cerebras["verdict_text"]
    # The workload: every request merged, so its p99 is the slow provider's and half its requests are over.
    assert (whole["requests"], whole["errors"], whole["share_over_sla"], whole["verdict_status"]) == (
        200,
        2,
        0.5,
        "fails",
    )
    assert whole["p99_s"] == pytest.approx(5, rel=0.01) and section.verdict.status == "fails"
    html = response.content.decode()
    assert 'data-testid="performance-verdict" data-status="fails"' in html
    assert "500 tok/s" in html and "1,000 tok/s" in html and "All providers" in html
    assert response.context["latency_chart"]["data"][1]["name"] == "SLA"  # daily p99 against the SLA line


def test_the_performance_csv_has_the_tables_columns_with_seconds_and_the_verdicts_reason(
    client_as, fiona, support_agent
):
    groq_and_cerebras(support_agent)

    download = page(client_as(fiona), support_agent, csv="performance")

    assert download["Content-Type"].startswith("text/csv")
    header, *rows = list(csv.reader(io.StringIO(download.content.decode())))
    by_provider = {row[0]: dict(zip(header, row)) for row in rows}
    assert list(by_provider) == ["Cerebras", "Groq", "All providers"]  # most requests first, then by name
    cerebras = by_provider["Cerebras"]
    assert (cerebras["Model id"], cerebras["Requests"], cerebras["Verdict"], cerebras["Over SLA"]) == (
        "gpt-oss-120b",
        "100",
        "Fails",
        "1.00",
    )
    assert float(cerebras["p99"]) == pytest.approx(5, rel=0.01)  # seconds
    assert (cerebras["Output speed"], cerebras["Speed basis"], cerebras["Source"]) == (
        "1000.00",
        "generation",
        "measured",
    )
    assert cerebras["Why"] == "p99 5 s against an SLA of 4 s"
    assert by_provider["Groq"]["Error rate"] == "0.02"


def test_metrics_reported_as_percentiles_are_marked_summary_only_and_as_reported(client_as, ada, support_agent):
    groq_and_cerebras(support_agent)
    groq, openai = Provider.objects.get(slug="groq"), Provider.objects.get(slug="openai")
    summary = Performance(summary_requests=40, summary_p99_ms=1800).columns()  # count + p99 only: not mergeable
    for provider, model in ((groq, "gpt-oss-120b"), (openai, "gpt-5-mini")):  # normalised ids, as the API stores them
        ReportedPerformance.objects.create(
            workload=support_agent, provider=provider, model=model, hour=DAY, kind="percentiles", **summary
        )
    performance_rollup_rebuild(days={DAY.date()})

    section = page(client_as(ada), support_agent).context["performance"]

    rows = {row["label"]: row for row in section.rows}
    reported = rows["OpenAI"]
    assert (reported["source"], reported["requests"], reported["p99_s"]) == ("reported", 40, None)
    assert reported["summary_note"] == "summary only: p99 ≤ 1.8 s"
    assert reported["verdict_status"] == "meets"  # its p99 is at most 1.8 s, within the 4 s SLA: certain
    assert reported["verdict_text"] == "summary only: p99 ≤ 1.8 s against an SLA of 4 s"
    mixed = rows["Groq"]
    assert (mixed["source"], mixed["requests"]) == ("measured + reported", 140)
    assert mixed["summary_note"] == "+ 40 requests summary only (p99 ≤ 1.8 s)"
    assert mixed["p99_s"] == pytest.approx(0.5, rel=0.01)  # the measured requests' distribution
    assert section.total["source"] == "measured + reported"


def test_a_batch_workload_is_judged_on_its_window_as_a_whole(client_as, ada, search_ranker):
    search_ranker.batch_window_hours = 4
    search_ranker.save()
    account = gateway("groq")
    AttributionRule.objects.create(workload=search_ranker, priority=1, account=account)
    night = dt.datetime(2026, 11, 19, tzinfo=dt.UTC)
    records = [
        record(
            night + dt.timedelta(hours=h),
            0,
            provider="groq",
            model="openai/gpt-oss-20b",
            duration_ms=900,
            ttft_ms=100,
            output=400,
        )
        for h in (1, 2, 3)
    ]
    records += [
        record(
            night + dt.timedelta(days=1, hours=h),
            0,
            provider="groq",
            model="openai/gpt-oss-20b",
            duration_ms=900,
            ttft_ms=100,
            output=400,
        )
        for h in range(1, 9)
    ]  # the second night overruns
    import_log(account, records)

    response = page(client_as(ada), search_ranker)

    section = response.context["performance"]
    verdict = section.verdict
    assert (verdict.kind, verdict.status, verdict.days_over, verdict.days, verdict.longest_span_hours) == (
        "batch",
        "fails",
        1,
        2,
        8,
    )
    assert [row["verdict"] for row in section.rows] == [None]  # no per-provider verdict: the window is the workload's
    assert section.total["verdict"] == "Fails"
    assert "work fits its 4 h window on 1 of 2 days; longest day 8 h" in response.content.decode()
    assert response.context["latency_chart"] is None


def test_a_workload_with_no_latency_data_says_how_to_get_some(client_as, ada, support_agent):
    response = page(client_as(ada), support_agent)
    assert response.context["performance"].total is None
    assert "No latency data: connect a gateway log or post metrics to /api/v1/metrics" in response.content.decode()


def test_a_member_sees_the_performance_of_their_teams_workloads_only(client_as, sam, support_agent, search_ranker):
    groq_and_cerebras(support_agent)
    other = gateway("groq", "groq-search")
    AttributionRule.objects.create(workload=search_ranker, priority=99, account=other)
    import_log(
        other,
        [
            record(DAY, n, provider="groq", model="openai/gpt-oss-120b", duration_ms=900, ttft_ms=100, output=80)
            for n in range(7)
        ],
    )
    client = client_as(sam)  # lead of Support

    assert page(client, search_ranker).status_code == 404
    assert page(client, search_ranker, csv="performance").status_code == 404
    assert page(client, support_agent).status_code == 200
    speed = client.get(reverse("provider-detail", args=["groq"])).context["tables"]["measured_speed"]
    assert [(row["model"], row["requests"]) for row in speed] == [("gpt-oss-120b", 100)]  # not Search's 7


def test_the_provider_page_shows_measured_speed_per_model_for_those_who_see_everything(
    client_as, ada, fiona, support_agent, search_ranker
):
    groq_and_cerebras(support_agent)
    unattributed = gateway("groq", "groq-sandbox")  # no rule: its requests belong to no workload
    import_log(
        unattributed,
        [
            record(DAY, n, provider="groq", model="openai/gpt-oss-20b", duration_ms=400, ttft_ms=100, output=300)
            for n in range(5)
        ],
    )

    for user in (ada, fiona):
        response = client_as(user).get(reverse("provider-detail", args=["groq"]))
        speed = {row["model"]: row for row in response.context["tables"]["measured_speed"]}
        assert set(speed) == {"gpt-oss-120b", "gpt-oss-20b"}  # normalised model ids
        assert (speed["gpt-oss-20b"]["requests"], speed["gpt-oss-20b"]["tokens_per_s"]) == (5, 1000)
        assert speed["gpt-oss-120b"]["ttft_p50_s"] == pytest.approx(0.2, rel=0.01)
        assert "Measured speed" in response.content.decode()
