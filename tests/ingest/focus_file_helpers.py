"""Helpers of the FOCUS file tests: parse a fixture, bytes or a one-row CSV built on BASE; read the error."""

import csv
import datetime as dt
import io
from pathlib import Path

from ingest.connectors.focus.file import FocusFile

from .file_sources import refusal, rows_of

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "focus_file"
UTC = dt.UTC


def parse_file(name: str) -> list:
    with (FIXTURES / name).open("rb") as stream:
        return list(FocusFile().parse(stream, file_name=name))


def parse_bytes(data: bytes, name: str) -> list:
    return rows_of(FocusFile, data, name)


def parse_error(data: bytes, name: str) -> str:
    return refusal(FocusFile, data, name)


def fixture_error(name: str) -> str:
    return parse_error((FIXTURES / name).read_bytes(), name)


BASE = {
    "BilledCost": "1.00",
    "BillingCurrency": "USD",
    "BillingPeriodStart": "2026-03-01T00:00:00Z",
    "BillingPeriodEnd": "2026-04-01T00:00:00Z",
    "ChargeCategory": "Usage",
    "ChargePeriodStart": "2026-03-14T00:00:00Z",
    "ChargePeriodEnd": "2026-03-15T00:00:00Z",
    "ConsumedQuantity": "1000",
    "ConsumedUnit": "Tokens",
    "ProviderName": "OpenAI",
    "ServiceName": "OpenAI API",
    "SkuMeter": "gpt-4o-mini Input Tokens",
}


def focus_csv(*rows: dict, base: dict = BASE) -> bytes:
    """A small FOCUS CSV: BASE columns overridden per row (None drops a column)."""
    rows = [{k: v for k, v in {**base, **row}.items() if v is not None} for row in rows]
    header = list(dict.fromkeys(k for row in rows for k in row))
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    for row in rows:
        writer.writerow([row.get(c, "") for c in header])
    return out.getvalue().encode()


def one_row(**overrides):
    (row,) = parse_bytes(focus_csv(overrides), "inline.csv")
    return row


def without_source(row) -> dict:
    values = dict(vars(row))
    values.pop("source_ref")
    return values
