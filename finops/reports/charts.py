"""Selector output → Plotly figures (as JSON for the template). No ORM here; floats only inside chart JSON.

Colours belong to names, not to trace order: a provider, model or team is drawn in the same colour on every
page and for every user (colour_for). Money is summed as Decimal and turned into floats only for the bars; the
hover text is the exact amount formatted by finops.core.display, like the tables.
"""

import datetime as dt
import functools
import json
import zlib
from collections import defaultdict
from decimal import Decimal

import plotly.graph_objects as go

from finops.core.display import UNATTRIBUTED, currency_symbol, money_exact

LAYOUT = {
    "margin": {"l": 56, "r": 16, "t": 16, "b": 40},
    "height": 360,
    "paper_bgcolor": "rgba(0,0,0,0)",
    "plot_bgcolor": "rgba(0,0,0,0)",
    "font": {"family": "system-ui, -apple-system, Segoe UI, sans-serif", "size": 12},
    # Below the bars, left-aligned, and at most ~30 % of the chart's height: past that the legend scrolls
    # instead of squeezing the bars (a phone fits few entries per line).
    "legend": {"orientation": "h", "x": 0, "xanchor": "left", "y": -0.12, "yanchor": "top", "maxheight": 0.3},
    "hovermode": "x unified",
}

CHARGE_LABELS = {"tax": "Tax", "credit": "Credits", "purchase": "Purchases", "adjustment": "Adjustments"}

# Twenty hues told apart on a white card, greys left out (grey means "not attributed" or "other").
PALETTE = (
    "#10a37f",  # green
    "#d97757",  # clay
    "#ff9900",  # amber
    "#0078d4",  # blue
    "#e0413a",  # red
    "#a855f7",  # purple
    "#ec4899",  # pink
    "#1e3a8a",  # navy
    "#6366f1",  # indigo
    "#92400e",  # brown
    "#06b6d4",  # cyan
    "#eab308",  # yellow
    "#65a30d",  # lime
    "#f9a8d4",  # rose
    "#5eead4",  # aqua
    "#93c5fd",  # sky
    "#fdba74",  # peach
    "#c4b5fd",  # lavender
    "#14532d",  # forest
    "#a3e635",  # spring
)
# The providers people compare every day get a slot of their own, so no two of them ever share a colour;
# names as seeded (finops/sources/services/providers.py) and as people also write them.
PROVIDER_SLOTS = {
    "openai": 0,
    "anthropic": 1,
    "aws bedrock": 2,
    "amazon bedrock": 2,
    "azure openai": 3,
    "gcp vertex ai": 4,
    "google vertex ai": 4,
    "vertex ai": 4,
    "groq": 5,
    "cerebras": 6,
    "moonshot (kimi)": 7,
    "moonshot ai": 7,
    "moonshot": 7,
    "openrouter": 8,
    "fireworks ai": 9,
    "fireworks": 9,
    "together ai": 10,
    "together": 10,
    "mistral": 11,
    "mistral ai": 11,
    "deepinfra": 12,
}
OTHER = "Other"
# Not spend on a provider or model: muted, so the eye goes to usage first.
FIXED_COLOURS = {
    UNATTRIBUTED: "#8b95a1",
    OTHER: "#cfd5dc",
    "Tax": "#b9ab8c",
    "Credits": "#8fbfae",
    "Purchases": "#a9a4cc",
    "Adjustments": "#cfa9a9",
    "Input tokens": "#6b9bd8",
    "Output tokens": "#e8a15c",
}
CHARGE_FALLBACK_COLOUR = "#bcc3cc"  # a charge category not listed above
# A second, third… series of one chart on a colour already taken keeps the colour and gets a pattern.
PATTERNS = ("/", "x", ".", "\\", "+", "|", "-")
# Beyond this many usage series the smallest are drawn as one "Other (n more)" series (the table lists them all).
MAX_SERIES = 10
# Up to two weeks of daily bars get one tick per day (Plotly's own choice past that is never under a day).
SHORT_SPAN_DAYS = 14
DAY_MS = 86_400_000


