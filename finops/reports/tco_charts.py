"""The monthly TCO report's charts, drawn from the report's rows (no ORM) with matplotlib as SVG, offline.

One function per chart, each taking a table's rows and returning a Chart (an SVG, its title and a sentence for
readers who cannot see it) or None when there is nothing to draw; `section_charts(report)` gives each section
its charts, or the sentence saying why it has none. Money stays Decimal in the rows: it becomes a float only
here, for the drawing, and every amount a reader can quote is in the tables beside the chart.

How a chart reaches the page, its print and the PDF — one markup for all three (templates/reports/_body.html):
an <img> whose src is the SVG as a `data:` URI. The page's Content-Security-Policy (finops/settings.py) allows
`data:` images and never needs a new exception: an SVG shown through <img> is a separate image document (no
script runs in it, the page's style rules neither reach it nor are relaxed by it), whereas the same SVG inlined in
the page would carry matplotlib's <style> element and style="" attributes, which a strict style-src refuses. No
second request either (a chart URL would compute the report again) and the PDF needs no URL fetcher: WeasyPrint
draws a data: SVG as vectors, its text as text (so the PDF's charts are sharp and searchable). matplotlib's own
<style> element is stripped all the same (it only sets round line joins, which bars and ticks do not need), so the
image is plain drawing elements whatever shows it.

Drawing choices: the text stays text (svg.fonttype "none", DejaVu Sans as WeasyPrint has it, a sans-serif
fallback elsewhere), a fixed hash salt and no date in the metadata so a chart of the same rows is the same bytes;
colours of providers are finops.reports.charts.colour_for's, the same as on every other page.
"""

import base64
import functools
import io
import json
import re
import threading
from dataclasses import dataclass
from decimal import Decimal

from finops.core import display
from finops.reports.charts import colour_for
from finops.reports.selectors import tco_json

WIDTH_IN = 7.0  # A4's printable width with the PDF's margins (≈ 182 mm)
RC = {
    "svg.fonttype": "none",
    "svg.hashsalt": "tco-report",
    "font.family": ["DejaVu Sans", "sans-serif"],
    "font.size": 7.5,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.edgecolor": "#9aa4b1",
    "axes.labelcolor": "#1d2430",
    "xtick.color": "#5e6b7d",
    "ytick.color": "#5e6b7d",
    "axes.titlesize": 8,
    "axes.titleweight": "bold",
    "axes.titlelocation": "left",
    "legend.frameon": False,
    "legend.fontsize": 7,
    "figure.dpi": 72,
}
UP, DOWN, NEUTRAL, LINE = "#e0413a", "#10a37f", "#8b95a1", "#1d2430"
STATUS_COLOURS = {
    "breached": "#e0413a",
    "forecast": "#ff9900",
    "warning": "#ff9900",
    "ok": "#10a37f",
    "notice_passed": "#e0413a",
    "shortfall": "#ff9900",
    "overage": "#ff9900",
    "on_track": "#10a37f",
}
VARIANCE_PLACES = 3  # a variance is charted to the table's precision, 0.1 %
MAX_BARS = 12
CACHED_CHARTS = 64  # ~25 kB each  # horizontal bar charts: the biggest this many (the table beside lists them all)
DRAWING = threading.Lock()
STYLE = re.compile(r"<style[^>]*>.*?</style>\s*", re.S)


@dataclass(frozen=True)
class Chart:
    name: str
    title: str
    alt: str
    svg: str

    @property
    def data_uri(self) -> str:
        return "data:image/svg+xml;base64," + base64.b64encode(self.svg.encode()).decode("ascii")


def _f(value) -> float:
    return float(Decimal(value))


def drawn(chart):
    """A chart function run under the report's matplotlib settings (RC): every text and tick it makes uses them."""

    @functools.wraps(chart)
    def draw(*args, **kwargs):
        import matplotlib  # imported on use: only the report pays for it

        # rc_context changes matplotlib's global settings: one chart at a time in a process with threads.
        with DRAWING, matplotlib.rc_context(RC):
            return chart(*args, **kwargs)

    return draw


