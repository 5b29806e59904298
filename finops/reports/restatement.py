"""What changed in a month's report since it was published: the restatement diff (issue 14).

Two versions of the same month (a snapshot and the live figures, or two snapshots) are compared table by table,
row by row (rows matched by tco_tables.row_key), on every figure that is an amount or a count: money, tokens,
counts and requests. Ratios ($/M tokens, shares, changes) follow from those and are left out so one restated
line is not reported five times. A row present in one version only shows with the other side empty; a table one
version does not hold at all (the report gained it after that version was published) is not compared: new, not
restated. No ORM here.
"""

from decimal import Decimal

from finops.core import display

from .tables import Column, Table
from .tco_tables import SECTIONS, TITLES, row_key

COMPARED = {"money", "tokens", "count", "requests"}

RESTATEMENT = Table(
    "restatement",
    (
        Column("Table", "table"),
        Column("Row", "label"),
        Column("Figure", "figure"),
        Column("Published", "published", "text"),
        Column("Now", "now", "text"),
        Column("Difference", "difference", "text"),
    ),
    empty="No figure changed since it was published.",
)


def _figure(kind: str, value):
    if value is None:
        return None
    return Decimal(value) if kind == "money" else int(value)


def _text(kind: str, value) -> str:
    if value is None:
        return display.DASH
    return display.money_exact(value) if kind == "money" else display.count(value)


def diff(published, now) -> list[dict]:
    """[{table, label, figure, published, now, difference, kind, delta}] for each compared figure that differs."""
    changes = []
    for section in SECTIONS:
        for table in section.tables:
            if not (_holds(published, table.name) and _holds(now, table.name)):
                continue  # a table the report gained after a version was published: new, not restated
            before = {row_key(table, row): row for row in published.rows(table.name)}
            after = {row_key(table, row): row for row in now.rows(table.name)}
            for key in list(before) + [k for k in after if k not in before]:
                old, new = before.get(key, {}), after.get(key, {})
                label = " · ".join(str(part) for part in key if part not in (None, "")) or TITLES[table.name]
                for column in table.columns:
                    if column.kind not in COMPARED:
                        continue
                    a, b = _figure(column.kind, old.get(column.key)), _figure(column.kind, new.get(column.key))
                    if a == b:
                        continue
                    delta = None if a is None or b is None else b - a
                    changes.append(
                        {
                            "table": TITLES[table.name],
                            "label": label,
                            "figure": column.title(),
                            "kind": column.kind,
                            "published": _text(column.kind, a),
                            "now": _text(column.kind, b),
                            "difference": _signed(column.kind, delta),
                            "delta": delta,
                            "published_value": a,
                            "now_value": b,
                        }
                    )
    return changes


def _holds(report, name: str) -> bool:
    tables = getattr(report, "tables", None)
    return tables is None or name in tables


def _signed(kind: str, delta) -> str:
    if delta is None:
        return display.DASH  # one side unknown or absent: no difference to compute
    return ("+" if delta > 0 else "") + _text(kind, delta)
