"""Tables of figures, defined once: the columns a page shows are the columns its CSV (and later the report's
CSV, XLSX and PDF) carries, each formatted by its kind (finops.core.display). No ORM here: rows are dicts.

A column's kind decides both renderings:
- money: a table reads "$1,043.12"; unknown (None) reads "—". With `unpriced` naming the row's count of tokens
  no price covers, the cell adds "+ 340M tokens unpriced", and the CSV gets an "Unpriced tokens" column.
- tokens: "3.4B" on a page, the integer in a CSV; count: "1,403"; requests: "—" where unknown (0).
- per_mtok / price / per_outcome: "$1.25/M" / "$0.075" / "$0.42" (under ten cents, four decimals); change: "+12.5 %";
share: "12.3 %" (a CSV carries the fraction).
- text, date, duration (seconds, or a timedelta: "1.2 s"; a CSV carries the seconds).
- speed: an output speed, "1,012 tok/s"; "≥ 34 tok/s" where the row's `<key>_basis` is end-to-end (a lower bound).
- badge: a verdict in a coloured pill (the row's `<key>_status` picks the colour: meets, fails, unknown, …; its
  `<key>_text` is the tooltip); a CSV carries its label.
- ms: a latency in milliseconds ("840 ms", "1.2 s"; the CSV the whole ms); ms_change: signed ("+120 ms").
- points: a change of a rate in percentage points ("+0.30 pt"); rate: a speed, whole ("1,024");
  score / score_change: an eval score as posted ("0.912", "+0.012"); verdict: a badge (a dict with status,
  label and title), its label in a CSV.
A column with `delta` names the row key of its change from the comparison period: shown under the figure on a
page (formatted as `delta_kind`), its own column in a CSV ("<header> change").
Every CSV with money in it ends with a Currency column: the reporting currency, or the row's own where its money
columns name the row key of their currency (`currency`: a contract in euros reads "€" on the page and EUR there).
"""

import datetime as dt
import html
from dataclasses import dataclass, field

from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

from finops.core import display

NUMERIC = {
    "per_outcome",
    "money",
    "tokens",
    "count",
    "requests",
    "per_mtok",
    "price",
    "change",
    "share",
    "duration",
    "speed",
    "ms",
    "ms_change",
    "points",
    "rate",
    "score",
    "score_change",
}
BADGE_TONES = {
    "meets": "ok",
    "fails": "bad",
    "unknown": "warn",  # others (no SLA, no data) stay grey
    "breached": "bad",
    "forecast": "warn",
    "warning": "warn",
    "ok": "ok",  # caps
    "notice_passed": "bad",
    "shortfall": "warn",
    "overage": "warn",
    "on_track": "ok",
}  # contracts


@dataclass(frozen=True)
class Column:
    header: str
    key: str
    kind: str = "text"
    unpriced: str | None = None  # money: the row key holding the tokens no price covers
    help: str = ""  # a tooltip on the header
    csv_only: bool = False  # machine-readable extras (a model's id beside its name): in the CSV, not on the page
    delta: str | None = None  # the row key of the change from the comparison period (under the figure; own CSV column)
    delta_kind: str = "change"
    sort: bool = False  # the page may sort its table by this column (server-side)
    currency: str | None = None  # money: the row key holding its ISO currency (a contract's); None: the reporting one

    @property
    def numeric(self) -> bool:
        return self.kind in NUMERIC

    def title(self, *, csv: bool = False) -> str:
        """The header; "{cur}" stands for the reporting currency: its symbol on a page ("$/M tokens"), its
        code in a CSV ("USD/M tokens")."""
        return self.header.replace("{cur}", display.reporting_currency() if csv else display.currency_symbol().strip())


@dataclass(frozen=True)
class Table:
    name: str  # the ?csv= value and the file name's stem
    columns: tuple[Column, ...]
    empty: str = "Nothing in this period."
    keys: tuple[str, ...] = field(default=())

    def __post_init__(self):
        object.__setattr__(self, "keys", tuple(c.key for c in self.columns))

    @property
    def page_columns(self) -> tuple[Column, ...]:
        return tuple(c for c in self.columns if not c.csv_only)


# --- the CSV rendering ---


def csv_header(table: Table) -> list[str]:
    header = []
    for column in table.columns:
        header.append(column.title(csv=True))
        if column.unpriced:
            header.append("Unpriced tokens")
        if column.delta:
            header.append(delta_title(column, csv=True))
    if has_money(table):
        header.append("Currency")
    return header


def csv_row(table: Table, row: dict) -> list[str]:
    cells = []
    for column in table.columns:
        cells.append(csv_value(column.kind, row.get(column.key)))
        if column.unpriced:
            cells.append(str(row.get(column.unpriced) or 0))
        if column.delta:
            cells.append(csv_value(column.delta_kind, row.get(column.delta)))
    if has_money(table):
        cells.append(row_currency(table, row))
    return cells


def row_currency(table: Table, row: dict) -> str:
    """The currency of a row's money: the row's own when its money columns name one, else the reporting currency."""
    key = next((c.currency for c in table.columns if c.currency), None)
    return (row.get(key) if key else None) or display.reporting_currency()


