"""The what-if calculator's arithmetic, against figures computed by hand (docs/whatif.md has the formulas)."""

from decimal import Decimal

import pytest

from finops.whatif.calculator import (
    BATCH_ASSUMPTION,
    Figure,
    OfferingFigures,
    Profile,
    ProfileInvalid,
    best_of,
    compare,
    evaluate,
)
from finops.whatif.options import PRESETS, parse_options

from .whatif_helpers import picked

D = Decimal
COPILOT = PRESETS["coding-copilot"]
DOCUMENTS = PRESETS["document-processing"]


def offering(
    provider="moonshot",
    model="kimi-k2.6",
    *,
    family="kimi-k2.6",
    input=None,
    output=None,
    cached=None,
    blended=None,
    speed=None,
    ttft=None,
    context=None,
    discount="0",
) -> OfferingFigures:
    figure = lambda value: Figure(None if value is None else D(value), "entered")  # noqa: E731
    return OfferingFigures(
        provider=provider,
        model=model,
        family=family,
        input_per_mtok=figure(input),
        output_per_mtok=figure(output),
        cached_input_per_mtok=figure(cached),
        blended_per_mtok=figure(blended),
        output_tokens_per_s=figure(speed),
        ttft_seconds=figure(ttft),
        context_window=context,
        discount_pct=D(discount),
    )


def test_the_copilot_preset_is_880m_input_and_330m_output_tokens_and_costs_exactly_1353_at_060_and_250():
    assert (COPILOT.input_tokens, COPILOT.output_tokens, COPILOT.sla_seconds) == (880_000_000, 330_000_000, D(3))
    result = evaluate(COPILOT, offering(input="0.60", output="2.50", speed="981", ttft="0.2"))
    assert result.monthly_cost == D("1353.00")
    assert result.as_json()["monthly_cost"] == "1353.00"


def test_at_34_tokens_per_second_a_1500_token_answer_takes_44_1_s_and_fails_a_3_s_sla():
    result = evaluate(COPILOT, offering(input="0.60", output="2.50", speed="34", ttft="0"))
    assert result.latency_seconds.quantize(D("0.1")) == D("44.1")
    assert result.latency_seconds == D(1500) / D(34)
    assert result.meets_sla is False


def test_at_981_tokens_per_second_with_a_fifth_of_a_second_to_first_token_the_answer_meets_3_s():
    result = evaluate(COPILOT, offering(input="0.60", output="2.50", speed="981", ttft="0.2"))
    assert result.latency_seconds.quantize(D("0.001")) == D("1.729")  # 0.2 + 1500/981 = 1.7291…
    assert result.meets_sla is True


def test_a_blended_price_charges_every_token_at_it():
    result = evaluate(COPILOT, offering(blended="0.88", speed="100"))
    assert result.monthly_cost == D("1064.80")  # (880M + 330M) × 0.88 / 10⁶


def test_cached_input_tokens_are_charged_at_the_cached_price_and_at_the_input_price_without_one():
    cached = Profile(
        requests=220_000, input_tokens=880_000_000, cached_input_tokens=352_000_000, output_tokens=330_000_000
    )
    # 528M × 0.60 + 352M × 0.10 + 330M × 2.50 = 316.80 + 35.20 + 825.00
    assert evaluate(cached, offering(input="0.60", output="2.50", cached="0.10")).monthly_cost == D("1177.00")
    assert evaluate(cached, offering(input="0.60", output="2.50")).monthly_cost == D("1353.00")


def test_a_contract_discount_comes_off_the_monthly_cost():
    assert evaluate(COPILOT, offering(input="0.60", output="2.50", discount="10")).monthly_cost == D("1217.70")


def test_an_unknown_time_to_first_token_counts_as_zero_and_marks_the_latency_a_lower_bound():
    result = evaluate(COPILOT, offering(input="0.60", output="2.50", speed="981"))
    assert result.latency_seconds == D(1500) / D(981)
    assert result.latency_lower_bound is True
    assert "time to first token" in result.missing


def test_an_offering_lacking_a_figure_names_it_and_guesses_nothing():
    result = evaluate(COPILOT, offering(output="2.50"))
    assert (result.monthly_cost, result.latency_seconds, result.meets_sla) == (None, None, None)
    assert result.missing == ("input price", "output tokens/s")
    assert picked(
        result.as_json(),
        {
            "provider": "moonshot",
            "model": "kimi-k2.6",
            "family": "kimi-k2.6",
            "tier": "standard",
            "monthly_cost": None,
            "effective_per_mtok": None,
            "latency_seconds": None,
            "meets_sla": None,
            "recommended": False,
        },
    )


def test_a_batch_fits_the_nightly_window_at_the_offerings_throughput_under_the_stated_assumption():
    assert "100 requests in flight" in BATCH_ASSUMPTION
    fast = evaluate(DOCUMENTS, offering(input="0.60", output="2.50", speed="34", ttft="0.5"))
    # 10M/30 requests a night × (0.5 + 200/34 s) ÷ 100 in flight ÷ 3600 = 5.91 hours ≤ 8
    assert fast.batch_hours_per_night.quantize(D("0.01")) == D("5.91")
    assert (fast.sla_kind, fast.meets_sla) == ("batch", True)
    slow = evaluate(DOCUMENTS, offering(input="0.60", output="2.50", speed="10", ttft="0.5"))
    # 10M × 20.5 s / (30 × 100 × 3600) = 18.98 hours > 8
    assert slow.batch_hours_per_night.quantize(D("0.01")) == D("18.98")
    assert slow.meets_sla is False


def test_the_cheapest_offering_meeting_the_sla_is_highlighted_not_the_cheapest():
    moonshot = offering("moonshot", input="0.60", output="2.50", speed="34", ttft="0.4")
    cerebras = offering("cerebras", input="0.95", output="4.00", speed="981", ttft="0.2")
    unknown = offering("together")
    results = compare(COPILOT, [unknown, cerebras, moonshot])
    # Passing its gates first (cheapest first, unknown cost last), then those failing one, each with its reason.
    assert [r.provider for r in results] == ["cerebras", "together", "moonshot"]
    assert results[-1].gates == ("fails the SLA",)
    assert best_of(results).provider == "cerebras"
    assert best_of(results).monthly_cost == D("2156.00")  # 880 × 0.95 + 330 × 4.00


def test_a_context_window_too_small_for_a_request_is_said_and_never_highlighted():
    small = offering("groq", input="0.10", output="0.20", speed="500", ttft="0.1", context=4096)
    big = offering("cerebras", input="0.60", output="2.50", speed="981", ttft="0.2", context=131072)
    results = compare(COPILOT, [small, big])  # 4,000 + 1,500 tokens a request
    assert results[-1].provider == "groq"
    assert results[-1].fits_context is False
    assert "context window too small" in results[-1].gates
    assert best_of(results).provider == "cerebras"


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ({"requests": "-5"}, "requests"),
        ({"input_tokens": "many"}, "input_tokens"),
        ({"sla_seconds": "0"}, "sla_seconds"),
        ({"workload": "x", "requests": "5"}, "requests"),
        ({"sla_seconds": "3", "batch_window_hours": "8"}, "batch_window_hours"),
    ],
)
def test_bad_options_name_the_option(raw, field):
    with pytest.raises(ProfileInvalid) as caught:
        parse_options(raw)
    assert caught.value.field == field


def test_cached_input_beyond_the_input_is_refused_naming_it():
    with pytest.raises(ProfileInvalid) as caught:
        Profile(requests=1, input_tokens=10, cached_input_tokens=11, output_tokens=1)
    assert caught.value.field == "cached_input_tokens"
