"""Explore's table, defined once for the page and its CSV (finops.reports.tables). Its first column is the
grouping (Provider, Day, API key …), so the spec is built per grouping, always from the same columns."""

from functools import cache

from .spend_tables import MODEL_ID, PER_MTOK, TOKENS, spend
from .tables import Column, Table

REQUESTS = Column("Requests", "requests", "requests", help="— where the source does not report requests")


@cache
def explore_table(group_label: str, *, model: bool = False) -> Table:
    """`group_label` heads the first column (the group's label); `model` adds the model id for the CSV."""
    columns = (Column(group_label, "label"), *((MODEL_ID,) if model else ()), spend(), TOKENS, REQUESTS, PER_MTOK)
    return Table("explore", columns, empty="No spend matches these filters in this period.")
