"""Selector output → Plotly figures (as JSON for the template). No ORM here; floats only inside chart JSON."""

from collections import defaultdict

import json

import plotly.graph_objects as go

LAYOUT = {
    "margin": {"l": 56, "r": 16, "t": 16, "b": 40},
    "height": 320,
    "paper_bgcolor": "rgba(0,0,0,0)",
    "plot_bgcolor": "rgba(0,0,0,0)",
    "font": {"family": "system-ui, -apple-system, Segoe UI, sans-serif", "size": 12},
    "legend": {"orientation": "h", "y": -0.18},
    "hovermode": "x unified",
}


def stacked_daily(rows: list[dict], dimension: str, labels: dict, *, currency: str) -> dict:
    """A stacked bar per day, one trace per value of `dimension` (labels maps ids to names)."""
    series: dict[str, dict] = defaultdict(dict)
    for row in rows:
        name = labels.get(row[dimension], "Unattributed" if row[dimension] is None else str(row[dimension]))
        series[name][row["day"]] = float(row["cost"] or 0)
    fig = go.Figure(
        [go.Bar(name=name, x=list(points), y=list(points.values())) for name, points in sorted(series.items())]
    )
    fig.update_layout(**LAYOUT, barmode="stack", yaxis={"title": currency, "tickformat": ",.0f"})
    return json.loads(fig.to_json())  # plain JSON types, ready for json_script


def daily_tokens(rows: list[dict]) -> dict:
    """Input and output tokens per day, as two stacked bars."""
    days = [row["day"] for row in rows]
    fig = go.Figure(
        [
            go.Bar(name="Input tokens", x=days, y=[int(r["input"] or 0) for r in rows]),
            go.Bar(name="Output tokens", x=days, y=[int(r["output"] or 0) for r in rows]),
        ]
    )
    fig.update_layout(**LAYOUT, barmode="stack", yaxis={"title": "tokens", "tickformat": ".2s"})
    return json.loads(fig.to_json())
