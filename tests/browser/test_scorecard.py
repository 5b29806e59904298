"""Finance opens the quarterly scorecard, sorts it by p99 latency and reads each workload's SLA verdict."""

import datetime as dt
import io
import json

import pytest

from finops.models import Account, AttributionRule, Provider, Workload
from finops.performance.selectors.scorecard import quarter_key
from finops.spend.services.attribution import history_reattribute
from ingest.services import usage_file_import

from .conftest import signed_in

pytestmark = pytest.mark.browser


def _requests(model: str, provider: str, at: dt.datetime, ms: int, count: int) -> list[dict]:
    return [
        {
            "request_id": f"{provider}-{n}",
            "startTime": (at + dt.timedelta(seconds=n)).isoformat(),
            "endTime": (at + dt.timedelta(seconds=n, milliseconds=ms)).isoformat(),
            "completionStartTime": (at + dt.timedelta(seconds=n, milliseconds=150)).isoformat(),
            "model": model,
            "custom_llm_provider": provider,
            "prompt_tokens": 400,
            "completion_tokens": 200,
            "api_key": "b" * 64,
            "metadata": {},
            "request_tags": [],
            "status": "success",
        }
        for n in range(count)
    ]


@pytest.fixture
def measured(support_agent):
    """Three days ago: the support agent (SLA 4 s) answers in 0.5 s on Cerebras; a triage workload (SLA 1 s) takes
    3 s on Groq."""
    triage = Workload.objects.create(
        team=support_agent.team, name="Support triage", slug="support-triage", latency_profile="realtime", sla_seconds=1
    )
    at = dt.datetime.combine(dt.datetime.now(dt.UTC).date() - dt.timedelta(days=3), dt.time(10), tzinfo=dt.UTC)
    for slug, workload, ms in (("cerebras", support_agent, 500), ("groq", triage, 3000)):
        account = Account.objects.create(
            name=f"{slug}-gateway", provider=Provider.objects.get(slug=slug), connector="gateway_log"
        )
        body = json.dumps(_requests("llama-3.3-70b", slug, at, ms, 50)).encode()
        assert (
            usage_file_import(account=account, stream=io.BytesIO(body), file_name="spend_logs.json").status
            == "succeeded"
        )
        AttributionRule.objects.create(workload=workload, priority=1 if slug == "groq" else 2, account=account)
    history_reattribute()
    return quarter_key(at.date())


def test_finance_sorts_the_scorecard_by_p99_and_reads_the_verdicts(page, fiona, measured):
    signed_in(page, "fiona", f"/scorecard/?quarter={measured}")
    page.wait_for_selector("table[data-table=scorecard]")
    assert page.locator("table[data-table=scorecard] tbody tr").count() == 2

    page.click("th[data-column=p99_ms] a.sort")  # numbers sort biggest first
    page.wait_for_url("**sort=p99_ms**dir=desc**")
    first = page.locator("table[data-table=scorecard] tbody tr").first
    assert "Support triage" in first.inner_text()
    badge = first.locator("[data-verdict]")
    assert badge.inner_text() == "Fails" and "against its 1 s SLA" in badge.get_attribute("title")
    assert page.get_attribute("th[data-column=p99_ms]", "aria-sort") == "descending"

    page.click("th[data-column=p99_ms] a.sort")  # and back, smallest first
    page.wait_for_url("**dir=asc**")
    first = page.locator("table[data-table=scorecard] tbody tr").first
    assert "Support agent" in first.inner_text() and first.locator("[data-verdict]").inner_text() == "Meets"
    page.click("[data-testid=scorecard-help] summary")
    assert "How p99 is computed" in page.inner_text("[data-testid=scorecard-help]")
