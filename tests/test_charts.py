"""Charts: a name keeps its colour everywhere, same-coloured series stay apart, axes read like the rest of the app,
and unknown cost is never drawn as $0. Pure functions of selector rows: no database."""

import datetime as dt
import itertools
import os
import subprocess
import sys
from decimal import Decimal

import pytest

from finops.reports import charts
from finops.sources.services.providers import BUILTIN_PROVIDERS

DAY1, DAY2, DAY3 = dt.date(2026, 11, 1), dt.date(2026, 11, 2), dt.date(2026, 11, 3)


def row(day, key, cost, category=None):
    return {
        "day": day,
        "provider_id": key,
        "cost": None if cost is None else Decimal(cost),
        **({"charge_category": category} if category else {}),
    }


def chart(rows, labels=None, **options):
    return charts.stacked_daily(rows, "provider_id", labels or {}, currency=options.pop("currency", "USD"), **options)


def by_name(figure) -> dict:
    return {trace["name"]: trace for trace in figure["data"]}


def colliding_names(count: int, *, avoid: str = "") -> list[str]:
    """`count` team-like names that hash onto one palette colour (other than `avoid`'s)."""
    groups: dict[str, list[str]] = {}
    for i in itertools.count():
        name = f"team-{i}"
        colour = charts.colour_for(name)
        if colour == avoid:
            continue
        groups.setdefault(colour, []).append(name)
        if len(groups[colour]) == count:
            return groups[colour]


# --- colours ---


def test_a_provider_keeps_its_colour_whatever_the_other_series_and_their_order():
    alone = by_name(chart([row(DAY1, 1, "5")], {1: "OpenAI"}))
    crowded_rows = [row(DAY1, key, "3") for key in (4, 3, 2, 1)] + [row(DAY1, None, "1")]
    crowded = by_name(chart(crowded_rows, {1: "OpenAI", 2: "Anthropic", 3: "Groq", 4: "team-search"}))
    reversed_ = by_name(chart(list(reversed(crowded_rows)), {1: "OpenAI", 2: "Anthropic", 3: "Groq", 4: "team-search"}))
    assert (
        alone["OpenAI"]["marker"]["color"]
        == crowded["OpenAI"]["marker"]["color"]
        == reversed_["OpenAI"]["marker"]["color"]
    )
    for name in ("Anthropic", "Groq", "team-search", "Unattributed"):
        assert crowded[name]["marker"]["color"] == reversed_[name]["marker"]["color"]


def test_two_users_charts_give_openai_the_same_colour():
    # Each user's overview has its own providers, ids and amounts: only the name decides the colour.
    finance = by_name(chart([row(DAY1, 7, "900"), row(DAY1, 8, "20")], {7: "Anthropic", 8: "OpenAI"}))
    team_lead = by_name(chart([row(DAY2, 31, "4")], {31: "OpenAI"}))
    assert finance["OpenAI"]["marker"]["color"] == team_lead["OpenAI"]["marker"]["color"]
    assert finance["OpenAI"]["marker"]["color"] != finance["Anthropic"]["marker"]["color"]


def test_the_seeded_providers_each_have_a_colour_of_their_own():
    colours = [charts.colour_for(name) for name in BUILTIN_PROVIDERS.values()]
    assert len(set(colours)) == len(colours)
    assert charts.colour_for("Mistral") not in colours
    assert charts.colour_for("Google Vertex AI") == charts.colour_for("GCP Vertex AI")