def colour_for(name: str) -> str:
    """The colour of a series, from its name alone (same on every page, for every user, in every process)."""
    if name in FIXED_COLOURS:
        return FIXED_COLOURS[name]
    if name.startswith(f"{OTHER} ("):
        return FIXED_COLOURS[OTHER]
    key = " ".join(name.casefold().split())
    if key in PROVIDER_SLOTS:
        return PALETTE[PROVIDER_SLOTS[key]]
    # crc32, not hash(): Python salts str hashes per process, and every worker must agree.
    return PALETTE[zlib.crc32(key.encode()) % len(PALETTE)]


def stacked_daily(rows: list[dict], dimension: str, labels: dict, *, currency: str, monthly: bool = False) -> dict:
    """A stacked bar per day (per month with `monthly`: `day` is then the month's first day), one trace per value
    of `dimension` (labels maps ids to names). Rows whose `charge_category` is not usage (tax, credits, fees)
    are their own labelled series, not part of a provider's or model's bar. Unknown cost (None) draws nothing:
    no bar, never a 0. Usage series beyond the MAX_SERIES largest are summed into one "Other" series."""
    usage: dict[str, dict] = defaultdict(lambda: defaultdict(Decimal))
    charges: dict[str, dict] = defaultdict(lambda: defaultdict(Decimal))
    for row in rows:
        if row["cost"] is None:
            continue
        category = row.get("charge_category") or "usage"
        if category != "usage":
            charges[CHARGE_LABELS.get(category, category.capitalize())][row["day"]] += row["cost"]
        else:
            key = row[dimension]
            name = labels.get(key, UNATTRIBUTED if key is None else str(key))
            usage[name][row["day"]] += row["cost"]
    series = _ordered(usage, charges)
    traces = [_money_bar(name, points, currency) for name, points in series]
    _tell_apart(traces)
    days = {day for _, points in series for day in points}
    return figure_of(traces, yaxis=money_axis(currency), xaxis=_x_axis(days, monthly=monthly))


def money_axis(currency: str, *, from_zero: bool = False) -> dict:
    """The y axis of an amount in `currency`: the currency's symbol ("$", or "CHF " where no symbol is unambiguous)
    before Plotly's own tick labels with exponentformat "B": 1.2k, 3.4M, 5B (d3's ".2s" would say "G"); from
    hundreds up (minexponent 2), so an axis to $1,200 reads "$0.4k … $1.2k" while cents stay "$0.05"."""
    axis = {
        "tickprefix": currency_symbol(currency),
        "exponentformat": "B",
        "minexponent": 2,
        "title": {"text": currency},
        "automargin": True,
    }
    return {**axis, "rangemode": "tozero"} if from_zero else axis


def daily_tokens(rows: list[dict]) -> dict:
    """Input and output tokens per day, as two stacked bars."""
    days = [row["day"] for row in rows]
    traces = []
    for name, key in (("Input tokens", "input"), ("Output tokens", "output")):
        trace = _bar(name, days, [int(r[key] or 0) for r in rows])
        trace["hovertemplate"] = "%{fullData.name}: %{y:,}<extra></extra>"
        traces.append(trace)
    yaxis = {"exponentformat": "B", "minexponent": 2, "title": {"text": "tokens"}, "automargin": True}
    return figure_of(traces, yaxis=yaxis, xaxis=_x_axis(set(days)))


def _x_axis(days: set, *, monthly: bool = False) -> dict:
    if monthly:
        return {"tickformat": "%b %Y", "dtick": "M1", "hoverformat": "%B %Y"}
    axis = {"hoverformat": "%a %-d %b %Y"}
    if days and (max(days) - min(days)).days < SHORT_SPAN_DAYS:
        axis["dtick"] = DAY_MS  # left to itself, Plotly labels a few days' bars by the hour ("12:00", "18:00")
    return axis