def delta_title(column: Column, *, csv: bool = False) -> str:
    unit = {"points": " (pt)", "ms_change": " (ms)"}.get(column.delta_kind, "")
    return f"{column.title(csv=csv)} change{unit}"


def has_money(table: Table) -> bool:
    return any(c.kind in ("money", "per_mtok", "price", "per_outcome") for c in table.columns)


def csv_value(kind: str, value) -> str:
    if value is None:
        return ""
    if kind in ("money", "per_mtok", "price", "per_outcome", "change", "share"):
        return display.csv_decimal(value)
    if kind in ("tokens", "count"):
        return str(int(value))
    if kind == "speed":
        return display.csv_decimal(value, places=1)
    if kind == "requests":
        return str(int(value)) if value else ""
    if kind == "duration":
        return str(value.total_seconds() if isinstance(value, dt.timedelta) else value)
    if kind in ("ms", "ms_change"):
        return str(round(float(value)))
    if kind in ("points", "score", "score_change"):
        return display.csv_decimal(value)
    if kind == "rate":
        return display.csv_decimal(value, 2)
    if kind == "verdict":
        return value["label"]
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.UTC).isoformat()
    if isinstance(value, dt.date):
        return value.isoformat()
    return str(value)


# --- the HTML rendering (one cell) ---


FORMATS = {
    "count": display.count,
    "per_outcome": display.per_outcome,
    "requests": display.requests,
    "per_mtok": display.per_mtok,
    "price": display.price,
    "change": display.percent_change,
    "share": display.share,
    "duration": display.duration,
    "ms": display.latency_ms,
    "ms_change": display.latency_change_ms,
    "points": display.points_change,
    "rate": display.rate,
    "score": display.score,
    "score_change": lambda v: display.score(v, signed=True),
    "speed": display.tokens_per_second,
}


def _escaped(text) -> SafeString:
    """Django's escape() without its lazy-string wrapper (the same entities), for the thousands of cells of a big
    table (the scorecard of 400 workloads renders ~6,000)."""
    return SafeString(html.escape(str(text)))  # SafeString, not mark_safe: its lazy-string check costs as much again


def html_cell(column: Column, row: dict) -> SafeString:
    cell = _html_value(column, row)
    if column.delta and row.get(column.delta) is not None:  # no change to show (nothing to compare): nothing under it
        title = _escaped(row.get("delta_title", "Change from the comparison period"))
        return SafeString(
            f'{cell}<span class="delta" '
            f'title="{title}">{_escaped(FORMATS[column.delta_kind](row.get(column.delta)))}</span>'
        )
    return cell


def _html_value(column: Column, row: dict) -> SafeString:
    value = row.get(column.key)
    kind = column.kind
    if kind == "money":
        return money_html(
            value,
            row.get(column.unpriced) if column.unpriced else 0,
            currency=row.get(column.currency) if column.currency else None,
        )
    if kind == "badge":
        if value is None or value == "":
            return mark_safe(display.DASH)
        status = row.get(f"{column.key}_status", "")
        return format_html(
            '<span class="badge {}" data-status="{}" title="{}">{}</span>',
            BADGE_TONES.get(status, ""),
            status,
            row.get(f"{column.key}_text", ""),
            value,
        )
    if kind == "speed" and value is not None and row.get(f"{column.key}_basis", "").startswith("end-to-end"):
        # Nothing streamed: tokens over whole requests, first-token wait included, so the true speed is higher.
        return format_html(
            '<span title="{}">≥ {}</span>',
            "end-to-end (lower bound): no request streamed",
            display.tokens_per_second(value),
        )
    if kind == "tokens":
        if value is None:
            return mark_safe(display.DASH)
        return SafeString(
            f'<span title="{_escaped(display.count(value))}">{_escaped(display.tokens_compact(value))}</span>'
        )
    if kind == "verdict":
        if not value:
            return mark_safe(display.DASH)
        return SafeString(
            f'<span class="badge verdict {VERDICT_CLASS.get(value["status"], "")}" '
            f'data-verdict="{_escaped(value["status"])}" '
            f'title="{_escaped(value.get("title", ""))}">{_escaped(value["label"])}</span>'
        )
    formatter = FORMATS.get(kind)
    if formatter is not None:
        return _escaped(formatter(value))
    if value is None or value == "":
        return mark_safe(display.DASH)
    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        return mark_safe(value.isoformat())
    return _escaped(value)


VERDICT_CLASS = BADGE_TONES


def money_html(cost, unpriced_tokens, *, compact: bool = False, currency: str | None = None) -> SafeString:
    """A cost with what it leaves out: "$1,043.12 + 340M tokens unpriced", or "—" and the unpriced tokens."""
    text = (display.money_compact if compact else display.money_exact)(cost, currency)
    if not unpriced_tokens:
        return _escaped(text)
    flag = f"{display.tokens_compact(unpriced_tokens)} tokens unpriced"
    if cost is None:
        return format_html(
            '<span class="unknown">{}</span> <span class="unpriced" title="{}">{}</span>',
            text,
            "No billed cost and no list price: the cost is unknown, not zero",
            flag,
        )
    return format_html(
        '{} <span class="unpriced" title="{}">+ {}</span>',
        text,
        "The priced part; these tokens have no price yet, so the total is higher",
        flag,
    )
