"""Reads for the rules pages: what each rule claims, and a preview of what a new or edited rule would claim."""

import datetime as dt
import re
from decimal import Decimal

from django.db.models import BigIntegerField, Case, Count, Q, Sum, Value, When
from django.utils import timezone

from finops.models import AttributionRule, DailySpend, LineSignature, TagSet, UsageLine

PREVIEW_DAYS = 30
CANDIDATE = -2  # the id a not-yet-saved rule takes in a preview
NOBODY = -1  # no rule matches: unattributed


def glob_to_regex(pattern: str) -> str:
    """`gpt-5*` → `^gpt\\-5.*$`: * is any run of characters, ? one character; case-insensitive by lower-casing."""
    parts = [".*" if ch == "*" else "." if ch == "?" else re.escape(ch) for ch in pattern.lower()]
    return "^" + "".join(parts) + "$"


def rule_q(rule: AttributionRule) -> Q:
    """What a rule matches, on its own (priority is applied by the CASE order): a filter on usage lines or on
    line signatures alike, as both name the columns rules read the same way."""
    q = Q()
    if rule.account_id:
        q &= Q(account_id=rule.account_id)
    if rule.provider_id:
        q &= Q(provider_id=rule.provider_id)
    if rule.project:
        q &= Q(project_ref=rule.project)
    if rule.api_key:
        q &= Q(api_key_ref=rule.api_key)
    if rule.user:
        q &= Q(user_ref=rule.user)
    if rule.model:
        # Normalised ids are lower-case; the raw string is tried too, so a rule can name a dated snapshot.
        regex = glob_to_regex(rule.model)
        q &= Q(model__regex=regex) | Q(model_raw__iregex=regex)
    if rule.tags:
        # Tag sets are stored once (TagSet); a subquery keeps the condition join-free, so it also works in UPDATE.
        q &= Q(
            tag_set_id__in=TagSet.objects.filter(**{f"tags__{k}": str(v) for k, v in rule.tags.items()}).values("id")
        )
    # A rule without conditions is a catch-all (SQL needs a condition that is always true; it names a
    # signature column, so it also holds where the CASE is evaluated over signatures).
    return q or Q(account_id__isnull=False)


def _since(days: int) -> dt.datetime:
    today = timezone.now().astimezone(dt.UTC).date()
    return dt.datetime.combine(today - dt.timedelta(days=days), dt.time(), tzinfo=dt.UTC)


def _first_match(rules: list[AttributionRule]):
    whens = [When(rule_q(r), then=Value(r.id if r.id else CANDIDATE)) for r in rules]
    return (
        Case(*whens, default=Value(NOBODY), output_field=BigIntegerField())
        if whens
        else Value(NOBODY, output_field=BigIntegerField())
    )


def _ordered(rules: list[AttributionRule]) -> list[AttributionRule]:
    return sorted(rules, key=lambda r: (r.priority, r.id if r.id else float("inf")))


def rule_preview(*, candidate: AttributionRule, days: int = PREVIEW_DAYS) -> dict:
    """The lines and dollars of the last `days` days the candidate would claim, by who claims them now.

    The candidate is evaluated in its place among the other rules (replacing itself when it is an edit). Rules
    look only at a line's signature, so both CASEs run over the signature table (thousands of rows), and the
    lines of the period are summed per claimed signature: one pass over the period's lines, no CASE per line.
    """
    current = list(AttributionRule.objects.select_related("workload").order_by("priority", "id"))
    proposed = _ordered([r for r in current if r.id != candidate.id] + [candidate])
    target = candidate.id or CANDIDATE
    claimed = LineSignature.objects.annotate(now=_first_match(current), new=_first_match(proposed)).filter(new=target)
    claimant = dict(claimed.values_list("id", "now"))
    per_signature = (
        UsageLine.objects.filter(period_start__gte=_since(days), signature_id__in=claimed.values("id"))
        .values_list("signature_id")
        .annotate(lines=Count("id"), cost=Sum("reporting_cost"), tokens=Sum("input_tokens") + Sum("output_tokens"))
        .order_by()
    )
    by_claimant: dict[int, dict] = {}
    for signature_id, lines, cost, tokens in per_signature:
        # Cost stays None while only unpriced lines are claimed: unknown, never $0 (invariant 4).
        totals = by_claimant.setdefault(claimant[signature_id], {"lines": 0, "cost": None, "tokens": 0})
        totals["lines"] += lines
        if cost is not None:
            totals["cost"] = (totals["cost"] or Decimal(0)) + cost
        totals["tokens"] += tokens or 0
    labels = {r.id: str(r) for r in current}
    sources = sorted(
        (
            {
                "source": "unattributed" if now == NOBODY else ("this rule" if now == target else labels.get(now, "?")),
                **totals,
            }
            for now, totals in by_claimant.items()
        ),
        key=lambda source: (source["cost"] is not None, source["cost"] or Decimal(0)),
        reverse=True,
    )
    # Nothing claimed costs 0; claimed lines none of which has a price cost what nobody knows (None).
    costs = [s["cost"] for s in sources if s["cost"] is not None]
    return {
        "days": days,
        "lines": sum(s["lines"] for s in sources),
        "cost": sum(costs, Decimal(0)) if costs or not sources else None,
        "sources": sources,
    }


def rules_with_claims(*, days: int = PREVIEW_DAYS) -> list[dict]:
    """Rules in evaluation order with the spend each claims in the rollup now (last `days` days)."""
    since = _since(days).date()
    by_workload = dict(
        DailySpend.objects.filter(day__gte=since)
        .values_list("workload_id")
        .annotate(c=Sum("reporting_cost"))
        .order_by()
    )
    rules = AttributionRule.objects.select_related("workload__team", "account", "provider").order_by("priority", "id")
    return [{"rule": r, "workload_cost": by_workload.get(r.workload_id)} for r in rules]


def unattributed_cost(*, days: int = PREVIEW_DAYS) -> Decimal:
    since = _since(days).date()
    return DailySpend.objects.filter(day__gte=since, workload__isnull=True).aggregate(c=Sum("reporting_cost"))[
        "c"
    ] or Decimal(0)
