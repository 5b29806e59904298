"""Reconciliation: what billed usage would cost at list price (tokens × catalog price of the day) against
the bill, so a wrong price, a missing line or a discount shows as variance (docs/architecture.md invariant 5)."""

from collections import defaultdict
from decimal import Decimal

from django.db.models import QuerySet, Sum

from finops.models import CostBasis, DailySpend, Provider
from finops.prices.selectors import PriceBook, Tokens, cost_from_price

ZERO = Decimal(0)


def _groups(rows: QuerySet[DailySpend], *by: str):
    """Billed usage by (day, model) in the rollup (first by `by`), with its token classes and billed amount."""
    return (
        rows.filter(cost_basis=CostBasis.BILLED, charge_category="usage")
        .values(*by, "day", "model")
        .annotate(
            billed=Sum("reporting_cost"),
            input=Sum("input_tokens"),
            cached=Sum("cached_input_tokens"),
            write=Sum("cache_write_tokens"),
            output=Sum("output_tokens"),
        )
        .order_by(*by, "day", "model")
    )


def reconciliation(*, provider: Provider, rows: QuerySet[DailySpend]) -> dict:
    """{"days": [...], "models": [...]} with billed usage, at_list (None where no price), variance, and per day the
    non-usage charges (tax, credits, fees) of the bill."""
    book = PriceBook.for_provider(provider)
    by_day: dict = defaultdict(lambda: {"billed": ZERO, "at_list": ZERO, "unpriced_billed": ZERO, "non_usage": ZERO})
    by_model: dict = defaultdict(lambda: {"billed": ZERO, "at_list": ZERO, "tokens": 0, "unpriced_billed": ZERO})
    for group in _groups(rows):
        by_model[group["model"]]["tokens"] += group["input"] + group["cached"] + group["write"] + group["output"]
        _add(group, book, by_day[group["day"]], by_model[group["model"]])
    # Tax, credits and fees are on the bill but are not usage: their own column, outside the variance.
    charges = rows.exclude(charge_category="usage").values("day").annotate(cost=Sum("reporting_cost")).order_by()
    for charge in charges:
        by_day[charge["day"]]["non_usage"] += charge["cost"] or ZERO
    return {
        "days": [_finish({"day": day, **values}) for day, values in sorted(by_day.items())],
        "models": sorted(
            (_finish({"model": m, **v}) for m, v in by_model.items()),
            key=lambda r: -(r["billed"] + r["unpriced_billed"]),
        ),
    }


def _add(group: dict, book: PriceBook, *buckets: dict) -> None:
    """One (day, model) group of billed usage into each bucket: billed and at list price, or unpriced billed."""
    price = book.price_on(group["model"], group["day"])
    billed = group["billed"] or ZERO
    if price is None:
        for bucket in buckets:
            bucket["unpriced_billed"] += billed
        return
    at_list = cost_from_price(price, Tokens(group["input"], group["cached"], group["write"], group["output"]))
    for bucket in buckets:
        bucket["billed"] += billed
        bucket["at_list"] += at_list


def provider_totals(rows: QuerySet[DailySpend]) -> dict[int, dict]:
    """{provider id: {"billed", "at_list", "unpriced_billed", "variance"}}: reconciliation()'s models summed, for
    every provider with billed usage in `rows`, in one read (the monthly report's table; the same arithmetic)."""
    books = PriceBook.all_providers()
    totals: dict = defaultdict(lambda: {"billed": ZERO, "at_list": ZERO, "unpriced_billed": ZERO})
    for group in _groups(rows, "provider_id"):
        _add(group, books.get(group["provider_id"]) or PriceBook([]), totals[group["provider_id"]])
    return {provider_id: _finish(values) for provider_id, values in totals.items()}


def _finish(row: dict) -> dict:
    """variance = (billed − at list price) / at list price, over the priced part only."""
    row["variance"] = (row["billed"] - row["at_list"]) / row["at_list"] if row["at_list"] else None
    if "tokens" in row:
        priced_tokens = row["tokens"]
        row["billed_per_mtok"] = (
            (row["billed"] + row["unpriced_billed"]) / priced_tokens * 1_000_000 if priced_tokens else None
        )
        row["list_per_mtok"] = row["at_list"] / priced_tokens * 1_000_000 if priced_tokens and row["at_list"] else None
    return row
