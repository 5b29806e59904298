"""The unattributed page: spend no rule claims in a period, how much of all spend it is (from the rollups), and
what a rule could match it by (API key, project, user, tag: from the period's usage lines, line_groups)."""

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal

from finops.models import MonthlySpend

from . import line_groups, spend

GROUPINGS = ("api_key", "project", "user")


@dataclass(frozen=True)
class Summary:
    cost: Decimal | None  # the priced part of the unattributed spend; None where none of it has a price
    unpriced_tokens: int
    tokens: int
    lines: int
    all_cost: Decimal | None  # all spend of the period (the priced part), for the share

    @property
    def share(self) -> Decimal | None:
        """Unattributed over all spend, both the priced part (sum over sum); None where either is unknown."""
        return self.cost / self.all_cost if self.cost is not None and self.all_cost else None


def summary(user, start: dt.date, end: dt.date, *, today: dt.date) -> Summary:
    """The period's unattributed spend and all its spend, read from the rollups the user may see (whole months
    from the monthly one for a long period, as every page)."""
    daily, monthly = spend.visible_spend(user), spend.visible_spend(user, MonthlySpend)

    def total(daily_rows, monthly_rows) -> dict:
        # Grouped by cost basis (three rows at most), then added up: sums() groups by the keys it is given.
        rows = spend.sums(daily_rows, monthly_rows, start, end, ("cost_basis",), today=today)
        found = line_groups.merged_rows(rows, ())
        return found[0] if found else {"cost": None, "unpriced_tokens": 0, "tokens": 0, "lines": 0}

    unattributed = total(daily.filter(workload__isnull=True), monthly.filter(workload__isnull=True))
    everything = total(daily, monthly)
    return Summary(
        cost=unattributed["cost"],
        unpriced_tokens=unattributed["unpriced_tokens"],
        tokens=unattributed["tokens"],
        lines=unattributed["lines"],
        all_cost=everything["cost"],
    )


def groups(user, start: dt.date, end: dt.date) -> dict[str, list[dict]]:
    """{"api_key" | "project" | "user" | "tag": rows}, biggest spend first; each row has the measures of
    spend.sums, `lines`, and the `account_ids` and `provider_ids` its lines come from. API key, project and
    user rows have `group` (the ref, "" for lines without one) and add up to the period's unattributed lines;
    tag rows have `tag_key` and `tag_value`, and a line counts under each of its tags (None, None: no tags).
    The period is at most line_groups.MAX_DAYS days."""
    rows = line_groups.by_signature(line_groups.unattributed(line_groups.visible_lines(user, start, end)))
    found = {grouping: line_groups.by_ref(rows, grouping) for grouping in GROUPINGS}
    found["tag"] = line_groups.by_tag_pair(rows)
    return found
