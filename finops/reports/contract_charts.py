"""The contracts' charts (selector output -> Plotly JSON, as finops.reports.charts): a contract's burn-down (its
commitment, what was consumed and the forecast of the rest, by day or by period) and the timeline of every
contract's term with its renewal dates. Colours and trace builders are the other charts' (finops.reports.charts).
"""

import datetime as dt
from decimal import Decimal

from finops.core.display import money_exact
from finops.reports.charts import DAY_MS, FORECAST_COLOUR, SPENT_COLOUR, figure_of, line_trace, money_axis

COMMITTED_COLOUR = "#e0413a"
EXPECTED_COLOUR = "#f2a33a"


def contract_burn_down(
    daily: dict[dt.date, Decimal],
    *,
    start: dt.date,
    end: dt.date,
    committed: Decimal,
    projected: Decimal | None,
    today: dt.date,
    currency: str,
    periods: list[tuple[dt.date, Decimal, Decimal, Decimal]] | None = None,
) -> dict:
    """A contract's term: cumulative consumed spend by day (daily: {day: spend}, days without spend may be
    missing) from the start up to today, the straight-line expectation from 0 at the start to the commitment at
    the end, the projection from today's cumulative to the forecast total at the end (dashed;
    finops.forecast.projection) and the
    commitment line.

    With `periods` ([(start, committed, consumed, projected)], a monthly or yearly basis) the figure is instead
    one group of bars per period: committed, consumed, and the rest of the projection stacked on consumed."""
    last_day = end - dt.timedelta(days=1)
    yaxis = money_axis(currency, from_zero=True)
    if periods is not None:
        x = [p[0].isoformat() for p in periods]

        def bars(name, values, colour, group, opacity=1.0):
            return {
                "name": name,
                "x": x,
                "y": [float(v) for v in values],
                "type": "bar",
                "offsetgroup": group,
                "marker": {"color": colour, "opacity": opacity},
                "customdata": [money_exact(v, currency) for v in values],
                "hovertemplate": "%{fullData.name}: %{customdata}<extra></extra>",
            }

        traces = [
            bars("Committed", [p[1] for p in periods], COMMITTED_COLOUR, "committed"),
            bars("Consumed", [p[2] for p in periods], SPENT_COLOUR, "used"),
            bars("Projected (rest)", [max(Decimal(0), p[3] - p[2]) for p in periods], FORECAST_COLOUR, "used", 0.6),
        ]
        figure = figure_of(traces, yaxis=yaxis, xaxis={"hoverformat": "%b %Y", "type": "date"})
        figure["layout"]["barmode"] = "group"  # consumed and the projected rest share one offset group: they stack
        return figure
    cumulative, total, day = [], Decimal(0), start
    while day <= min(today, last_day):
        total += daily.get(day, Decimal(0))
        cumulative.append((day, total))
        day += dt.timedelta(days=1)
    traces = [line_trace("Consumed", cumulative, currency, colour=SPENT_COLOUR)]
    traces.append(
        line_trace(
            "Expected (straight line)",
            [(start, Decimal(0)), (last_day, committed)],
            currency,
            colour=EXPECTED_COLOUR,
            dash="dot",
        )
    )
    if cumulative and projected is not None and start <= today <= last_day:
        from_day, so_far = cumulative[-1]
        traces.append(
            line_trace(
                "Projected (forecast)",
                [(from_day, so_far), (last_day, projected)],
                currency,
                colour=FORECAST_COLOUR,
                dash="dash",
            )
        )
    traces.append(
        line_trace("Committed", [(start, committed), (last_day, committed)], currency, colour=COMMITTED_COLOUR)
    )
    xaxis = {"hoverformat": "%a %-d %b %Y", "range": [start.isoformat(), last_day.isoformat()]}
    return figure_of(traces, yaxis=yaxis, xaxis=xaxis)


def contracts_timeline(rows: list[dict], *, today: dt.date) -> dict:
    """Every contract as a horizontal bar from its start to its end (rows: [{name, start, end, notice_deadline,
    status_label}]), a diamond at its notice deadline and a vertical line at today."""
    names = [row["name"] for row in rows]
    traces = [
        {
            "name": "Term",
            "type": "bar",
            "orientation": "h",
            "y": names,
            "base": [row["start"].isoformat() for row in rows],
            "x": [(row["end"] - row["start"]).days * DAY_MS for row in rows],
            "marker": {"color": SPENT_COLOUR, "opacity": 0.55},
            "customdata": [
                f"{row['start']:%-d %b %Y} → {row['end'] - dt.timedelta(days=1):%-d %b %Y} · {row['status_label']}"
                for row in rows
            ],
            "hovertemplate": "%{y}: %{customdata}<extra></extra>",
        },
        {
            "name": "Notice deadline",
            "type": "scatter",
            "mode": "markers",
            "y": names,
            "x": [row["notice_deadline"].isoformat() for row in rows],
            "marker": {"symbol": "diamond", "size": 11, "color": COMMITTED_COLOUR},
            "customdata": [f"{row['notice_deadline']:%-d %b %Y}" for row in rows],
            "hovertemplate": "%{y}: notice by %{customdata}<extra></extra>",
        },
    ]
    figure = figure_of(
        traces,
        yaxis={"automargin": True, "autorange": "reversed", "type": "category"},
        xaxis={"type": "date", "automargin": True, "nticks": 4, "tickangle": 0, "tickformat": "%b %Y"},
    )
    layout = figure["layout"]
    layout["hovermode"] = "closest"
    layout["height"] = max(240, 140 + 36 * len(rows))
    layout["legend"] = {**layout.get("legend", {}), "y": -0.2}  # below the date ticks
    layout["shapes"] = [
        {
            "type": "line",
            "xref": "x",
            "yref": "paper",
            "x0": today.isoformat(),
            "x1": today.isoformat(),
            "y0": 0,
            "y1": 1,
            "line": {"color": "#1f2933", "width": 1.5, "dash": "dot"},
        }
    ]
    layout["annotations"] = [
        {
            "xref": "x",
            "yref": "paper",
            "x": today.isoformat(),
            "y": 1,
            "yanchor": "bottom",
            "text": "today",
            "showarrow": False,
            "font": {"size": 11},
        }
    ]
    layout["margin"] = {**layout.get("margin", {}), "t": 24}
    return figure