def _ordered(usage: dict, charges: dict) -> list[tuple[str, dict]]:
    """Largest usage first (the bottom of the stack, the start of the legend), the long tail as "Other",
    then Unattributed, then taxes, credits and other charges."""
    unattributed = usage.pop(UNATTRIBUTED, None)
    ranked = sorted(usage.items(), key=lambda item: (-abs(sum(item[1].values())), item[0]))
    if len(ranked) > MAX_SERIES + 1:  # folding a single series into "Other" would only hide its name
        kept, tail = ranked[:MAX_SERIES], ranked[MAX_SERIES:]
        other: dict = defaultdict(Decimal)
        for _, points in tail:
            for day, cost in points.items():
                other[day] += cost
        ranked = [*kept, (f"{OTHER} ({len(tail)} more)", other)]
    if unattributed is not None:
        ranked.append((UNATTRIBUTED, unattributed))
    order = list(CHARGE_LABELS.values())
    return ranked + sorted(
        charges.items(), key=lambda item: (order.index(item[0]) if item[0] in order else len(order), item[0])
    )


def _tell_apart(traces: list[dict]) -> None:
    """Two series of one chart on the same colour: the first keeps a plain fill, later ones get a pattern.
    Series with a colour of their own (known providers, Unattributed, charges) count as first."""
    seen: dict[str, int] = defaultdict(int)
    for trace in sorted(traces, key=lambda t: not _has_own_colour(t["name"])):  # stable: otherwise chart order
        colour = trace["marker"]["color"]
        if seen[colour]:
            shape = PATTERNS[(seen[colour] - 1) % len(PATTERNS)]
            trace["marker"]["pattern"] = {
                "shape": shape,
                "fillmode": "overlay",
                "fgcolor": "#ffffff",
                "fgopacity": 0.75,
            }
        seen[colour] += 1


def _has_own_colour(name: str) -> bool:
    return name in FIXED_COLOURS or " ".join(name.casefold().split()) in PROVIDER_SLOTS


# Plotly's figure objects validate every point, which took longer than the SQL for a year of daily bars by
# team; the traces are plain JSON of the same shape instead, and only the layout (with Plotly's default
# template) goes through Plotly, once per distinct axis.


def _bar(name: str, x: list, y: list) -> dict:
    return {
        "name": name,
        "x": [v.isoformat() if isinstance(v, dt.date) else v for v in x],
        "y": y,
        "type": "bar",
        "marker": {"color": colour_for(name)},
    }


def _money_bar(name: str, points: dict, currency: str) -> dict:
    days = sorted(points)
    trace = _bar(name, days, [float(points[day]) for day in days])
    # The hover says what the tables say ("$1,043.12", "<$0.01"): formatted from the Decimal, not the float.
    trace["customdata"] = [money_exact(points[day], currency) for day in days]
    trace["hovertemplate"] = "%{fullData.name}: %{customdata}<extra></extra>"
    return trace


@functools.lru_cache(maxsize=16)
def _layout_json(axes_json: str) -> str:
    fig = go.Figure()
    # "relative": credits (negative) stack down from zero instead of eating into the day's positive bar.
    fig.update_layout(**LAYOUT, barmode="relative", **json.loads(axes_json))
    return json.dumps(json.loads(fig.to_json())["layout"])


def figure_of(traces: list[dict], *, yaxis: dict, xaxis: dict | None = None) -> dict:
    axes = {"yaxis": yaxis, **({"xaxis": xaxis} if xaxis else {})}
    return {"data": traces, "layout": json.loads(_layout_json(json.dumps(axes, sort_keys=True)))}


CAP_LINE_COLOUR = "#e0413a"
FORECAST_COLOUR = "#8b95a1"
SPENT_COLOUR = "#0078d4"


