"""Selector output → Plotly figures (as JSON for the template). No ORM here; floats only inside chart JSON."""

import datetime as dt
import functools
import json
from collections import defaultdict

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


CHARGE_LABELS = {"tax": "Tax", "credit": "Credits", "purchase": "Purchases", "adjustment": "Adjustments"}


def stacked_daily(rows: list[dict], dimension: str, labels: dict, *, currency: str, monthly: bool = False) -> dict:
    """A stacked bar per day (per month with `monthly`: `day` is then the month's first day), one trace per value
    of `dimension` (labels maps ids to names). Rows whose `charge_category` is not usage (tax, credits, fees)
    are their own labelled series, not part of a provider's or model's bar. Unknown cost (None) draws nothing."""
    series: dict[str, dict] = defaultdict(lambda: defaultdict(float))
    for row in rows:
        category = row.get("charge_category") or "usage"
        if category != "usage":
            name = CHARGE_LABELS.get(category, category.capitalize())
        else:
            name = labels.get(row[dimension], "Unattributed" if row[dimension] is None else str(row[dimension]))
        if row["cost"] is not None:
            series[name][row["day"]] += float(row["cost"])
    traces = [_bar(name, list(points), list(points.values())) for name, points in sorted(series.items())]
    xaxis = {"tickformat": "%b %Y", "dtick": "M1"} if monthly else {}
    return _figure(traces, yaxis={"title": currency, "tickformat": ",.0f"}, xaxis=xaxis)


def daily_tokens(rows: list[dict]) -> dict:
    """Input and output tokens per day, as two stacked bars."""
    days = [row["day"] for row in rows]
    traces = [
        _bar("Input tokens", days, [int(r["input"] or 0) for r in rows]),
        _bar("Output tokens", days, [int(r["output"] or 0) for r in rows]),
    ]
    return _figure(traces, yaxis={"title": "tokens", "tickformat": ".2s"})


# Plotly's figure objects validate every point, which took longer than the SQL for a year of daily bars by
# team; the traces are plain JSON of the same shape instead, and only the layout (with Plotly's default
# template) goes through Plotly, once per distinct axis.


def _bar(name: str, x: list, y: list) -> dict:
    return {"name": name, "x": [v.isoformat() if isinstance(v, dt.date) else v for v in x], "y": y, "type": "bar"}


@functools.lru_cache(maxsize=16)
def _layout_json(axes_json: str) -> str:
    fig = go.Figure()
    fig.update_layout(**LAYOUT, barmode="stack", **json.loads(axes_json))
    return json.dumps(json.loads(fig.to_json())["layout"])


def _figure(traces: list[dict], *, yaxis: dict, xaxis: dict | None = None) -> dict:
    axes = {"yaxis": yaxis, **({"xaxis": xaxis} if xaxis else {})}
    return {"data": traces, "layout": json.loads(_layout_json(json.dumps(axes, sort_keys=True)))}
