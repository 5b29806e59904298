"""Spend grouped by what only the usage lines carry: API key, project, user and tags. The rollups have none of
these dimensions, so this is a drill-down read (docs/architecture.md performance approach): the raw lines of a period of
at most MAX_DAYS days, found by `period_start` through the (account, period_start) BRIN index, joined to their
signatures (a few thousand rows) for the refs, the tag set, the workload and the team.

Scoped exactly like the rollups (finops.core.access): someone who sees everything sees every line; a member only
lines whose signature's team is theirs, so never an unattributed one. Explore's filters mean the same here as
on the rollups. Rows come out with the measures of finops.spend.selectors.spend.sums (cost None where no line of the
group has a price, never 0; $/M over priced tokens only).
"""

import datetime as dt
import decimal

from django.db.models import Count, F, Q, QuerySet, Sum
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import TruncDate

from finops.core import access
from finops.models import Account, CostBasis, LineSignature, Provider, TagSet, UsageLine

from . import spend

# A quarter, as the daily rollup's longest read (spend.DAILY_READ_MAX_DAYS): 92 days cover any calendar quarter.
MAX_DAYS = 92

REFS = {"api_key": "signature__api_key_ref", "project": "signature__project_ref", "user": "signature__user_ref"}
GROUPINGS = (*REFS, "tag")
# Explore's filters (finops.spend.selectors.explore.FILTERS) on a line: workload and team are its signature's.
FILTERS = {
    "team": "signature__team__slug",
    "workload": "signature__workload__slug",
    "provider": "provider__slug",
    "account": "account__name",
    "model": "model",
    "basis": "cost_basis",
}
UNATTRIBUTED_FILTER = "-"  # the filter value meaning "no team / no workload" (as Explore's)

_UNPRICED = Q(cost_basis=CostBasis.UNPRICED)
MEASURES = {
    "cost": Sum("reporting_cost"),
    "tokens": Sum("input_tokens") + Sum("cached_input_tokens") + Sum("cache_write_tokens") + Sum("output_tokens"),
    "unpriced_tokens": (
        Sum("input_tokens", filter=_UNPRICED)
        + Sum("cached_input_tokens", filter=_UNPRICED)
        + Sum("cache_write_tokens", filter=_UNPRICED)
        + Sum("output_tokens", filter=_UNPRICED)
    ),
    "requests": Sum("requests"),
    "lines": Count("id"),
    "priced_lines": Count("id", filter=~_UNPRICED),
}


class PeriodTooLong(ValueError):
    """Raw lines are read for a bounded period only; forms say so before asking."""


def too_long(start: dt.date, end: dt.date) -> bool:
    return (end - start).days > MAX_DAYS


def _midnight(day: dt.date) -> dt.datetime:
    return dt.datetime.combine(day, dt.time(), tzinfo=dt.UTC)


def visible_lines(user, start: dt.date, end: dt.date) -> QuerySet[UsageLine]:
    """The lines of [start, end) (UTC days, by period_start, as the daily rollup counts them) the user may see."""
    if too_long(start, end):
        raise PeriodTooLong(f"Usage lines are read for at most {MAX_DAYS} days at a time.")
    lines = UsageLine.objects.filter(period_start__gte=_midnight(start), period_start__lt=_midnight(end))
    if access.can_see_unattributed(user):
        return lines
    # The team ids as a list, not a subquery, as spend.visible_spend does.
    return lines.filter(signature__team_id__in=list(access.visible_teams(user).values_list("id", flat=True)))


def filtered(lines: QuerySet[UsageLine], filters: dict) -> QuerySet[UsageLine]:
    """`lines` narrowed by Explore's filters ({name: value}; empty values are ignored)."""
    for name, value in filters.items():
        if not value:
            continue
        if name in ("team", "workload") and value == UNATTRIBUTED_FILTER:
            lines = lines.filter(**{f"signature__{name}__isnull": True})
        else:
            lines = lines.filter(**{FILTERS[name]: value})
    return lines


def unattributed(lines: QuerySet[UsageLine]) -> QuerySet[UsageLine]:
    """Lines no rule claims (no workload), as the rollups' unattributed rows."""
    return lines.filter(signature__workload__isnull=True)


def group_expression(grouping: str, tag_key: str = ""):
    """What a line is grouped by: its signature's API key, project or user ref, or the value of one tag key
    (NULL where the line's tag set has no such key)."""
    if grouping == "tag":
        if not tag_key:
            raise ValueError("Grouping by tag needs a tag key.")
        return KeyTextTransform(tag_key, "signature__tag_set__tags")
    return F(REFS[grouping])