def _figure(height_in: float, ncols: int = 1):
    from matplotlib.figure import Figure  # pyplot never: no global figure state, safe in any thread

    figure = Figure(figsize=(WIDTH_IN, height_in))
    return figure, figure.subplots(1, ncols, squeeze=False)[0]


def _svg(
    figure,
    name: str,
    title: str,
    alt: str,
    *,
    left_in: float = 0.55,
    right_in: float = 0.1,
    top_in: float = 0.3,
    bottom_in: float = 0.3,
    wspace: float = 0.35,
) -> Chart:
    """The figure as SVG. Margins are given in inches (the longest tick label decides `left_in`), not found by
    tight_layout, which lays every text out a second time and doubled the charts' cost."""
    figure.suptitle(
        title,
        x=0.005,
        y=1 - 0.05 / figure.get_figheight(),
        ha="left",
        va="top",
        fontsize=8.5,
        fontweight="bold",
        color=LINE,
    )
    width, height = figure.get_figwidth(), figure.get_figheight()
    figure.subplots_adjust(
        left=left_in / width,
        right=1 - right_in / width,
        top=1 - top_in / height,
        bottom=bottom_in / height,
        wspace=wspace,
    )
    stream = io.StringIO()
    figure.savefig(stream, format="svg", metadata={"Date": None}, facecolor="white")
    return Chart(name=name, title=title, alt=alt, svg=STYLE.sub("", stream.getvalue()))


def _money_axis(axis, currency: str, *, x: bool = False) -> None:
    from matplotlib.ticker import FuncFormatter

    formatter = FuncFormatter(lambda value, _: display.money_compact(Decimal(str(round(value, 2))), currency))
    (axis.xaxis if x else axis.yaxis).set_major_formatter(formatter)


def _percent_axis(axis, *, x: bool = True) -> None:
    """Ticks in per cent with as many decimals as their spacing needs (a 0.2 % variance is not "0 %")."""
    from matplotlib.ticker import PercentFormatter

    (axis.xaxis if x else axis.yaxis).set_major_formatter(PercentFormatter(xmax=100, decimals=None, symbol=" %"))


def _short(label: str, width: int = 28) -> str:
    return label if len(label) <= width else label[: width - 1] + "…"


