"""The `spend` report: the figures of `manage.py spend` and `GET /api/v1/spend`, from the daily rollup.

One row per group with Decimal money in the reporting currency and integer token counts;
`usd_per_mtok` = Σcost / Σ(input + output) × 10⁶ over the group (sum over sum, invariant 6), where
input is all input (uncached + cached + cache write).
"""

import datetime as dt
from decimal import Decimal

from django.db.models import F, Q, Sum

from finops.models import CostBasis, DailySpend

from . import spend

GROUPS = {
    "provider": "provider__slug",
    "account": "account__name",
    "model": "model",
    "day": "day",
    "team": "team__slug",
    "workload": "workload__slug",
}
ZERO = Decimal(0)
ALL_INPUT = F("input_tokens") + F("cached_input_tokens") + F("cache_write_tokens")
UNPRICED = Q(cost_basis=CostBasis.UNPRICED)


def spend_rows(*, user=None, start: dt.date, end: dt.date, by: str) -> list[dict]:
    """Rows for [start, end) grouped by `by`; `user` scopes them (None: everything, for the CLI)."""
    if by not in GROUPS:
        raise ValueError(f"group_by must be one of {', '.join(GROUPS)}")
    if end <= start:
        raise ValueError("end must be after start (end is exclusive)")
    rows = DailySpend.objects.all() if user is None else spend.visible_spend(user)
    grouped = (
        spend.period(rows, start, end)
        .values(group=F(GROUPS[by]))
        .annotate(
            cost=Sum("reporting_cost"),
            billed_cost=Sum("reporting_cost", filter=Q(cost_basis=CostBasis.BILLED)),
            estimated_cost=Sum("reporting_cost", filter=Q(cost_basis=CostBasis.ESTIMATED)),
            unpriced_tokens=Sum(ALL_INPUT + F("output_tokens"), filter=UNPRICED),
            input_tokens=Sum(ALL_INPUT),
            cached_input_tokens=Sum("cached_input_tokens"),
            cache_write_tokens=Sum("cache_write_tokens"),
            output_tokens=Sum("output_tokens"),
            requests=Sum("requests"),
        )
        .order_by(F("group").asc(nulls_last=True))
    )
    return [_finish(row) for row in grouped]


def _finish(row: dict) -> dict:
    for money in ("cost", "billed_cost", "estimated_cost"):
        row[money] = row[money] or ZERO
    for count in ("unpriced_tokens", "input_tokens", "cached_input_tokens", "cache_write_tokens", "output_tokens", "requests"):
        row[count] = row[count] or 0
    tokens = row["input_tokens"] + row["output_tokens"]
    row["usd_per_mtok"] = row["cost"] / tokens * 1_000_000 if tokens else None
    if isinstance(row["group"], dt.date):
        row["group"] = row["group"].isoformat()
    return row


FIELDS = (
    "group", "cost", "billed_cost", "estimated_cost", "unpriced_tokens", "input_tokens", "cached_input_tokens",
    "cache_write_tokens", "output_tokens", "requests", "usd_per_mtok",
)


def decimal_text(value: Decimal | None, places: int = 6) -> str | None:
    """Money as a decimal string, rounded half-even to `places` (micro-dollars by default), no exponent."""
    if value is None:
        return None
    return format(value.quantize(Decimal(1).scaleb(-places)), "f")


def as_json(rows: list[dict]) -> list[dict]:
    return [
        {
            **{k: row[k] for k in FIELDS},
            **{k: decimal_text(row[k]) for k in ("cost", "billed_cost", "estimated_cost", "usd_per_mtok")},
        }
        for row in rows
    ]
