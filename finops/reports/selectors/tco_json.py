"""A report's figures as JSON and back, exactly: what a snapshot stores (finops.models.ReportSnapshot.figures).

Decimal, date and datetime values are tagged ({"$d": "1043.120000"}, {"$date": "2026-10-01"}, {"$dt": "…Z"}) so
a published report reads back with the very values it was rendered from: a Decimal stays a Decimal to its last
digit (never a float), a date a date. Everything else is JSON already (str, int, bool, None, lists, dicts).
"""

import datetime as dt
from decimal import Decimal


def dump(value):
    """`value` with its Decimals, dates and datetimes tagged (a new structure; the input is not changed)."""
    if isinstance(value, Decimal):
        return {"$d": format(value, "f")}
    if isinstance(value, dt.datetime):
        return {"$dt": value.astimezone(dt.UTC).isoformat()}
    if isinstance(value, dt.date):
        return {"$date": value.isoformat()}
    if isinstance(value, dict):
        return {str(key): dump(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [dump(item) for item in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise TypeError(f"a report figure must be plain data, not {type(value).__name__}: {value!r}")


def load(value):
    """The inverse of dump()."""
    if isinstance(value, dict):
        if len(value) == 1:
            ((tag, text),) = value.items()
            if tag == "$d":
                return Decimal(text)
            if tag == "$date":
                return dt.date.fromisoformat(text)
            if tag == "$dt":
                return dt.datetime.fromisoformat(text)
        return {key: load(item) for key, item in value.items()}
    if isinstance(value, list):
        return [load(item) for item in value]
    return value
