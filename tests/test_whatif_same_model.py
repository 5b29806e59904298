"""Issue 28: a what-if a platform team would act on. Offerings of the models people buy seeded from the price map
(the same model on every cloud that sells it, each tier); the comparison answers the same model first, another
model only with eval evidence or the "no evidence" mark; an offering failing a gate is never the headline; the
effective price comes from the workload's own traffic (its cache-hit rate) beside the list price."""

import datetime as dt
import io
import json
from decimal import Decimal
from io import StringIO
from types import SimpleNamespace

import pytest
from django.core.management import call_command
from django.utils import timezone

from finops.models import Account, AttributionRule, Provider, User
from finops.web.period import today_utc
from finops.whatif.calculator import BATCH_TIER_GATE, NO_EVIDENCE
from finops.whatif.selectors import what_if
from finops.whatif.services import offering_upsert, offerings_seed
from ingest.services import usage_file_import
from tests.conftest import make_support_agent, make_support_team, make_user
from tests.data_once import built_once, world_rows

from .whatif_helpers import picked

REQUESTS = 200
JSON = {"content_type": "application/json"}


def sonnet_request(at: dt.datetime, n: int) -> dict:
    """1,000 input tokens of which 600 read from the prompt cache (60 % cache hits), 200 output, 4 s end to end."""
    usage = {"prompt_tokens": 1000, "completion_tokens": 200, "prompt_tokens_details": {"cached_tokens": 600}}
    return {
        "request_id": f"sonnet-{n}",
        "startTime": at.isoformat(),
        "endTime": (at + dt.timedelta(milliseconds=4000)).isoformat(),
        "completionStartTime": (at + dt.timedelta(milliseconds=1000)).isoformat(),
        "model": "claude-sonnet-4-5",
        "custom_llm_provider": "anthropic",
        "prompt_tokens": 1000,
        "completion_tokens": 200,
        "api_key": "sonnet" * 8,
        "team_id": "",
        "metadata": {"usage_object": usage},
        "request_tags": [],
        "status": "success",
    }


def _build_sonnet_workload(support_agent):
    """The support agent on Claude Sonnet 4.5 via Anthropic, through the gateway: 200 requests, 60 % cache hits."""
    support_agent.sla_seconds = Decimal(8)
    support_agent.save()
    account = Account.objects.create(
        name="gateway-anthropic", provider=Provider.objects.get(slug="anthropic"), connector="gateway_log"
    )
    AttributionRule.objects.create(workload=support_agent, priority=10, account=account, api_key="sonnet" * 8)
    start = timezone.now().astimezone(dt.UTC).replace(hour=9, minute=0, second=0, microsecond=0) - dt.timedelta(days=3)
    records = [sonnet_request(start + dt.timedelta(minutes=n * 5), n) for n in range(REQUESTS)]
    run = usage_file_import(
        account=account, stream=io.BytesIO(json.dumps(records).encode()), file_name="spend_logs.json"
    )
    assert run.status == "succeeded", run.error
    offerings_seed()
    return support_agent


@pytest.fixture(scope="module")
def world(django_db_setup, django_db_blocker):
    """The organisation, the support agent's traffic and the seeded offerings, built once for the module
    (tests/data_once.py): every test that names `sonnet_workload` reads them. (The seed itself is tested on an
    empty catalogue: tests/test_offerings.py.)"""
    with built_once(django_db_blocker):
        support_team = make_support_team()
        built = SimpleNamespace(
            fiona=make_user("fiona", User.Role.FINANCE),
            sam=make_user("sam", User.Role.MEMBER, team=support_team),
            sonnet_workload=_build_sonnet_workload(make_support_agent(support_team)),
        )
        yield built


sonnet_workload, fiona, sam = world_rows("sonnet_workload", "fiona", "sam")


def post_scores(client, rows):
    period = {"period_start": (today_utc() - dt.timedelta(days=20)).isoformat(), "period_end": today_utc().isoformat()}
    body = [{"workload": "support-agent", "name": "resolution-accuracy", **period, **row} for row in rows]
    response = client.post("/api/v1/evals", body, **JSON)
    assert response.status_code == 201, response.content


def test_the_batch_tier_is_priced_from_the_catalogs_batch_columns_cache_prices_included(sonnet_workload):
    result = what_if(None, today=today_utc(), workload="support-agent")
    batch = next(r for r in result.results if (r.provider, r.tier) == ("aws-bedrock", "batch"))
    figures = batch.offering
    assert (figures.input_per_mtok.value, figures.output_per_mtok.value) == (Decimal("1.5"), Decimal("7.5"))
    assert figures.cached_input_per_mtok.value == Decimal("0.15")  # the batch discount applies to cache reads
    assert figures.input_per_mtok.source.startswith("catalog batch")


