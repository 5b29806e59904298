"""The `spend` report: the figures of `manage.py spend` and `GET /api/v1/spend`, from the rollups.

One row per group with Decimal money in the reporting currency and integer token counts. Unknown cost is never
0 (invariant 4): `cost` sums the priced rows (billed + estimated) and is None when the group has none;
`usd_per_mtok` = Σcost / Σpriced tokens × 10⁶ (sum over sum, invariant 6) — tokens with no price are counted in
`unpriced_tokens` beside it, never in its denominator, where they would make the price look cheaper.
`input_tokens` is all input (uncached + cached + cache write).

The period is read through finops.spend.selectors.periods (whole months from MonthlySpend, the edges from DailySpend),
except by day, which needs every day. Every measure is a sum, so the figures are exactly DailySpend summed over
[start, end); whether a group has priced, billed or estimated rows in the period is decided by net line counts,
since a month minus its days outside the period can net a cost to 0 where there was none.

Filters are Explore's (finops.spend.selectors.explore.FILTERS); a filter value must name something the viewer may see
(`filter_errors`), so a typo or another team's slug answers an error rather than an empty, "$0" report.
"""

import datetime as dt
import decimal
from decimal import Decimal

from django.conf import settings
from django.db.models import F, Q, Sum
from django.utils import timezone

from finops.core import access
from finops.models import Account, CostBasis, DailySpend, ModelPrice, MonthlySpend, Provider, Team, Workload

from . import spend
from .explore import FILTERS, UNATTRIBUTED, filtered

GROUPS = {
    "provider": "provider__slug",
    "account": "account__name",
    "model": "model",
    "day": "day",
    "month": None,  # the UTC calendar month: MonthlySpend's `month`, or the month of DailySpend's `day`
    "team": "team__slug",
    "workload": "workload__slug",
}
FILTER_NAMES = tuple(FILTERS)
NO_MODEL_LABEL = "(no model: taxes, credits, fees)"
UNATTRIBUTED_LABEL = "Unattributed"

ALL_INPUT = F("input_tokens") + F("cached_input_tokens") + F("cache_write_tokens")
ALL_TOKENS = ALL_INPUT + F("output_tokens")
BILLED = Q(cost_basis=CostBasis.BILLED)
ESTIMATED = Q(cost_basis=CostBasis.ESTIMATED)
PRICED = BILLED | ESTIMATED
UNPRICED = Q(cost_basis=CostBasis.UNPRICED)

MEASURES = {
    "cost": Sum("reporting_cost", filter=PRICED),
    "billed_cost": Sum("reporting_cost", filter=BILLED),
    "estimated_cost": Sum("reporting_cost", filter=ESTIMATED),
    "priced_tokens": Sum(ALL_TOKENS, filter=PRICED),
    "unpriced_tokens": Sum(ALL_TOKENS, filter=UNPRICED),
    "input_tokens": Sum(ALL_INPUT),
    "cached_input_tokens": Sum("cached_input_tokens"),
    "cache_write_tokens": Sum("cache_write_tokens"),
    "output_tokens": Sum("output_tokens"),
    "requests": Sum("requests"),
    # Net line counts: which groups lie in the period, and which of them have a cost of each kind.
    "lines": Sum("line_count"),
    "priced_lines": Sum("line_count", filter=PRICED),
    "billed_lines": Sum("line_count", filter=BILLED),
    "estimated_lines": Sum("line_count", filter=ESTIMATED),
}
COUNTS = (
    "priced_tokens",
    "unpriced_tokens",
    "input_tokens",
    "cached_input_tokens",
    "cache_write_tokens",
    "output_tokens",
    "requests",
)
# Each money sum and the line count that says whether there is any such cost in the group.
MONEY_LINES = {"cost": "priced_lines", "billed_cost": "billed_lines", "estimated_cost": "estimated_lines"}


def spend_rows(
    *,
    user=None,
    start: dt.date,
    end: dt.date,
    by: str,
    filters: dict | None = None,
    today: dt.date | None = None,
    read_months: bool = True,
) -> list[dict]:
    """Rows for [start, end) grouped by `by`, ordered by group (unattributed last); `user` scopes them (None:
    everything, for the CLI). `filters` are Explore's, already checked with `filter_errors`. `read_months=False`
    reads DailySpend only (the plain definition, which the tests hold the monthly reading to); `today` (UTC)
    only steers which edge reading is cheaper."""
    if by not in GROUPS:
        raise ValueError(f"group_by must be one of {', '.join(GROUPS)}")
    if end <= start:
        raise ValueError("end must be after start (end is exclusive)")
    filters = filters or {}
    daily = filtered(_visible(user, DailySpend), filters)
    monthly = filtered(_visible(user, MonthlySpend), filters) if read_months else None
    today = today or timezone.now().astimezone(dt.UTC).date()
    point = by if by in ("day", "month") else None
    keys = () if point else (GROUPS[by],)
    # Whole months from the monthly rollup whatever the period's length (months_beyond_days=0).
    merged = spend.signed_sums(
        daily, monthly, start, end, keys, measures=MEASURES, today=today, point=point, months_beyond_days=0
    )
    for row in merged:
        row["group"] = row.pop("point" if point else keys[0])
    merged.sort(key=lambda row: (row["group"] is None, row["group"] if row["group"] is not None else ""))
    return [_finish(row, by) for row in merged]