def _label_width(labels: list[str]) -> float:
    """Inches a column of 7.5 pt tick labels needs (DejaVu Sans averages ~0.58 em a character), plus the ticks."""
    return 0.15 + max(len(label) for label in labels) * 7.5 * 0.58 / 72


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
    figure, axes = _figure(1.9, len(rows))
    parts = ("volume", "price", "mix", "change")
    labels = ["Volume", "Price", "Mix", "Change"]
    reach = max(abs(_f(r[p])) for r in rows for p in parts) * 1.15 or 1.0
    for ax, row in zip(axes, rows):
        values = [_f(row[p]) for p in parts]
        colours = [UP if v > 0 else DOWN for v in values[:3]] + [LINE]
        ax.barh(range(4), values, color=colours, height=0.6)
        ax.set_yticks(range(4), labels)
        ax.invert_yaxis()
        ax.axvline(0, color=LINE, linewidth=0.6)
        ax.set_xlim(-reach, reach)
        ax.set_title(_short(row["label"], 34), fontsize=7.5)
        ax.tick_params(axis="x", labelsize=6.5)
        ax.xaxis.set_major_locator(_ticks(3))
        _money_axis(ax, currency, x=True)
    return _svg(
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
    figure, (ax,) = _figure(2.6)
    bottom = [0.0] * len(months)
    for provider in providers:
        heights = [0.0] * len(months)
        for row in rows:
            if row["label"] == provider:
                heights[months.index(row["month"])] += _f(row["cost"])
        ax.bar(range(len(months)), heights, bottom=bottom, color=colour_for(provider), label=provider, width=0.6)
        bottom = [b + h for b, h in zip(bottom, heights)]
    ax.set_xticks(range(len(months)), months)
    _money_axis(ax, currency)
    ax.grid(axis="y", color="#e2e6ec", linewidth=0.6)
    ax.set_axisbelow(True)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=6.5)
    return _svg(
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
    rows = sorted(rows, key=lambda r: -abs(_f(r["per_outcome_change"])))[:MAX_BARS][::-1]
    return _change_bars(
        [_f(r["per_outcome_change"]) * 100 for r in rows],
        [_short(f"{r['label']} ({r['outcome_unit']})", 44) for r in rows],
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
    figure, (ax,) = _figure(0.6 + row_in * len(values))
    ax.barh(range(len(values)), values, color=[UP if v > 0 else DOWN for v in values], height=bar)
    ax.set_yticks(range(len(values)), labels)
    ax.axvline(0, color=LINE, linewidth=0.6)
    _percent_axis(ax)
    return _svg(figure, name, title, left_in=_label_width(labels), right_in=0.2, alt=alt)


# --- section 4: commitments ---


@drawn
def commitments_chart(rows: list[dict], *, currency: str) -> Chart | None:
    """Each contract's consumption against its commitment (100 %): consumed (bar), plan to date (tick), projected
    to the period's end (hollow bar). Per cent of the commitment, so contracts in other currencies compare."""
    rows = [r for r in rows if r.get("committed")]
    if not rows:
        return None
    rows = rows[:MAX_BARS][::-1]
    figure, (ax,) = _figure(0.75 + 0.3 * len(rows))
    labels = [_short(r["label"], 36) for r in rows]
    share = lambda r, key: _f(r[key]) / _f(r["committed"]) * 100 if r.get(key) is not None else None  # noqa: E731
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
    _percent_axis(ax)
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=3, fontsize=6.5)
    return _svg(
        figure,
        "commitments",
        "Contracts: consumed, plan to date and projected, against the commitment",
        left_in=_label_width(labels),
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
    figure, (ax,) = _figure(0.75 + 0.28 * len(rows))
    labels = [_short(r["label"], 36) for r in rows]
    forecast = [_f(r["forecast"]) / _f(r["amount"]) * 100 if r.get("forecast") is not None else 0.0 for r in rows]
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
        [_f(r["spent"]) / _f(r["amount"]) * 100 for r in rows],
        height=0.45,
        color=[STATUS_COLOURS.get(r.get("status_status"), "#0078d4") for r in rows],
        label="Spent",
    )
    ax.axvline(100, color=UP, linewidth=0.8, linestyle=":")
    _percent_axis(ax)
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2, fontsize=6.5)
    return _svg(
        figure,
        "caps",
        "Caps: spent and forecast against the cap",
        left_in=_label_width(labels),
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
    if not any(round(_f(r["variance"]), VARIANCE_PLACES) for r in rows):
        return None  # every provider bills its list price (to the table's 0.1 %): a chart would draw rounding noise
    rows = rows[:MAX_BARS][::-1]
    return _change_bars(
        [round(_f(r["variance"]), VARIANCE_PLACES) * 100 for r in rows],
        [_short(r["label"]) for r in rows],
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
    rows = sorted(rows, key=lambda r: -_f(r["saving"]))[:MAX_BARS][::-1]
    figure, (ax,) = _figure(0.75 + 0.3 * len(rows))
    labels = [_short(f"{r['workload']} · {r['family']}", 44) for r in rows]
    positions = list(range(len(rows)))
    ax.barh(
        [p + 0.18 for p in positions],
        [_f(r["today_cost"]) for r in rows],
        height=0.36,
        color=NEUTRAL,
        label="This month",
    )
    ax.barh(
        [p - 0.18 for p in positions],
        [_f(r["best_cost"] or 0) for r in rows],
        height=0.36,
        color=DOWN,
        label="On the best offering",
    )
    ax.set_yticks(positions, labels)
    _money_axis(ax, currency, x=True)
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2, fontsize=6.5)
    return _svg(
        figure,
        "savings",
        "Routing savings: this month's cost against the best offering",
        left_in=_label_width(labels),
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
