"""A usage line as ingestion writes it: its columns in COPY order with their binary COPY types, the bounds of what
a column can hold, and the errors a run reports. Shared by the line preparer (ingest/preparing.py), the writers
(ingest/writing.py, ingest/columnar.py, ingest/columnar_gateway.py) and the bench.
"""

import datetime as dt
from decimal import Decimal

from finops.performance.measures import LINE_COLUMNS

Window = tuple[dt.datetime, dt.datetime]

# UsageLine columns written by ingestion, in COPY order.
COLUMNS = (
    "account_id",
    "provider_id",
    "ingest_run_id",
    "period_start",
    "period_end",
    "model",
    "model_raw",
    "service_tier",
    "project_ref",
    "api_key_ref",
    "user_ref",
    "tag_set_id",
    "input_tokens",
    "cached_input_tokens",
    "cache_write_tokens",
    "output_tokens",
    "requests",
    "cost",
    "currency",
    "reporting_cost",
    "cost_basis",
    "charge_category",
    *LINE_COLUMNS,
    "billing_period_start",
    "signature_id",
    "invoice_id",
)
TIME_COLUMNS = tuple(COLUMNS.index(name) for name in ("period_start", "period_end", "billing_period_start"))
# Binary COPY type of each column.
_COPY_TYPE = {
    "timestamptz": ("period_start", "period_end", "billing_period_start"),
    "numeric": ("cost", "reporting_cost"),
    "int8": (
        "account_id",
        "provider_id",
        "ingest_run_id",
        "tag_set_id",
        "input_tokens",
        "cached_input_tokens",
        "cache_write_tokens",
        "output_tokens",
        "requests",
        "signature_id",
        *LINE_COLUMNS[:-2],
    ),
    "float8": ("summary_p99_ms",),
    "int8[]": ("latency",),
}
NO_PERFORMANCE = (None,) * len(LINE_COLUMNS)
COPY_TYPES = tuple(next((t for t, names in _COPY_TYPE.items() if name in names), "text") for name in COLUMNS)


MAX_AMOUNT = Decimal(10) ** 20  # NUMERIC(38, 18)
MAX_COUNT = 2**63 - 1  # bigint


class UnsafeModelName(ValueError):
    """A source's model name holds a control character; the caller names the row (or declines the batch)."""


class IngestError(Exception):
    """A run cannot complete; the message is shown to the user as it is."""


def day_of(moment: dt.datetime) -> dt.date:
    return moment.astimezone(dt.UTC).date()
