"""Shared charges allocated to teams: tax, fees, support plans, credits — every charge that is not usage.

A provider's sales tax or fee is charged on an account's usage, not on a team's, and carries no key, project or
user, so no attribution rule could ever claim it: left alone it sits in "Unattributed" for ever. Instead each
account's shared charges of a period go to the teams in proportion to the usage spend they had on that same
account in that period (pro rata, sum over sum); the share of usage no workload claims stays unattributed.
Money is rounded once, to the cent, by the largest remainder, so the allocated amounts add up exactly to the
period's shared charges (rounded to the cent): the totals row is the sum of the rows shown.

A charge that a rule did give to a team (rare: a fee with a project) is already that team's spend and is not
allocated again. Only priced rows count (a shared charge always has an amount).
"""

import datetime as dt
import decimal
from collections import defaultdict
from dataclasses import dataclass, field
from decimal import ROUND_FLOOR, Decimal

from django.db.models import Q, Sum

from finops.models import ChargeCategory, DailySpend, Team

CENT = Decimal("0.01")
ZERO = Decimal("0.00")
SHARED = ~Q(charge_category=ChargeCategory.USAGE)
METHOD = (
    "Shared charges (tax, fees, support plans, credits) are allocated to teams in proportion to their usage spend "
    "on the account each charge is billed on, in the same period; the share of usage no workload claims stays "
    "unattributed. Rounded to the cent once, so the shares add up to the charges."
)
UNATTRIBUTED_LABEL = "Unattributed"


@dataclass(frozen=True)
class TeamShare:
    team_id: int | None  # None: the usage no workload claims
    label: str
    usage: Decimal  # the team's usage spend on the accounts that carry shared charges
    allocated: Decimal  # its share of those charges, to the cent
    by_category: dict[str, Decimal] = field(default_factory=dict)  # {"Tax": …, "Credit": …}, to the cent


@dataclass(frozen=True)
class Allocation:
    start: dt.date
    end: dt.date
    charges: Decimal  # the period's shared charges not claimed by a rule, to the cent
    rows: list[TeamShare]  # teams by allocated amount, biggest first; unattributed last

    def of_team(self, team_id: int) -> Decimal:
        """The team's allocated shared charges ($0.00 where it had no usage on a charged account)."""
        return next((row.allocated for row in self.rows if row.team_id == team_id), ZERO)

    def share(self, team_id: int) -> TeamShare | None:
        return next((row for row in self.rows if row.team_id == team_id), None)

    @property
    def method(self) -> str:
        return METHOD


def shared_charges(start: dt.date, end: dt.date) -> Allocation:
    """The shared charges of [start, end) and each team's share of them, over all spend (a team's share depends
    on everyone's usage on the account; who may see which team is the caller's to apply)."""
    rows = DailySpend.objects.filter(day__gte=start, day__lt=end, reporting_cost__isnull=False)
    charges: dict[int, dict[str, Decimal]] = defaultdict(dict)
    for row in (
        rows.filter(SHARED, team__isnull=True)
        .values("account_id", "charge_category")
        .annotate(cost=Sum("reporting_cost"))
        .order_by()
    ):
        if row["cost"]:
            charges[row["account_id"]][row["charge_category"]] = row["cost"]
    usage: dict[int, dict[int | None, Decimal]] = defaultdict(dict)
    for row in (
        rows.filter(charge_category=ChargeCategory.USAGE, account_id__in=list(charges))
        .values("account_id", "team_id")
        .annotate(cost=Sum("reporting_cost"))
        .order_by()
    ):
        usage[row["account_id"]][row["team_id"]] = row["cost"] or Decimal(0)

    raw: dict[int | None, Decimal] = defaultdict(Decimal)
    raw_by_category: dict[str, dict[int | None, Decimal]] = defaultdict(lambda: defaultdict(Decimal))
    used: dict[int | None, Decimal] = defaultdict(Decimal)
    with decimal.localcontext(prec=60):
        for account_id, categories in charges.items():
            teams = {team: cost for team, cost in usage.get(account_id, {}).items() if cost > 0}
            base = sum(teams.values(), Decimal(0))
            if not base:  # no usage on the account to share it by: nobody's, so it stays unattributed
                for category, amount in categories.items():
                    raw[None] += amount
                    raw_by_category[category][None] += amount
                continue
            for team, cost in teams.items():
                used[team] += cost
                for category, amount in categories.items():
                    part = amount * cost / base
                    raw[team] += part
                    raw_by_category[category][team] += part
    allocated = _to_cents(raw)
    by_category = {
        ChargeCategory(category).label: _to_cents(parts) for category, parts in sorted(raw_by_category.items())
    }
    names = dict(Team.objects.filter(id__in=[t for t in raw if t is not None]).values_list("id", "name"))
    shares = [
        TeamShare(
            team_id=team,
            label=names.get(team, UNATTRIBUTED_LABEL) if team is not None else UNATTRIBUTED_LABEL,
            usage=used[team].quantize(CENT),
            allocated=amount,
            by_category={label: parts[team] for label, parts in by_category.items() if team in parts},
        )
        for team, amount in allocated.items()
    ]
    shares.sort(key=lambda s: (s.team_id is None, -s.allocated, s.label))
    return Allocation(start=start, end=end, charges=sum(allocated.values(), ZERO), rows=shares)


def _to_cents(raw: dict) -> dict:
    """Each amount to the cent so that they add up to their exact sum rounded to the cent (largest remainder):
    every amount is floored, and the cents left go to the largest fractions."""
    if not raw:
        return {}
    with decimal.localcontext(prec=60):
        target = sum(raw.values(), Decimal(0)).quantize(CENT)
        floors = {key: value.quantize(CENT, rounding=ROUND_FLOOR) for key, value in raw.items()}
        left = int((target - sum(floors.values(), Decimal(0))) / CENT)
        order = sorted(raw, key=lambda key: (-(raw[key] - floors[key]), str(key)))
        for key in order[:left]:
            floors[key] += CENT
    return floors