def burn_up(
    points: list[dict],
    *,
    amount: Decimal,
    forecast: Decimal | None,
    forecast_from: tuple[dt.date, Decimal] | None,
    period_start: dt.date,
    period_end: dt.date,
    currency: str,
    through: dt.date | None = None,
) -> dict:
    """A cap's burn-up: cumulative spend by day (points: [{day, cost}]; days without spend may be missing and are
    drawn flat, from the period's first day up to `through`, else the last point) against the cap's amount across
    the period, and the forecast as a dashed line from `forecast_from` (the last complete day and the spend up to
    it) to the period's last day. Each point is the spend up to the end of its day."""
    last_day = period_end - dt.timedelta(days=1)
    by_day: dict[dt.date, Decimal] = defaultdict(Decimal)
    for point in points:
        by_day[point["day"]] += point["cost"] or Decimal(0)
    until = through or max(by_day, default=None)
    cumulative, total, day = [], Decimal(0), period_start
    while until is not None and day <= min(until, last_day):
        total += by_day.get(day, Decimal(0))
        cumulative.append((day, total))
        day += dt.timedelta(days=1)
    traces = [line_trace("Spent", cumulative, currency, colour=SPENT_COLOUR, mode="lines+markers")]
    traces.append(
        line_trace("Cap", [(period_start, amount), (last_day, amount)], currency, colour=CAP_LINE_COLOUR, dash="solid")
    )
    if forecast is not None and forecast_from is not None:
        traces.append(
            line_trace("Forecast", [forecast_from, (last_day, forecast)], currency, colour=FORECAST_COLOUR, dash="dash")
        )
    yaxis = money_axis(currency, from_zero=True)
    xaxis = {"hoverformat": "%a %-d %b %Y", "range": [period_start.isoformat(), last_day.isoformat()]}
    return figure_of(traces, yaxis=yaxis, xaxis=xaxis)


def line_trace(
    name: str,
    points: list[tuple[dt.date, Decimal]],
    currency: str,
    *,
    colour: str,
    mode: str = "lines",
    dash: str = "solid",
) -> dict:
    return {
        "name": name,
        "x": [day.isoformat() for day, _ in points],
        "y": [float(value) for _, value in points],
        "type": "scatter",
        "mode": mode,
        "line": {"color": colour, "dash": dash, "width": 2},
        "customdata": [money_exact(value, currency) for _, value in points],
        "hovertemplate": "%{fullData.name}: %{customdata}<extra></extra>",
    }


OUTCOME_COLOUR = "#0078d4"
TARGET_COLOUR = "#e0413a"


def cost_per_outcome_trend(
    points: list[dict], *, unit: str, currency: str, target: Decimal | None = None, monthly: bool = False
) -> dict:
    """Cost per outcome by day (by month with `monthly`; points: finops.performance.selectors.outcomes.trend). A point
    with no outcomes or an unknown cost is a gap in the line (null), never a 0; the target, where set, a flat line."""
    x = [p["point"].isoformat() for p in points]
    trace = {
        "name": f"Cost per {unit or 'outcome'}",
        "x": x,
        "y": [None if p["per_outcome"] is None else float(p["per_outcome"]) for p in points],
        "type": "scatter",
        "mode": "lines+markers",
        "connectgaps": False,
        "line": {"color": OUTCOME_COLOUR, "width": 2},
        "customdata": [[_per_outcome_text(p["per_outcome"], currency), p["outcomes"]] for p in points],
        "hovertemplate": "%{customdata[0]} per outcome, %{customdata[1]:,} outcomes<extra></extra>",
    }
    traces = [trace]
    if target is not None and points:
        traces.append(
            line_trace(
                "Target",
                [(points[0]["point"], target), (points[-1]["point"], target)],
                currency,
                colour=TARGET_COLOUR,
                dash="dash",
            )
        )
    yaxis = {
        "tickprefix": currency_symbol(currency),
        "title": {"text": f"{currency} per {unit or 'outcome'}"},
        "automargin": True,
        "rangemode": "tozero",
    }
    return figure_of(traces, yaxis=yaxis, xaxis=_x_axis({p["point"] for p in points}, monthly=monthly))


def _per_outcome_text(value, currency: str) -> str:
    from finops.core.display import per_outcome  # here, not at the top: this module only adds functions (issue 12)

    return per_outcome(value, currency)


P99_COLOUR = "#0078d4"
SLA_COLOUR = "#e0413a"


