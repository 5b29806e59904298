"""Reads for the rules pages: what each rule claims, and a preview of what a new or edited rule would claim."""

import datetime as dt
from decimal import Decimal

from django.db.models import BigIntegerField, Case, Count, Sum, Value, When
from django.utils import timezone

from finops.models import AttributionRule, DailySpend, UsageLine
from finops.services.attribution import rule_q

PREVIEW_DAYS = 30
CANDIDATE = -2  # the id a not-yet-saved rule takes in a preview
NOBODY = -1  # no rule matches: unattributed


def _since(days: int) -> dt.datetime:
    today = timezone.now().astimezone(dt.UTC).date()
    return dt.datetime.combine(today - dt.timedelta(days=days), dt.time(), tzinfo=dt.UTC)


def _first_match(rules: list[AttributionRule]):
    whens = [When(rule_q(r), then=Value(r.id if r.id else CANDIDATE)) for r in rules]
    return Case(*whens, default=Value(NOBODY), output_field=BigIntegerField()) if whens else Value(NOBODY, output_field=BigIntegerField())


def _ordered(rules: list[AttributionRule]) -> list[AttributionRule]:
    return sorted(rules, key=lambda r: (r.priority, r.id if r.id else float("inf")))


def rule_preview(*, candidate: AttributionRule, days: int = PREVIEW_DAYS) -> dict:
    """The lines and dollars of the last `days` days the candidate would claim, by who claims them now.

    The candidate is evaluated in its place among the other rules (replacing itself when it is an edit).
    """
    current = list(AttributionRule.objects.select_related("workload").order_by("priority", "id"))
    proposed = _ordered([r for r in current if r.id != candidate.id] + [candidate])
    target = candidate.id or CANDIDATE
    lines = UsageLine.objects.filter(period_start__gte=_since(days)).annotate(now=_first_match(current), new=_first_match(proposed))
    claimed = (
        lines.filter(new=target)
        .values("now")
        .annotate(lines=Count("id"), cost=Sum("reporting_cost"), tokens=Sum("input_tokens") + Sum("output_tokens"))
        .order_by("-cost")
    )
    labels = {r.id: str(r) for r in current}
    sources = [
        {
            "source": "unattributed" if row["now"] == NOBODY else ("this rule" if row["now"] == target else labels.get(row["now"], "?")),
            "lines": row["lines"],
            "cost": row["cost"] or Decimal(0),
            "tokens": row["tokens"] or 0,
        }
        for row in claimed
    ]
    return {
        "days": days,
        "lines": sum(s["lines"] for s in sources),
        "cost": sum((s["cost"] for s in sources), Decimal(0)),
        "sources": sources,
    }


def rules_with_claims(*, days: int = PREVIEW_DAYS) -> list[dict]:
    """Rules in evaluation order with the spend each claims in the rollup now (last `days` days)."""
    since = _since(days).date()
    by_workload = dict(
        DailySpend.objects.filter(day__gte=since).values_list("workload_id").annotate(c=Sum("reporting_cost")).order_by()
    )
    rules = AttributionRule.objects.select_related("workload__team", "account", "provider").order_by("priority", "id")
    return [{"rule": r, "workload_cost": by_workload.get(r.workload_id)} for r in rules]


def unattributed_cost(*, days: int = PREVIEW_DAYS) -> Decimal:
    since = _since(days).date()
    return DailySpend.objects.filter(day__gte=since, workload__isnull=True).aggregate(c=Sum("reporting_cost"))["c"] or Decimal(0)