def by_day(lines: QuerySet[UsageLine], grouping: str, tag_key: str = "") -> list[dict]:
    """MEASURES per (UTC day, group): rows {point, group, cost, tokens, unpriced_tokens, priced_tokens,
    requests, lines, usd_per_mtok}."""
    rows = (
        lines.values(point=TruncDate("period_start", tzinfo=dt.UTC), group=group_expression(grouping, tag_key))
        .annotate(**MEASURES)
        .order_by()
    )
    return [spend.finish(dict(row)) for row in rows]


def by_signature(lines: QuerySet[UsageLine]) -> list[dict]:
    """MEASURES per line signature, each row with what its signature says: `api_key`, `project`, `user` (the
    refs, "" where the line has none), `tags`, `account_id`, `provider_id`. One pass over the lines whatever is
    grouped afterwards (by_ref, by_tag_pair): a period's lines have a few thousand signatures."""
    rows = [spend.finish(dict(row)) for row in lines.values("signature_id").annotate(**MEASURES).order_by()]
    signatures = {
        s["id"]: s
        for s in LineSignature.objects.filter(id__in=[row["signature_id"] for row in rows]).values(
            "id", "api_key_ref", "project_ref", "user_ref", "tag_set_id", "account_id", "provider_id"
        )
    }
    tags = dict(TagSet.objects.filter(id__in={s["tag_set_id"] for s in signatures.values()}).values_list("id", "tags"))
    for row in rows:
        signature = signatures[row["signature_id"]]
        row.update(
            api_key=signature["api_key_ref"],
            project=signature["project_ref"],
            user=signature["user_ref"],
            tags=tags.get(signature["tag_set_id"]) or {},
            account_id=signature["account_id"],
            provider_id=signature["provider_id"],
        )
    return rows


def by_ref(rows: list[dict], grouping: str) -> list[dict]:
    """by_signature's rows per API key, project or user (`group`: the ref), each with the accounts and providers
    its lines come from (`account_ids`, `provider_ids`), biggest spend first (spend.by_cost)."""
    return spend.by_cost(_with_sources([{**row, "group": row[grouping]} for row in rows], ("group",)))


def by_tag_pair(rows: list[dict]) -> list[dict]:
    """by_signature's rows per tag key=value pair (`tag_key`, `tag_value`), with the accounts and providers,
    biggest first. A line with several tags counts under each of them (so these rows do not add up to the
    lines' total); lines without any tag are one row whose pair is (None, None)."""
    spread = []
    for row in rows:
        pairs = sorted(row["tags"].items()) or [(None, None)]
        spread += [{**row, "tag_key": key, "tag_value": None if value is None else str(value)} for key, value in pairs]
    return spend.by_cost(_with_sources(spread, ("tag_key", "tag_value")))


def _with_sources(rows: list[dict], keys: tuple[str, ...]) -> list[dict]:
    """Rows of one (group, account, provider) each, merged per `keys`, with the accounts and providers."""
    sources: dict[tuple, tuple[set, set]] = {}
    for row in rows:
        accounts, providers = sources.setdefault(tuple(row[k] for k in keys), (set(), set()))
        accounts.add(row["account_id"])
        providers.add(row["provider_id"])
    totals = merged_rows(rows, keys)
    for total in totals:
        accounts, providers = sources[tuple(total[k] for k in keys)]
        total["account_ids"], total["provider_ids"] = sorted(accounts), sorted(providers)
    return totals


def merged_rows(rows: list[dict], keys: tuple[str, ...]) -> list[dict]:
    """Finished rows (spend.finish) with the same `keys` added up, in order of first appearance: the cost is
    the sum of the known costs, None where every part's is unknown; $/M again over the priced tokens only."""
    merged: dict[tuple, dict] = {}
    with decimal.localcontext(prec=80):  # exact: NUMERIC(38, 18) sums can need more than 28 digits
        for row in rows:
            total = merged.setdefault(
                tuple(row[k] for k in keys),
                {
                    **{k: row[k] for k in keys},
                    "cost": None,
                    "tokens": 0,
                    "unpriced_tokens": 0,
                    "requests": 0,
                    "lines": 0,
                },
            )
            if row["cost"] is not None:
                total["cost"] = row["cost"] if total["cost"] is None else total["cost"] + row["cost"]
            for name in ("tokens", "unpriced_tokens", "requests", "lines"):
                total[name] += row[name] or 0
    for total in merged.values():
        total["priced_tokens"] = total["tokens"] - total["unpriced_tokens"]
        total["usd_per_mtok"] = spend.per_mtok(total["cost"], total["priced_tokens"])
    return list(merged.values())


def source_names(account_ids: list[int], provider_ids: list[int]) -> tuple[dict, dict]:
    """Names of the accounts and providers rows mention, read once for a page."""
    return (
        dict(Account.objects.filter(id__in=account_ids).values_list("id", "name")),
        dict(Provider.objects.filter(id__in=provider_ids).values_list("id", "name")),
    )
