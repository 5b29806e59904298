"""The monthly TCO report's charts, drawn from the report's rows (no ORM) with matplotlib as SVG, offline.

The drawing itself — matplotlib's settings, the SVG, how a chart reaches the page, its print and the PDF as one
`data:` image — is finops.reports.svg_figures'.
"""

import functools
import json
from decimal import Decimal

from finops.reports.charts import colour_for
from finops.reports.selectors import tco_json
from finops.reports.svg_figures import (
    DOWN,
    LINE,
    NEUTRAL,
    STATUS_COLOURS,
    UP,
    Chart,
    as_float,
    drawn,
    label_width,
    money_axis,
    new_figure,
    percent_axis,
    shortened,
    svg_chart,
)

VARIANCE_PLACES = 3  # a variance is charted to the table's precision, 0.1 %
MAX_BARS = 12  # horizontal bar charts: the biggest this many (the table beside lists them all)
CACHED_CHARTS = 64  # ~25 kB each


# --- section 1: why spend moved ---


@drawn
def movers_chart(rows: list[dict], *, currency: str) -> Chart | None:
    """Each mover's change from last month split into volume, price and mix, bars from zero beside the whole change
    (a waterfall from last month's level would show the level and hide the split), one panel per mover, one scale."""
    rows = sorted((r for r in rows if r.get("change")), key=lambda r: -abs(r["change"]))[
        :3
    ]  # the 3 largest, either way
    if not rows:
        return None
    figure, axes = new_figure(1.9, len(rows))
    parts = ("volume", "price", "mix", "change")
    labels = ["Volume", "Price", "Mix", "Change"]
    reach = max(abs(as_float(r[p])) for r in rows for p in parts) * 1.15 or 1.0
    for ax, row in zip(axes, rows):
        values = [as_float(row[p]) for p in parts]
        colours = [UP if v > 0 else DOWN for v in values[:3]] + [LINE]
        ax.barh(range(4), values, color=colours, height=0.6)
        ax.set_yticks(range(4), labels)
        ax.invert_yaxis()
        ax.axvline(0, color=LINE, linewidth=0.6)
        ax.set_xlim(-reach, reach)
        ax.set_title(shortened(row["label"], 34), fontsize=7.5)
        ax.tick_params(axis="x", labelsize=6.5)
        ax.xaxis.set_major_locator(_ticks(3))
        money_axis(ax, currency, x=True)
    return svg_chart(
        figure,
        "movers",
        "Biggest movers: the change split into volume, price and mix",
        left_in=0.55,
        right_in=0.15,
        top_in=0.45,
        wspace=0.45,
        alt="For each of the biggest movers, the change in spend from last month and its parts: volume, price "
        "and mix (red raises spend, green lowers it); the table below has the amounts.",
    )


def _ticks(count: int):
    from matplotlib.ticker import MaxNLocator

    return MaxNLocator(count, symmetric=True)


# --- section 2: spend ---


@drawn
def trend_chart(rows: list[dict], *, currency: str) -> Chart | None:
    """Six months of spend as one stacked bar per month, a segment per provider (biggest overall at the bottom)."""
    rows = [r for r in rows if r.get("cost") is not None]
    if not rows:
        return None
    months = sorted({r["month"] for r in rows})
    totals: dict[str, Decimal] = {}
    for row in rows:
        totals[row["label"]] = totals.get(row["label"], Decimal(0)) + row["cost"]
    providers = sorted(totals, key=lambda name: (-totals[name], name))
    figure, (ax,) = new_figure(2.6)
    bottom = [0.0] * len(months)
    for provider in providers:
        heights = [0.0] * len(months)
        for row in rows:
            if row["label"] == provider:
                heights[months.index(row["month"])] += as_float(row["cost"])
        ax.bar(range(len(months)), heights, bottom=bottom, color=colour_for(provider), label=provider, width=0.6)
        bottom = [b + h for b, h in zip(bottom, heights)]
    ax.set_xticks(range(len(months)), months)
    money_axis(ax, currency)
    ax.grid(axis="y", color="#e2e6ec", linewidth=0.6)
    ax.set_axisbelow(True)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=6.5)
    return svg_chart(
        figure,
        "trend",
        "Spend by provider, the six months to this one",
        right_in=1.45,
        alt=(
            f"Stacked bars of each month's spend by provider over {len(months)} months; the trend table has the "
            "amounts."
        ),
    )


# --- section 3: unit economics ---


