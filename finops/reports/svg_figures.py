"""The drawing under every chart of the monthly TCO report (finops.reports.tco_charts): matplotlib's settings, a
figure of the report's width, the figure as a Chart (SVG, title, a sentence for readers who cannot see it) and the
axes' money and per-cent ticks.

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
"""

import base64
import functools
import io
import re
import threading
from dataclasses import dataclass
from decimal import Decimal

from finops.core import display

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


def as_float(value) -> float:
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


def new_figure(height_in: float, ncols: int = 1):
    from matplotlib.figure import Figure  # pyplot never: no global figure state, safe in any thread

    figure = Figure(figsize=(WIDTH_IN, height_in))
    return figure, figure.subplots(1, ncols, squeeze=False)[0]


def svg_chart(
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


def money_axis(axis, currency: str, *, x: bool = False) -> None:
    from matplotlib.ticker import FuncFormatter

    formatter = FuncFormatter(lambda value, _: display.money_compact(Decimal(str(round(value, 2))), currency))
    (axis.xaxis if x else axis.yaxis).set_major_formatter(formatter)


def percent_axis(axis, *, x: bool = True) -> None:
    """Ticks in per cent with as many decimals as their spacing needs (a 0.2 % variance is not "0 %")."""
    from matplotlib.ticker import PercentFormatter

    (axis.xaxis if x else axis.yaxis).set_major_formatter(PercentFormatter(xmax=100, decimals=None, symbol=" %"))


def shortened(label: str, width: int = 28) -> str:
    return label if len(label) <= width else label[: width - 1] + "…"


def label_width(labels: list[str]) -> float:
    """Inches a column of 7.5 pt tick labels needs (DejaVu Sans averages ~0.58 em a character), plus the ticks."""
    return 0.15 + max(len(label) for label in labels) * 7.5 * 0.58 / 72