def daily_p99(points: list[dict], *, sla_seconds: Decimal | None) -> dict:
    """A workload's p99 end-to-end latency by day (points: finops.performance.selectors.workload_performance.daily_p99,
    each day's p99 from that day's merged distribution) against its SLA, where set, as a flat line. A day with no timed
    requests is a gap, never a 0."""
    from finops.core.display import count, duration  # here, not at the top: this module only adds functions (issue 12)

    trace = {
        "name": "p99 latency",
        "x": [p["day"].isoformat() for p in points],
        "y": [p["p99_s"] for p in points],
        "type": "scatter",
        "mode": "lines+markers",
        "connectgaps": False,
        "line": {"color": P99_COLOUR, "width": 2},
        "customdata": [[duration(p["p99_s"]), count(p["requests"])] for p in points],
        "hovertemplate": "p99 %{customdata[0]} over %{customdata[1]} requests<extra></extra>",
    }
    traces = [trace]
    if sla_seconds is not None and points:
        sla = float(sla_seconds)
        traces.append(
            {
                "name": "SLA",
                "x": [points[0]["day"].isoformat(), points[-1]["day"].isoformat()],
                "y": [sla, sla],
                "type": "scatter",
                "mode": "lines",
                "line": {"color": SLA_COLOUR, "dash": "dash", "width": 2},
                "customdata": [duration(sla)] * 2,
                "hovertemplate": "SLA %{customdata}<extra></extra>",
            }
        )
    yaxis = {"ticksuffix": " s", "title": {"text": "seconds"}, "automargin": True, "rangemode": "tozero"}
    return figure_of(traces, yaxis=yaxis, xaxis=_x_axis({p["day"] for p in points}))


def whatif_scatter(points: list[dict], *, sla: float | None, axis: str, currency: str) -> dict:
    """Cost against latency, one marker per offering (points: [{provider, label, x, cost, best}]; x in seconds per
    request, or hours per night for a batch), coloured by provider, the cheapest meeting the SLA drawn as a star;
    the SLA (or the batch window) as a vertical line. Offerings without both figures are left out (the table
    says which figure they lack)."""
    traces = []
    for point in points:
        if point["x"] is None or point["cost"] is None:
            continue
        traces.append(
            {
                "type": "scatter",
                "mode": "markers+text",
                "name": point["label"],
                "x": [float(point["x"])],
                "y": [float(point["cost"])],
                "text": [point["label"]],
                "textposition": "top center",
                "marker": {
                    "size": 16 if point["best"] or point.get("today") else 11,
                    # Today's setup a diamond (the point to move from), the headline a star.
                    "symbol": "star" if point["best"] else ("diamond" if point.get("today") else "circle"),
                    "color": colour_for(point["provider"]),
                },
                "hovertemplate": (
                    f"{point['label']}<br>{money_exact(point['cost'], currency)}<br>%{{x:.2f}} {axis}<extra></extra>"
                ),
            }
        )
    if sla is not None:
        top = max((float(p["cost"]) for p in points if p["cost"] is not None), default=1.0) * 1.1 or 1.0
        traces.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": "SLA",
                "x": [sla, sla],
                "y": [0, top],
                "line": {"color": SLA_COLOUR, "dash": "dash"},
                "hoverinfo": "skip",
            }
        )
    symbol = currency_symbol(currency)
    yaxis = {
        "tickprefix": symbol,
        "tickformat": ",",
        "title": {"text": f"Monthly cost ({currency})"},
        "rangemode": "tozero",
        "automargin": True,
    }
    # Room on both sides for the labels above the markers.
    xs = [float(p["x"]) for p in points if p["x"] is not None and p["cost"] is not None] + (
        [sla] if sla is not None else []
    )
    xaxis = {"title": {"text": axis}, "range": [-0.08 * max(xs, default=1), 1.12 * max(xs, default=1)]}
    xaxis["title"]["standoff"] = 12
    figure = figure_of(traces, yaxis=yaxis, xaxis=xaxis)
    figure["layout"]["hovermode"] = "closest"
    # The legend under the axis title, not over it (issue 28: the axis title overlapped the legend).
    figure["layout"]["legend"] = {"orientation": "h", "y": -0.35, "yanchor": "top", "x": 0}
    figure["layout"]["margin"] = {**figure["layout"].get("margin", {}), "b": 140}
    return figure