@drawn
def unit_economics_chart(rows: list[dict], *, currency: str) -> Chart | None:
    """Cost per outcome against last month, as a change in per cent per workload (units differ; changes compare)."""
    rows = [r for r in rows if r.get("per_outcome_change") is not None]
    if not rows:
        return None
    rows = sorted(rows, key=lambda r: -abs(as_float(r["per_outcome_change"])))[:MAX_BARS][::-1]
    return _change_bars(
        [as_float(r["per_outcome_change"]) * 100 for r in rows],
        [shortened(f"{r['label']} ({r['outcome_unit']})", 44) for r in rows],
        "unit_economics",
        "Cost per outcome: change from last month",
        row_in=0.22,
        bar=0.6,
        alt="Horizontal bars of each workload's change in cost per outcome from last month, in per cent "
        "(red: dearer, green: cheaper).",
    )


def _change_bars(
    values: list[float], labels: list[str], name: str, title: str, *, row_in: float, bar: float, alt: str
) -> Chart:
    """Signed changes in per cent as horizontal bars around 0: red above (dearer), green below (cheaper)."""
    figure, (ax,) = new_figure(0.6 + row_in * len(values))
    ax.barh(range(len(values)), values, color=[UP if v > 0 else DOWN for v in values], height=bar)
    ax.set_yticks(range(len(values)), labels)
    ax.axvline(0, color=LINE, linewidth=0.6)
    percent_axis(ax)
    return svg_chart(figure, name, title, left_in=label_width(labels), right_in=0.2, alt=alt)


# --- section 4: commitments ---


@drawn
def commitments_chart(rows: list[dict], *, currency: str) -> Chart | None:
    """Each contract's consumption against its commitment (100 %): consumed (bar), plan to date (tick), projected
    to the period's end (hollow bar). Per cent of the commitment, so contracts in other currencies compare."""
    rows = [r for r in rows if r.get("committed")]
    if not rows:
        return None
    rows = rows[:MAX_BARS][::-1]
    figure, (ax,) = new_figure(0.75 + 0.3 * len(rows))
    labels = [shortened(r["label"], 36) for r in rows]
    share = lambda r, key: as_float(r[key]) / as_float(r["committed"]) * 100 if r.get(key) is not None else None  # noqa: E731
    projected = [share(r, "projected") or 0.0 for r in rows]
    ax.set_yticks(range(len(rows)), labels)
    ax.barh(
        range(len(rows)),
        projected,
        height=0.7,
        color="none",
        edgecolor="#5e6b7d",
        linewidth=0.7,
        linestyle="--",
        label="Projected at the period's end",
    )
    ax.barh(
        range(len(rows)),
        [share(r, "consumed") or 0.0 for r in rows],
        height=0.45,
        color=[STATUS_COLOURS.get(r.get("status_status"), "#0078d4") for r in rows],
        label="Consumed",
    )
    expected = [(i, share(r, "expected")) for i, r in enumerate(rows) if r.get("expected") is not None]
    ax.scatter(
        [v for _, v in expected],
        [i for i, _ in expected],
        marker="|",
        s=160,
        color=LINE,
        linewidths=1.6,
        label="Plan to date",
        zorder=3,
    )
    ax.axvline(100, color="#5e6b7d", linewidth=0.6, linestyle=":")
    percent_axis(ax)
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=3, fontsize=6.5)
    return svg_chart(
        figure,
        "commitments",
        "Contracts: consumed, plan to date and projected, against the commitment",
        left_in=label_width(labels),
        right_in=0.2,
        top_in=0.5,
        alt="For each contract, the share of its commitment consumed, the share the plan expected by now (a tick) "
        "and the share projected by the period's end (dashed outline); 100 % is the commitment.",
    )


# --- section 5: caps ---


@drawn
def caps_chart(org_caps: list[dict], caps: list[dict], *, currency: str) -> Chart | None:
    """Each cap the report names: spent and forecast as a share of the cap, 100 % marked."""
    seen, rows = set(), []
    for row in [*org_caps, *caps]:
        if row.get("amount") and row["label"] not in seen:
            seen.add(row["label"])
            rows.append(row)
    if not rows:
        return None
    rows = rows[:MAX_BARS][::-1]
    figure, (ax,) = new_figure(0.75 + 0.28 * len(rows))
    labels = [shortened(r["label"], 36) for r in rows]
    forecast = [
        as_float(r["forecast"]) / as_float(r["amount"]) * 100 if r.get("forecast") is not None else 0.0 for r in rows
    ]
    ax.set_yticks(range(len(rows)), labels)
    ax.barh(
        range(len(rows)),
        forecast,
        height=0.7,
        color="none",
        edgecolor="#5e6b7d",
        linewidth=0.7,
        linestyle="--",
        label="Forecast for the period",
    )
    ax.barh(
        range(len(rows)),
        [as_float(r["spent"]) / as_float(r["amount"]) * 100 for r in rows],
        height=0.45,
        color=[STATUS_COLOURS.get(r.get("status_status"), "#0078d4") for r in rows],
        label="Spent",
    )
    ax.axvline(100, color=UP, linewidth=0.8, linestyle=":")
    percent_axis(ax)
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2, fontsize=6.5)
    return svg_chart(
        figure,
        "caps",
        "Caps: spent and forecast against the cap",
        left_in=label_width(labels),
        right_in=0.2,
        top_in=0.5,
        alt="For each cap, the share spent (bar) and the share forecast by the period's end (dashed outline); "
        "100 % is the cap.",
    )