def _visible(user, rollup):
    return rollup.objects.all() if user is None else spend.visible_spend(user, rollup)


def _finish(row: dict, by: str) -> dict:
    for money, lines in MONEY_LINES.items():
        if not row[lines]:
            row[money] = None
    for name in ("lines", *MONEY_LINES.values()):
        del row[name]
    for count in COUNTS:
        row[count] = row[count] or 0
    with decimal.localcontext(prec=80):
        per_mtok = (
            row["cost"] / row["priced_tokens"] * 1_000_000 if row["priced_tokens"] and row["cost"] is not None else None
        )
    row["usd_per_mtok"] = per_mtok
    group = row["group"]
    if isinstance(group, dt.date):
        group = row["group"] = group.strftime("%Y-%m") if by == "month" else group.isoformat()
    row["label"] = label(by, group)
    row["currency"] = settings.FINOPS_REPORTING_CURRENCY
    return row


def label(by: str, group) -> str:
    """What a person reads for a group: unattributed and the no-model row (taxes, credits, fees) are named."""
    if group is None:
        return UNATTRIBUTED_LABEL if by in ("team", "workload") else "—"
    if group == "" and by == "model":
        return NO_MODEL_LABEL
    return str(group)


def filter_errors(user, filters: dict) -> dict[str, str]:
    """{filter: message} for each value that names nothing `user` may see (None: the CLI, which sees all).

    Another team's slug gets the same answer as a slug that does not exist: nothing leaks. Teams, workloads,
    providers and (for those who see sources) accounts are checked against what exists, so a real one with no
    spend yet gives an empty report; models, and accounts for team members, against the spend the user sees
    (any time), and models also against the price catalog."""
    sees_all = user is None or access.sees_everything(user)
    errors = {}
    for name, value in filters.items():
        if not value:
            continue
        if name in ("team", "workload") and value == UNATTRIBUTED:
            known = user is None or access.can_see_unattributed(user)
        elif name == "team":
            known = (Team.objects.all() if user is None else access.visible_teams(user)).filter(slug=value).exists()
        elif name == "workload":
            known = (
                (Workload.objects.all() if user is None else access.visible_workloads(user)).filter(slug=value).exists()
            )
        elif name == "provider":
            known = Provider.objects.filter(slug=value).exists()
        elif name == "account":
            known = (
                Account.objects.filter(name=value).exists()
                if user is None or access.can_see_sources(user)
                else _visible(user, MonthlySpend).filter(account__name=value).exists()
            )
        elif name == "model":
            known = _visible(user, MonthlySpend).filter(model=value).exists() or (
                sees_all and ModelPrice.objects.filter(model=value).exists()
            )
        elif name == "basis":
            known = value in CostBasis.values
        else:
            raise ValueError(f"unknown filter {name!r}")
        if not known:
            errors[name] = _unknown(name, value)
    return errors


def _unknown(name: str, value: str) -> str:
    if name == "basis":
        return f"No cost basis “{value}”: use one of {', '.join(CostBasis.values)}."
    if name in ("team", "workload"):
        return f"No {name} “{value}” among those you can see (“{UNATTRIBUTED}” means unattributed)."
    return f"No {name} “{value}” among those you can see."


MONEY_FIELDS = ("cost", "billed_cost", "estimated_cost", "usd_per_mtok")
FIELDS = (
    "group",
    "label",
    "currency",
    "cost",
    "billed_cost",
    "estimated_cost",
    "priced_tokens",
    "unpriced_tokens",
    "input_tokens",
    "cached_input_tokens",
    "cache_write_tokens",
    "output_tokens",
    "requests",
    "usd_per_mtok",
)


def decimal_text(value: Decimal | None, places: int = 6) -> str | None:
    """Money as a decimal string, rounded half-even to `places` (micro-dollars by default), no exponent."""
    if value is None:
        return None
    with decimal.localcontext(prec=80):  # NUMERIC(38, 18) sums can have more than 28 digits
        return format(value.quantize(Decimal(1).scaleb(-places)), "f")


def as_json(rows: list[dict]) -> list[dict]:
    """The rows as the API and `spend --format json` give them: money as decimal strings, null when unknown."""
    return [{**{k: row[k] for k in FIELDS}, **{k: decimal_text(row[k]) for k in MONEY_FIELDS}} for row in rows]
