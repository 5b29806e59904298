"""The usage lines of one UTC calendar month, streamed for the FOCUS 1.2 export (finops/reports/usage_focus.py).

A month's lines are those whose period starts in it (the day the daily rollup files them under), so the export's
totals are the spend selectors' for the same month. They are read as plain dicts (`values()`, no model
instances) through a server-side cursor in chunks of CHUNK_LINES, ordered by (period start, id): memory stays
bounded however many millions of lines a month holds, and two exports of unchanged data are identical files.

Read for speed (docs/focus-export.md, "Speed"): Postgres writes the times as the FOCUS text itself (parsing a
timestamp into a datetime only to print it again was a third of the read), the tags come as JSON text parsed
once per tag set by the report, and the catalog's rates are looked up once per (provider, model, day, tier,
currency), not once per line. Accounts, providers and line signatures (their team and workload) are small
tables (ten million lines have a few thousand signatures): read whole before the cursor opens and joined here,
they spare the month's query half its time.
"""

import datetime as dt
from collections.abc import Iterator

from django.conf import settings
from django.db.models import CharField, F, Func, TextField
from django.db.models.functions import Cast

from finops.core.months import next_month, parse_month
from finops.models import Account, CostBasis, LineSignature, Provider, UsageLine
from finops.prices.selectors import PriceBook, class_rates

CHUNK_LINES = 10_000  # rows per fetch of the server-side cursor: few round trips, a few MB held
FIELDS = (  # the line's own columns; its account's, provider's and signature's are joined in Python (see month_lines)
    "id",
    "account_id",
    "provider_id",
    "signature_id",
    "model",
    "model_raw",
    "service_tier",
    "project_ref",
    "api_key_ref",
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
    "tag_set_id",
    "invoice_id",
)


class UtcText(Func):
    """A timestamptz as FOCUS Date/Time text, `2026-10-01T00:00:00Z` (ISO 8601 UTC with seconds), written by
    Postgres; NULL stays NULL."""

    template = "to_char(%(expressions)s AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')"
    output_field = CharField()

    def as_sqlite(self, compiler, connection, **extra_context):
        # `make demo`'s SQLite stores a datetime as UTC text (`2026-10-01 00:00:00`); strftime rewrites it. The
        # format goes as a parameter: its % signs would otherwise meet the driver's own placeholders.
        sql, params = compiler.compile(self.source_expressions[0])
        return f"strftime(%s, {sql})", ("%Y-%m-%dT%H:%M:%SZ", *params)


def _month_start_text(day: str) -> str:
    """`YYYY-MM-DD…` → its month's first midnight as FOCUS text."""
    return f"{day[:7]}-01T00:00:00Z"


def export_month(text: str, *, today: dt.date) -> dt.date:
    """`YYYY-MM` as the month's first day: any month begun, the current one included
    (finops.core.months.parse_month)."""
    return parse_month(text, today=today)


def _midnight(day: dt.date) -> dt.datetime:
    return dt.datetime.combine(day, dt.time(), tzinfo=dt.UTC)


def month_lines(month: dt.date, *, chunk_size: int = CHUNK_LINES) -> Iterator[dict]:
    """Every usage line whose period starts in `month` (UTC), as a dict of FIELDS plus:

    - `account__name`, `provider__name`, `provider__slug`, `signature__team__slug`, `signature__team__cost_center`,
      `signature__workload__slug` (None when no rule claims the line);
    - `period_start`, `period_end`, `billing_period_start`, `billing_period_end` as FOCUS Date/Time text (the
      billing period is the line's own when its source gave one, else its calendar month);
    - `tags_json`: the line's own tags as JSON text (parsed by the report once per tag set, not once per line);
    - `reporting_currency`;
    - `list_rates`: the catalog's $/M tokens of (input, cached input, cache write, output) on the line's day when
      the catalog prices the model in the line's currency (the FOCUS ListUnitPrice); None where it has no price
      in that currency, for unpriced usage and for charges that are not usage.
    """
    books = PriceBook.all_providers()  # catalog-sized, read once before the cursor opens, like the three below
    accounts = dict(Account.objects.values_list("id", "name"))
    providers = {pid: (name, slug) for pid, name, slug in Provider.objects.values_list("id", "name", "slug")}
    signatures = {
        sid: (team, cost_center or "", workload)
        for sid, team, cost_center, workload in LineSignature.objects.values_list(
            "id", "team__slug", "team__cost_center", "workload__slug"
        )
    }
    lines = (
        UsageLine.objects.filter(period_start__gte=_midnight(month), period_start__lt=_midnight(next_month(month)))
        .order_by("period_start", "id")
        .values(
            *FIELDS,
            period_start_text=UtcText(F("period_start")),
            period_end_text=UtcText(F("period_end")),
            billing_start_text=UtcText(F("billing_period_start")),
            tags_json=Cast("tag_set__tags", output_field=TextField()),
        )
    )
    reporting_currency = settings.FINOPS_REPORTING_CURRENCY
    period_ends: dict[str, str] = {}  # billing period start -> its end: a few per month
    rates: dict[tuple, tuple | None] = {}  # (provider, model, day, batch, currency) -> list_rates
    for row in lines.iterator(chunk_size=chunk_size):
        start = row["period_start"] = row.pop("period_start_text")
        row["period_end"] = row.pop("period_end_text")
        billing_start = row.pop("billing_start_text") or _month_start_text(start)
        billing_end = period_ends.get(billing_start)
        if billing_end is None:
            billing_end = period_ends[billing_start] = _month_start_text(
                next_month(dt.date.fromisoformat(billing_start[:10])).isoformat()
            )
        row["billing_period_start"], row["billing_period_end"] = billing_start, billing_end
        row["reporting_currency"] = reporting_currency
        row["account__name"] = accounts[row["account_id"]]
        row["provider__name"], row["provider__slug"] = providers[row["provider_id"]]
        row["signature__team__slug"], row["signature__team__cost_center"], row["signature__workload__slug"] = (
            signatures[row["signature_id"]]
        )
        if row["charge_category"] != "usage" or not row["model"] or row["cost_basis"] == CostBasis.UNPRICED:
            row["list_rates"] = None
        else:  # a month holds a few thousand (model, day) pairs: each looked up once (None: no price, remembered)
            key = (
                row["provider_id"],
                row["model"],
                start[:10],
                row["service_tier"].lower() == "batch",
                row["currency"],
            )
            if key not in rates:
                rates[key] = _list_rates(books.get(row["provider_id"]), *key[1:])
            row["list_rates"] = rates[key]
        yield row


def _list_rates(book: PriceBook | None, model: str, day: str, batch: bool, currency: str) -> tuple | None:
    price = book.price_on(model, dt.date.fromisoformat(day)) if book else None
    if price is None or price.currency != currency:
        return None
    rates = class_rates(price, batch=batch)
    return rates["input"], rates["cached_input"], rates["cache_write"], rates["output"]