@pytest.mark.slow  # left out of make test-fast (tests/conftest.py says why)
def test_any_other_name_gets_the_same_colour_in_every_process():
    # Python salts str hashes per process: two workers must still agree on a team's or model's colour.
    script = "from finops.reports.charts import colour_for; print(colour_for('team-search'), colour_for('gpt-5-mini'))"
    answers = {
        subprocess.run(
            [sys.executable, "-c", script],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in ("1", "2", "3")
    }
    assert answers == {f"{charts.colour_for('team-search')} {charts.colour_for('gpt-5-mini')}\n"}


def test_unattributed_is_grey_and_taxes_and_credits_have_muted_colours_of_their_own():
    traces = by_name(
        chart(
            [row(DAY1, 1, "5"), row(DAY1, None, "2"), row(DAY1, None, "1", "tax"), row(DAY1, None, "-3", "credit")],
            {1: "OpenAI"},
        )
    )
    assert traces["Unattributed"]["marker"]["color"] == charts.FIXED_COLOURS["Unattributed"]
    assert traces["Tax"]["marker"]["color"] == charts.FIXED_COLOURS["Tax"]
    assert traces["Credits"]["marker"]["color"] == charts.FIXED_COLOURS["Credits"]
    assert len({t["marker"]["color"] for t in traces.values()}) == 4
    assert not set(charts.FIXED_COLOURS.values()) & set(charts.PALETTE)


def test_every_trace_of_every_chart_has_its_own_colour_set():
    figures = [
        chart([row(DAY1, 1, "5"), row(DAY1, 2, "1", "purchase")], {1: "Cerebras"}),
        charts.daily_tokens([{"day": DAY1, "input": 10, "output": 2}]),
    ]
    assert all(trace["marker"]["color"].startswith("#") for figure in figures for trace in figure["data"])


def test_two_series_on_one_colour_are_told_apart_by_a_pattern():
    first, second, third = colliding_names(3)
    labels = {1: first, 2: second, 3: third}
    traces = by_name(chart([row(DAY1, 1, "30"), row(DAY1, 2, "20"), row(DAY1, 3, "10")], labels))
    assert traces[first]["marker"]["color"] == traces[second]["marker"]["color"] == traces[third]["marker"]["color"]
    assert "pattern" not in traces[first]["marker"]
    shapes = [traces[second]["marker"]["pattern"]["shape"], traces[third]["marker"]["pattern"]["shape"]]
    assert all(shapes) and shapes[0] != shapes[1]
    # Without the collision the same series is a plain bar again, in its same colour.
    alone = by_name(chart([row(DAY1, 2, "20")], labels))
    assert alone[second]["marker"] == {"color": traces[second]["marker"]["color"]}


def test_a_known_provider_stays_plain_when_another_name_lands_on_its_colour():
    openai = charts.colour_for("OpenAI")
    lookalike = next(f"team-{i}" for i in itertools.count() if charts.colour_for(f"team-{i}") == openai)
    # The look-alike is the larger series, drawn first: the provider still keeps the plain fill.
    traces = by_name(chart([row(DAY1, 1, "1"), row(DAY1, 2, "50")], {1: "OpenAI", 2: lookalike}))
    assert "pattern" not in traces["OpenAI"]["marker"]
    assert traces[lookalike]["marker"]["pattern"]["shape"]


# --- what is drawn ---


def test_taxes_and_credits_are_series_of_their_own_and_not_in_the_providers_bar():
    traces = by_name(
        chart(
            [row(DAY1, 1, "10"), row(DAY1, 1, "2.5", "tax"), row(DAY1, 1, "-4", "credit"), row(DAY2, 1, "7")],
            {1: "OpenAI"},
        )
    )
    assert list(traces) == ["OpenAI", "Tax", "Credits"]
    assert traces["OpenAI"]["y"] == [10.0, 7.0]
    assert (traces["Tax"]["x"], traces["Tax"]["y"]) == (["2026-11-01"], [2.5])
    assert traces["Credits"]["y"] == [-4.0]


def test_an_unknown_cost_draws_nothing_and_never_a_zero_that_hides_it():
    traces = by_name(
        chart([row(DAY1, 1, "3"), row(DAY2, 1, None), row(DAY3, 1, "0"), row(DAY1, 2, None)], {1: "OpenAI", 2: "Groq"})
    )
    assert traces["OpenAI"]["x"] == ["2026-11-01", "2026-11-03"]  # no bar on the 2nd; a real $0 on the 3rd stays
    assert traces["OpenAI"]["y"] == [3.0, 0.0]
    assert "Groq" not in traces  # all of its cost unknown: no series drawn at $0


def test_many_series_keep_the_largest_and_sum_the_rest_into_other_with_the_same_totals():
    rows = [row(day, f"model-{i:02d}", f"{i}.10") for i in range(1, 31) for day in (DAY1, DAY2)]
    rows += [row(DAY1, None, "0.01"), row(DAY1, None, "1.5", "tax")]
    figure = chart(rows)
    names = [trace["name"] for trace in figure["data"]]
    kept = [f"model-{i:02d}" for i in range(30, 30 - charts.MAX_SERIES, -1)]  # largest first
    assert names == [*kept, "Other (20 more)", "Unattributed", "Tax"]
    for day in ("2026-11-01", "2026-11-02"):
        drawn = sum(Decimal(str(y)) for t in figure["data"] for x, y in zip(t["x"], t["y"], strict=True) if x == day)
        given = sum(r["cost"] for r in rows if r["day"].isoformat() == day)
        assert drawn == given
    other = by_name(figure)["Other (20 more)"]
    assert other["customdata"] == ["$212.00", "$212.00"]  # model-01 … model-20: 210 + 20 × 0.10


def test_one_series_too_many_is_drawn_by_its_name_not_as_other():
    figure = chart([row(DAY1, f"model-{i}", "1") for i in range(charts.MAX_SERIES + 1)])
    assert not any(trace["name"].startswith("Other") for trace in figure["data"])


# --- axes and hover ---


def test_the_money_axis_has_the_currency_symbol_and_compact_ticks():
    usd = chart([row(DAY1, 1, "1200")])["layout"]["yaxis"]
    assert usd["tickprefix"] == "$"
    assert usd.get("tickformat", "") == ""  # Plotly's own ticks with k/M/B, not "1,200" (",.0f") nor d3's "G"
    assert usd["exponentformat"] == "B" and usd["minexponent"] <= 3
    assert chart([row(DAY1, 1, "1")], currency="EUR")["layout"]["yaxis"]["tickprefix"] == "€"
    assert chart([row(DAY1, 1, "1")], currency="CHF")["layout"]["yaxis"]["tickprefix"] == "CHF "


def test_the_hover_shows_the_exact_amount_in_the_reporting_currency():
    traces = by_name(
        chart([row(DAY1, 1, "1000.115"), row(DAY1, 1, "43.005"), row(DAY2, 1, "0.001")], {1: "OpenAI"}, currency="EUR")
    )
    assert traces["OpenAI"]["customdata"] == ["€1,043.12", "<€0.01"]
    assert (
        "%{customdata}" in traces["OpenAI"]["hovertemplate"] and "%{fullData.name}" in traces["OpenAI"]["hovertemplate"]
    )


def test_a_monthly_chart_labels_its_axis_by_month():
    months = chart([row(dt.date(2026, 1, 1), 1, "4"), row(dt.date(2026, 2, 1), 1, "5")], {1: "OpenAI"}, monthly=True)
    assert months["layout"]["xaxis"]["tickformat"] == "%b %Y"
    assert months["layout"]["xaxis"]["dtick"] == "M1"
    assert months["data"][0]["x"] == ["2026-01-01", "2026-02-01"]
    assert chart([row(DAY1, 1, "4")])["layout"]["xaxis"].get("tickformat") is None  # dates as Plotly writes them


def test_the_tokens_axis_says_b_for_billions_never_g():
    figure = charts.daily_tokens([{"day": DAY1, "input": 3_400_000_000, "output": None}])
    yaxis = figure["layout"]["yaxis"]
    assert "s" not in yaxis.get("tickformat", "")  # d3's SI format is what writes "G"
    assert yaxis["exponentformat"] == "B"
    assert [t["y"] for t in figure["data"]] == [[3_400_000_000], [0]]


def test_a_few_days_are_labelled_one_tick_per_day_never_by_the_hour():
    assert chart([row(DAY1, 1, "4"), row(DAY2, 1, "5")])["layout"]["xaxis"]["dtick"] == charts.DAY_MS
    assert charts.daily_tokens([{"day": DAY1, "input": 1, "output": 1}])["layout"]["xaxis"]["dtick"] == charts.DAY_MS
    month = chart([row(DAY1 + dt.timedelta(days=n), 1, "1") for n in range(30)])
    assert "dtick" not in month["layout"]["xaxis"]  # Plotly's own ticks: days or weeks, by the chart's width