# --- section 6: data quality ---


@drawn
def reconciliation_chart(rows: list[dict], *, currency: str) -> Chart | None:
    """Billed against list price per provider, as the variance in per cent."""
    rows = [r for r in rows if r.get("variance") is not None]
    if not any(round(as_float(r["variance"]), VARIANCE_PLACES) for r in rows):
        return None  # every provider bills its list price (to the table's 0.1 %): a chart would draw rounding noise
    rows = rows[:MAX_BARS][::-1]
    return _change_bars(
        [round(as_float(r["variance"]), VARIANCE_PLACES) * 100 for r in rows],
        [shortened(r["label"]) for r in rows],
        "reconciliation",
        "Billed against list price: variance by provider",
        row_in=0.25,
        bar=0.55,
        alt="Horizontal bars of each provider's billed usage against its list price, in per cent "
        "(red: billed above list, green: below).",
    )


# --- section 7: savings ---


@drawn
def savings_chart(rows: list[dict], *, currency: str) -> Chart | None:
    """The biggest savings: what each part of a workload costs now against its best offering's monthly cost."""
    rows = [r for r in rows if r.get("saving") and r.get("today_cost") is not None]
    if not rows:
        return None
    rows = sorted(rows, key=lambda r: -as_float(r["saving"]))[:MAX_BARS][::-1]
    figure, (ax,) = new_figure(0.75 + 0.3 * len(rows))
    labels = [shortened(f"{r['workload']} · {r['family']}", 44) for r in rows]
    positions = list(range(len(rows)))
    ax.barh(
        [p + 0.18 for p in positions],
        [as_float(r["today_cost"]) for r in rows],
        height=0.36,
        color=NEUTRAL,
        label="This month",
    )
    ax.barh(
        [p - 0.18 for p in positions],
        [as_float(r["best_cost"] or 0) for r in rows],
        height=0.36,
        color=DOWN,
        label="On the best offering",
    )
    ax.set_yticks(positions, labels)
    money_axis(ax, currency, x=True)
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2, fontsize=6.5)
    return svg_chart(
        figure,
        "savings",
        "Routing savings: this month's cost against the best offering",
        left_in=label_width(labels),
        right_in=0.2,
        top_in=0.5,
        alt="For each workload part that could move, this month's cost (grey) and its monthly cost on the best "
        "offering that meets its SLA (green); the table has the savings.",
    )


# --- the report's charts, by section ---

EMPTY = {
    "summary": "No workload's spend moved from last month: no chart of movers.",
    "spend": "No spend in the six months: no trend to chart.",
    "unit_economics": "No workload has a cost per outcome both this month and last: nothing to chart.",
    "commitments": "No contract in force this month: no consumption to chart.",
    "caps": "No cap to chart this month.",
    "data_quality": (
        "Billed usage matches list price for every provider (to 0.1 %), or none was billed: no variance to chart."
    ),
    "savings": "No saving to chart.",
}


def section_charts(report) -> dict[str, dict]:
    """{section key: {"charts": [Chart, …], "empty": sentence or ""}} for every section of the report."""
    currency = report.currency
    found = {}
    for key, (name, tables) in CHARTS.items():
        chart = _drawn_once(name, json.dumps(tco_json.dump([report.rows(t) for t in tables]), sort_keys=True), currency)
        found[key] = {"charts": [chart] if chart else [], "empty": "" if chart else EMPTY[key]}
    return found


CHARTS = {  # section → (chart function, the tables whose rows it draws)
    "summary": ("movers_chart", ("movers",)),
    "spend": ("trend_chart", ("trend",)),
    "unit_economics": ("unit_economics_chart", ("unit_economics",)),
    "commitments": ("commitments_chart", ("commitments",)),
    "caps": ("caps_chart", ("org_caps", "caps")),
    "data_quality": ("reconciliation_chart", ("reconciliation",)),
    "savings": ("savings_chart", ("savings",)),
}


@functools.lru_cache(maxsize=CACHED_CHARTS)
def _drawn_once(name: str, rows_json: str, currency: str) -> Chart | None:
    """A chart of these rows, drawn once per process: the page, its PDF and a published version's every view show
    the same rows, and the same rows make the same bytes. Keyed by the rows as tagged JSON (Decimals exact)."""
    return globals()[name](*tco_json.load(json.loads(rows_json)), currency=currency)
