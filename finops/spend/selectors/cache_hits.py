"""What a gateway's own cache saved: the requests LiteLLM answered from its cache (finops.models.GatewayCacheHit),
per model, for a workload's page or a source's page. Not spend: the list cost is an estimate of what the
providers would have billed, shown labelled as such and never added to a spend total."""

import datetime as dt
from dataclasses import dataclass, field
from decimal import Decimal

from django.db.models import Count, Sum

from finops.models import GatewayCacheHit, Provider

SUMMED = ("requests", "input_tokens", "cached_input_tokens", "cache_write_tokens", "output_tokens")


@dataclass
class CacheSavings:
    rows: list[dict] = field(default_factory=list)  # per provider × model, most requests first
    total: dict | None = None  # the sum of `rows`; None when the cache served nothing

    def __bool__(self) -> bool:
        return self.total is not None


def cache_savings(*, start: dt.date, end: dt.date, workload=None, account=None) -> CacheSavings:
    """Cache hits of [start, end] (UTC days, both included), of one workload or one account."""
    lines = GatewayCacheHit.objects.filter(
        period_start__gte=_midnight(start), period_start__lt=_midnight(end) + dt.timedelta(days=1)
    )
    if workload is not None:
        lines = lines.filter(signature__workload=workload)
    if account is not None:
        lines = lines.filter(account=account)
    names = dict(Provider.objects.values_list("id", "name"))
    rows = []
    for row in (
        lines.values("provider_id", "model")
        .annotate(
            **{f"{name}_sum": Sum(name) for name in SUMMED},
            cost_sum=Sum("list_cost"),
            lines=Count("id"),
            priced=Count("list_cost"),
        )
        .order_by("-requests_sum", "provider_id", "model")
    ):
        row.update({name: row.pop(f"{name}_sum") for name in SUMMED})
        row["provider"] = names.get(row["provider_id"], "")
        row["tokens"] = sum(row[name] for name in SUMMED[1:])
        # Partly unpriced: the estimate is unknown, not the priced part's sum.
        row["list_cost"] = row.pop("cost_sum") if row["priced"] == row["lines"] else None
        rows.append(row)
    if not rows:
        return CacheSavings()
    total = {name: sum(r[name] for r in rows) for name in (*SUMMED, "tokens")}
    costs = [r["list_cost"] for r in rows]
    total["list_cost"] = None if None in costs else sum(costs, Decimal(0))
    return CacheSavings(rows=rows, total=total)


def _midnight(day: dt.date) -> dt.datetime:
    return dt.datetime.combine(day, dt.time(), tzinfo=dt.UTC)