# --- same model first ---


def test_a_sonnet_workload_on_anthropic_answers_sonnet_on_bedrock_and_vertex_first_with_effective_prices(
    sonnet_workload,
):
    result = what_if(None, today=today_utc(), workload="support-agent")
    first = result.results[0]
    assert (first.provider, first.model, first.tier, first.is_today) == (
        "anthropic",
        "claude-sonnet-4-5",
        "standard",
        True,
    )
    answers = [r for r in result.results if not r.is_today]
    # Same price on both clouds: the faster first (Vertex's entered speed is higher than Bedrock's).
    assert [(r.provider, r.model, r.tier) for r in answers[:2]] == [
        ("gcp-vertex", "claude-sonnet-4-5", "standard"),
        ("aws-bedrock", "claude-sonnet-4-5", "standard"),
    ]
    # Its own month: 200 × (400 × $3 + 600 × $0.30 + 200 × $15) ÷ 10⁶ = $0.876; 240k tokens → $3.65/M
    for answer in answers[:2]:
        assert answer.monthly_cost == Decimal("0.876")
        assert answer.effective_per_mtok == Decimal("3.65")
        assert answer.list_per_mtok == Decimal("5")  # (1,000 × $3 + 200 × $15) ÷ 1,200, no cache
        assert answer.group_name == "same model" and not answer.gates
        assert answer.offering.label in ("AWS Bedrock · Claude Sonnet 4.5", "GCP Vertex AI · Claude Sonnet 4.5")
    # The batch tier is not for an interactive workload: shown with the reason, after the same model's tiers that fit.
    batch = [r for r in result.results if r.tier == "batch" and r.model == "claude-sonnet-4-5"]
    assert batch and all(BATCH_TIER_GATE in r.gates and not r.best for r in batch)


def test_the_effective_price_at_60_percent_cache_hits_differs_from_the_list_price_as_the_cache_prices_say(
    sonnet_workload,
):
    result = what_if(None, today=today_utc(), workload="support-agent")
    assert result.profile.cache_hit_rate == Decimal("0.6")
    own = result.results[0]
    # list − effective = the cached share × (input − cached input price) × input tokens ÷ all tokens
    assert own.list_per_mtok - own.effective_per_mtok == Decimal("0.6") * (Decimal(3) - Decimal("0.3")) * 1000 / 1200
    # An offering with no cached-input price bills the cache hits as input: its effective price is its list price.
    no_cache = next(r for r in result.results if r.provider == "groq" and r.model == "llama-3.3-70b")
    assert no_cache.effective_per_mtok == no_cache.list_per_mtok


def test_a_cheaper_family_without_eval_evidence_is_marked_and_never_the_headline(sonnet_workload):
    result = what_if(None, today=today_utc(), workload="support-agent")
    haiku = next(
        r for r in result.results if (r.provider, r.model, r.tier) == ("anthropic", "claude-haiku-4-5", "standard")
    )
    assert haiku.group_name == "same family"
    assert haiku.monthly_cost < result.results[0].monthly_cost
    assert haiku.evidence_mark == NO_EVIDENCE and not haiku.best
    other = next(r for r in result.results if r.model == "gpt-oss-120b")
    assert other.group_name == "other family" and other.evidence_mark == NO_EVIDENCE
    assert result.best.model == "claude-sonnet-4-5"
    # Same model first, then the family, then other families.
    groups = [r.group for r in result.results]
    assert groups == sorted(groups)


def test_a_cheaper_family_with_eval_evidence_at_the_floor_is_recommended_and_below_it_is_gated(
    sonnet_workload, client_as, sam
):
    post_scores(
        client_as(sam),
        [
            {"provider": "anthropic", "model": "claude-sonnet-4-5", "score": "0.90"},
            {"provider": "anthropic", "model": "claude-haiku-4-5", "score": "0.91"},
            {"provider": "groq", "model": "gpt-oss-120b", "score": "0.70"},
        ],
    )
    result = what_if(None, today=today_utc(), workload="support-agent")
    assert (result.best.model, result.best.evidence) == ("claude-haiku-4-5", Decimal("0.91"))
    oss = next(r for r in result.results if (r.provider, r.model) == ("groq", "gpt-oss-120b"))
    assert any(g.startswith("below the quality floor") for g in oss.gates) and not oss.best


def test_an_offering_failing_the_sla_is_never_the_headline_even_when_cheapest(sonnet_workload):
    slow, _ = offering_upsert(
        provider=Provider.objects.get(slug="openrouter"),
        model="claude-sonnet-4-5",
        family="claude-sonnet-4-5",
        input_per_mtok=Decimal("0.5"),
        output_per_mtok=Decimal("1"),
        output_tokens_per_s=Decimal(5),  # 200 tokens at 5 tokens/s: 40 s, over the 8 s SLA
        ttft_seconds=Decimal(1),
    )
    result = what_if(None, today=today_utc(), workload="support-agent")
    row = next(r for r in result.results if r.provider == "openrouter")
    assert row.monthly_cost < result.best.monthly_cost
    assert row.gates == ("fails the SLA",) and not row.best
    assert result.best.provider != "openrouter"


def test_the_api_and_the_command_answer_the_same_comparison(sonnet_workload, client_as, fiona):
    response = client_as(fiona).get("/api/v1/whatif", {"workload": "support-agent"})
    assert response.status_code == 200
    rows = response.json()
    out = StringIO()
    call_command("whatif", "--workload", "support-agent", "--format", "json", stdout=out)
    assert json.loads(out.getvalue()) == rows
    assert picked(rows[1], {"provider": "gcp-vertex", "group": "same model", "effective_per_mtok": "3.6500"})
    assert picked(rows[2], {"provider": "aws-bedrock", "group": "same model", "effective_per_mtok": "3.6500"})
    haiku = next(r for r in rows if r["model"] == "claude-haiku-4-5")
    assert haiku["quality_evidence"] == NO_EVIDENCE


def test_a_batch_workload_is_pointed_at_the_same_models_batch_tier_at_half_the_price(sonnet_workload):
    sonnet_workload.latency_profile = "batch"
    sonnet_workload.sla_seconds = Decimal(3600)
    sonnet_workload.save()
    result = what_if(None, today=today_utc(), workload="support-agent")
    assert (result.best.model, result.best.tier) == ("claude-sonnet-4-5", "batch")
    assert result.best.monthly_cost == Decimal("0.438")  # the catalog's batch prices, cache reads at half too
    assert result.best.versus_today == Decimal("-0.5")


def test_an_implausible_per_request_figure_is_flagged_with_its_cause_and_never_the_headline(db):
    from finops.whatif.calculator import Figure, OfferingFigures, Profile, compare

    # 40 records carrying a day's tokens: 1M input and 500,000 output tokens "per request".
    profile = Profile(requests=40, input_tokens=40_000_000, output_tokens=20_000_000, batch_window_hours=Decimal(8))
    offering = OfferingFigures(
        provider="groq",
        model="gpt-oss-120b",
        family="gpt-oss-120b",
        input_per_mtok=Figure(Decimal("0.15")),
        output_per_mtok=Figure(Decimal("0.60")),
        output_tokens_per_s=Figure(Decimal(500)),
        ttft_seconds=Figure(Decimal(0)),
        context_window=131072,
    )
    [result] = compare(profile, [offering])
    assert result.meets_sla is True  # 40 requests fit any window …
    assert result.sanity == (
        "implausible: 1000 s per request (500000 output tokens per request): the usage counts fewer requests than "
        "were made (aggregated records?)",
        "implausible: 1,500,000 tokens per request, beyond the 131,072-token context window",
    )
    assert not result.best  # … but a verdict on an impossible request proves nothing


def test_more_output_per_request_than_any_model_writes_is_flagged_even_when_fast(db):
    from finops.whatif.calculator import Figure, OfferingFigures, Profile, evaluate

    # The demo's column classifier: a day's tokens in a few records, answered "in 200 s" at 3,000 tokens/s.
    profile = Profile(requests=10, input_tokens=10_000, output_tokens=6_000_000, batch_window_hours=Decimal(8))
    fast = OfferingFigures(
        provider="cerebras",
        model="gpt-oss-120b",
        family="gpt-oss-120b",
        input_per_mtok=Figure(Decimal("0.35")),
        output_per_mtok=Figure(Decimal("0.75")),
        output_tokens_per_s=Figure(Decimal(3000)),
        ttft_seconds=Figure(Decimal("0.1")),
    )
    result = evaluate(profile, fast)
    assert result.sanity == (
        "implausible: 600,000 output tokens per request, more than any model writes in one answer: the usage "
        "counts fewer requests than were made (aggregated records?)",
    )
