"""Spend reads for pages and the API. They read the daily rollup only (docs/architecture.md performance approach).

Every function takes the viewing user and scopes by finops.core.access: a member's figures never include
another team's spend nor unattributed spend.
"""

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal

from django.db.models import DateField, F, Q, QuerySet, Sum
from django.db.models.functions import Cast, TruncMonth

from finops.core import access
from finops.core.months import next_month
from finops.forecast.projection import Forecast, forecast, history_start
from finops.models import CostBasis, DailySpend, MonthlySpend, TeamDailySpend

from . import periods

ZERO = Decimal(0)


def visible_spend(user, rollup: type[DailySpend] | type[MonthlySpend] | type[TeamDailySpend] = DailySpend) -> QuerySet:
    """The rows of `rollup` (the daily one unless told) the user may see."""
    rows = rollup.objects.all()
    if access.can_see_unattributed(user):
        return rows
    # The team ids as a list, not a subquery: the planner then uses the (team, day) index for every read.
    return rows.filter(team_id__in=list(access.visible_teams(user).values_list("id", flat=True)))


def period(rows: QuerySet[DailySpend], start: dt.date, end: dt.date) -> QuerySet[DailySpend]:
    """Half-open [start, end) in UTC days."""
    return rows.filter(day__gte=start, day__lt=end)


@dataclass(frozen=True)
class Totals:
    cost: Decimal | None  # the priced part; None when nothing in the period has a price (unknown, never $0)
    unpriced_tokens: int
    unattributed_cost: Decimal
    tokens: int
    requests: int

    @property
    def priced_tokens(self) -> int:
        return self.tokens - self.unpriced_tokens

    @property
    def usd_per_mtok(self) -> Decimal | None:
        """Σcost / Σpriced tokens × 10⁶ (invariant 6), the same definition as the `spend` report: tokens with
        no price are left out of it and shown beside it, never priced at $0."""
        return per_mtok(self.cost, self.priced_tokens)


def per_mtok(cost: Decimal | None, priced_tokens: int | None) -> Decimal | None:
    """Cost per million priced tokens; None where either is unknown or there are no priced tokens."""
    return cost / priced_tokens * 1_000_000 if cost is not None and priced_tokens else None


def change(now: Decimal | None, before: Decimal | None) -> Decimal | None:
    """(now − before) / before; None when either is unknown or before is zero."""
    return (now - before) / before if now is not None and before else None


# One sum of each row's four token counts, not four sums added: the same total (the columns are NOT NULL in every
# rollup), and Postgres spends most of a grouped read on its aggregates (the overview's day grid: 13k rows, eight
# token sums of twelve; issue 23).
ROW_TOKENS = F("input_tokens") + F("cached_input_tokens") + F("cache_write_tokens") + F("output_tokens")
TOKEN_SUM = Sum(ROW_TOKENS)
UNPRICED = Q(cost_basis=CostBasis.UNPRICED)
UNPRICED_TOKEN_SUM = Sum(ROW_TOKENS, filter=UNPRICED)
# The sums every grouped read takes (daily or monthly rollup alike); `lines` tells a group that nets to nothing.
MEASURES = {
    "cost": Sum("reporting_cost"),
    "tokens": TOKEN_SUM,
    "unpriced_tokens": UNPRICED_TOKEN_SUM,
    "requests": Sum("requests"),
    "lines": Sum("line_count"),
}
DAILY_READ_MAX_DAYS = 92  # up to a quarter from the daily rollup; longer periods read whole months monthly


def totals(rows: QuerySet[DailySpend]) -> Totals:
    return period_totals(rows, {"all": None})["all"]


def period_totals(
    rows: QuerySet[DailySpend], spans_by_name: dict[str, tuple[dt.date, dt.date] | None]
) -> dict[str, Totals]:
    """Totals of several half-open periods (None: all of `rows`) in one pass over the rollup."""
    aggregates, spans = {}, [p for p in spans_by_name.values() if p is not None]
    for name, span in spans_by_name.items():
        within = Q() if span is None else Q(day__gte=span[0], day__lt=span[1])
        unpriced = within & Q(cost_basis=CostBasis.UNPRICED)
        aggregates.update(
            {
                f"{name}__cost": Sum("reporting_cost", filter=within or None),
                f"{name}__tokens": Sum("input_tokens", filter=within or None)
                + Sum("cached_input_tokens", filter=within or None)
                + Sum("cache_write_tokens", filter=within or None)
                + Sum("output_tokens", filter=within or None),
                f"{name}__requests": Sum("requests", filter=within or None),
                f"{name}__unattributed": Sum("reporting_cost", filter=within & Q(workload__isnull=True)),
                f"{name}__unpriced_tokens": Sum("input_tokens", filter=unpriced)
                + Sum("cached_input_tokens", filter=unpriced)
                + Sum("cache_write_tokens", filter=unpriced)
                + Sum("output_tokens", filter=unpriced),
            }
        )
    if spans and len(spans) == len(spans_by_name):  # read only the days some period needs
        rows = rows.filter(day__gte=min(s[0] for s in spans), day__lt=max(s[1] for s in spans))
    agg = rows.aggregate(**aggregates)
    return {
        name: Totals(
            cost=agg[f"{name}__cost"],
            unpriced_tokens=agg[f"{name}__unpriced_tokens"] or 0,
            unattributed_cost=agg[f"{name}__unattributed"] or ZERO,
            tokens=agg[f"{name}__tokens"] or 0,
            requests=agg[f"{name}__requests"] or 0,
        )
        for name in spans_by_name
    }


@dataclass(frozen=True)
class MonthToDate:
    today: dt.date
    this_month: Decimal | None
    same_days_last_month: Decimal | None

    @property
    def change(self) -> Decimal | None:
        return change(self.this_month, self.same_days_last_month)


def month_periods(today: dt.date) -> dict[str, tuple[dt.date, dt.date]]:
    first = today.replace(day=1)
    last_month_first = (first - dt.timedelta(days=1)).replace(day=1)
    same_days_end = min(last_month_first + (today - first), first)
    return {"this_month": (first, today), "same_days_last_month": (last_month_first, same_days_end)}


def month_to_date(rows: QuerySet[DailySpend], today: dt.date, *, known: dict[str, Totals] | None = None) -> MonthToDate:
    """Spend of this UTC month up to (not including) today, against the same days of last month.
    `known`: the period totals of `month_periods_totals`, when the caller has them already."""
    known = known or period_totals(rows, month_periods(today))
    return MonthToDate(
        today=today, this_month=known["this_month"].cost, same_days_last_month=known["same_days_last_month"].cost
    )


def month_periods_totals(
    rows: QuerySet[DailySpend], today: dt.date, **extra: tuple[dt.date, dt.date]
) -> dict[str, Totals]:
    """The totals month_to_date needs, and any `extra` periods, in one query."""
    return period_totals(rows, {**month_periods(today), **extra})


def latest_day(rows: QuerySet[DailySpend]) -> dt.date | None:
    return rows.order_by("-day").values_list("day", flat=True).first()


def daily_costs(rows: QuerySet[DailySpend], start: dt.date, end: dt.date) -> dict[dt.date, Decimal]:
    """{day: priced spend} over [start, end): the daily series a forecast reads."""
    grouped = period(rows, start, end).values("day").annotate(cost=Sum("reporting_cost")).order_by()
    return {row["day"]: row["cost"] for row in grouped if row["cost"] is not None}


def month_forecast(rows: QuerySet[DailySpend], today: dt.date, *, grid: list[dict] | None = None) -> Forecast:
    """This UTC month's total as finops.forecast.projection sees it on `today`, from the rows' daily spend.
    `grid`: a day_grid of the same rows covering the forecast's days (grid_covers), read instead of the rollup."""
    first = today.replace(day=1)
    start = min(first, history_start(today))
    costs = grid_daily_costs(grid, start, today) if grid is not None else daily_costs(rows, start, today)
    return forecast(costs, start=first, end=next_month(first), as_of=today)


def forecast_days(today: dt.date) -> tuple[dt.date, dt.date]:
    """The days month_forecast reads."""
    return min(today.replace(day=1), history_start(today)), today


# --- any period, grouped any way (pages and their CSVs) ---


def sums(
    daily: QuerySet[DailySpend],
    monthly: QuerySet[MonthlySpend] | None,
    start: dt.date,
    end: dt.date,
    keys: tuple[str, ...] = (),
    *,
    today: dt.date,
    point: str | None = None,
    months_beyond_days: int = DAILY_READ_MAX_DAYS,
) -> list[dict]:
    """MEASURES per `keys` over [start, end), each row finished (finish()). `point`: "day" adds each row's day
    as `point`, "month" its month's first day. A period longer than `months_beyond_days` (DAILY_READ_MAX_DAYS
    unless told; the scorecard reads even a quarter by months) and not by day reads its whole months from
    `monthly` and the edges from `daily` (finops.spend.selectors.periods): the sums are the same, from ~25× fewer
    rows. `daily` and `monthly` are the rows the viewer may see, filtered alike."""
    measures = {**MEASURES, "priced_lines": Sum("line_count", filter=~UNPRICED)}
    return [
        finish(row)
        for row in signed_sums(
            daily,
            monthly,
            start,
            end,
            keys,
            measures=measures,
            today=today,
            point=point,
            months_beyond_days=months_beyond_days,
        )
    ]


def signed_sums(
    daily: QuerySet[DailySpend],
    monthly: QuerySet[MonthlySpend] | None,
    start: dt.date,
    end: dt.date,
    keys: tuple[str, ...],
    *,
    measures: dict,
    today: dt.date,
    point: str | None = None,
    months_beyond_days: int = DAILY_READ_MAX_DAYS,
) -> list[dict]:
    """`measures` (sums, one of them `lines` = Sum("line_count")) per `keys` (and `point`, as sums()) over
    [start, end), unfinished: the one way any period is read (pages, the spend report). Periods longer than
    `months_beyond_days` (and not by day) read whole months from `monthly` when given; a group whose lines all
    lie in days taken away nets to no lines and is left out."""
    grouped = _grouped_parts(
        daily,
        monthly,
        start,
        end,
        keys,
        measures=measures,
        today=today,
        point=point,
        months_beyond_days=months_beyond_days,
    )
    names = keys + (("point",) if point else ())
    if len(grouped) == 1 and names:  # one read added as it is: its groups are distinct already
        merged = list(grouped[0][0])
    else:
        merged = periods.added(grouped, names, tuple(measures))
    return [row for row in merged if row["lines"]]


def sums_each(
    daily: QuerySet[DailySpend],
    monthly: QuerySet[MonthlySpend] | None,
    start: dt.date,
    end: dt.date,
    keys: tuple[str, ...],
    *,
    today: dt.date,
    months_beyond_days: int = DAILY_READ_MAX_DAYS,
) -> dict[str, list[dict]]:
    """sums() by each of `keys` on its own ({key: its rows}), read at once: the overview's workload and model tables
    from one statement (periods.added's `each`). Each key's rows are what regroup() makes of sums() by all `keys`
    together, each row with its one key: a cost is the sum of the group's priced lines' costs (the costs of a
    finer group without priced lines net to nothing: unpriced lines have none), None where it has no priced line;
    a group whose lines net to none is left out, as its finer groups all would be."""
    measures = {**MEASURES, "priced_lines": Sum("line_count", filter=~UNPRICED)}
    grouped = _grouped_parts(
        daily, monthly, start, end, keys, measures=measures, today=today, months_beyond_days=months_beyond_days
    )
    found = periods.added(grouped, keys, tuple(measures), each=True)
    return {key: [finish(row) for row in rows if row["lines"]] for key, rows in found.items()}


def _grouped_parts(
    daily: QuerySet[DailySpend],
    monthly: QuerySet[MonthlySpend] | None,
    start: dt.date,
    end: dt.date,
    keys: tuple[str, ...],
    *,
    measures: dict,
    today: dt.date,
    point: str | None = None,
    months_beyond_days: int = DAILY_READ_MAX_DAYS,
) -> list[tuple[QuerySet, int]]:
    """The grouped reads (and signs) signed_sums adds up: the period's parts (periods.parts) when long or whole
    months, else its days, each `.values(*keys, point).annotate(**measures)`."""
    if (
        point != "day"
        and monthly is not None
        and ((end - start).days > months_beyond_days or _whole_months(start, end))
    ):
        parts = periods.parts(daily, monthly, start, end, today=today)
    else:
        parts = [(period(daily, start, end), 1)]
    grouped = []
    for rows, sign in parts:
        extra = {}
        if point:
            by_month = rows.model is MonthlySpend or point == "month"
            extra["point"] = (
                F("month")
                if rows.model is MonthlySpend
                else (Cast(TruncMonth("day"), DateField()) if by_month else F("day"))
            )
        grouped.append((rows.values(*keys, **extra).annotate(**measures).order_by(), sign))
    return grouped


def _whole_months(start: dt.date, end: dt.date) -> bool:
    """[start, end) is whole UTC months (last month, a quarter): one read of the monthly rollup (issue 23: the
    overview of last month as an admin, 114k daily rows, 26–115 ms, against its month's rows, 5–9 ms). A shorter
    period with partial months stays daily: the month minus its other days is three reads where one small one does
    (a team's or a workload's last 30 days were slower on the bench that way)."""
    return start.day == 1 and end.day == 1 and start < end


def finish(row: dict) -> dict:
    """Counts of nothing are 0; a cost stays None where no line of the group has a price (priced_lines nets to
    0, even where a month minus its other days nets its cost to 0.00); $/M over priced tokens only."""
    # Spelled out, not looped over the names: the overview finishes ~1,400 rows a request (issue 23).
    row["tokens"] = tokens = row.get("tokens") or 0
    row["unpriced_tokens"] = unpriced = row.get("unpriced_tokens") or 0
    row["requests"] = row.get("requests") or 0
    row["lines"] = row.get("lines") or 0
    if not row.pop("priced_lines", None):
        row["cost"] = None
    row["priced_tokens"] = priced = tokens - unpriced
    row["usd_per_mtok"] = per_mtok(row["cost"], priced)
    return row


def period_sums(daily, monthly, spans: dict[str, tuple[dt.date, dt.date]], *, today: dt.date) -> dict[str, Totals]:
    """Totals of several periods: one pass over the daily rollup when each is short, else one read each."""
    if all((end - start).days <= DAILY_READ_MAX_DAYS for start, end in spans.values()):
        return period_totals(daily, spans)
    return {
        name: totals_of(sums(daily, monthly, start, end, ("workload_id",), today=today))
        for name, (start, end) in spans.items()
    }


def totals_of(rows: list[dict]) -> Totals:
    """The Totals of a period from its sums() rows grouped by workload_id, or more finely (team × workload: the
    teams page reads those once for its rows and its total): the known costs added, the unattributed ones apart."""
    total = {"cost": None, "unpriced_tokens": 0, "unattributed": ZERO, "tokens": 0, "requests": 0}
    for row in rows:
        if row["cost"] is not None:
            total["cost"] = (total["cost"] or ZERO) + row["cost"]
            if row["workload_id"] is None:
                total["unattributed"] += row["cost"]
        for measure in ("unpriced_tokens", "tokens", "requests"):
            total[measure] += row[measure]
    return as_totals(total)


def ranked(rows: list[dict]) -> tuple[list[dict], list[dict], int]:
    """Groups of known spend, biggest first, each with its share of the known total and the running share;
    the groups whose cost is unknown (only unpriced usage), apart; how many known groups make 80 % of it."""
    known = sorted((r for r in rows if r["cost"] is not None), key=lambda r: r["cost"], reverse=True)
    unknown = sorted((r for r in rows if r["cost"] is None), key=lambda r: r["unpriced_tokens"], reverse=True)
    total = sum((r["cost"] for r in known), ZERO)
    running, to_80 = ZERO, 0
    for row in known:
        row["share"] = row["cost"] / total if total else None
        if total and running < total * Decimal("0.8"):
            to_80 += 1
        running += row["cost"]
        row["running_share"] = running / total if total else None
    return known, unknown, to_80


def by_cost(rows: list[dict]) -> list[dict]:
    """Known spend biggest first, then the groups of unknown cost (most unpriced tokens first)."""
    known, unknown, _ = ranked(rows)
    return known + unknown


def as_totals(total: dict) -> Totals:
    return Totals(
        cost=total.get("cost"),
        unpriced_tokens=total.get("unpriced_tokens") or 0,
        unattributed_cost=total.get("unattributed") or ZERO,
        tokens=total.get("tokens") or 0,
        requests=total.get("requests") or 0,
    )


def regroup(rows: list[dict], key: str) -> list[dict]:
    """Finished rows of finer groups (e.g. workload × model) summed by one of their keys: the cost is the sum of
    the known costs, None where no part of the group has one; $/M again over priced tokens."""
    # Summed into lists, one per group, and made dicts once at the end: the overview regroups its ~1,100
    # workload × model rows twice a request, and a dict built and looked up per row cost ~2 ms of it (issue 23).
    merged: dict = {}
    for row in rows:
        total = merged.get(row[key])
        if total is None:
            total = merged[row[key]] = [None, 0, 0, 0, 0]
        cost = row["cost"]
        if cost is not None:
            total[0] = (total[0] or ZERO) + cost  # as before: ZERO + cost, in the context's precision
        total[1] += row["tokens"]
        total[2] += row["unpriced_tokens"]
        total[3] += row["requests"]
        total[4] += row["lines"]
    found = []
    for value, (cost, tokens, unpriced, requests, lines) in merged.items():
        priced = tokens - unpriced
        found.append(
            {
                key: value,
                "cost": cost,
                "tokens": tokens,
                "unpriced_tokens": unpriced,
                "requests": requests,
                "lines": lines,
                "priced_tokens": priced,
                "usd_per_mtok": per_mtok(cost, priced),
            }
        )
    return found


def daily_tokens(rows: QuerySet[DailySpend], *, monthly: bool = False) -> list[dict]:
    """[{day, input, output}] per day (per month, `day` its first day), where input is all input (uncached +
    cached + cache write). `rows` is one scope's daily rows over the period (a team's, a workload's)."""
    point = Cast(TruncMonth("day"), DateField()) if monthly else F("day")
    grouped = (
        rows.values(point=point)
        .annotate(
            input=Sum("input_tokens") + Sum("cached_input_tokens") + Sum("cache_write_tokens"),
            output=Sum("output_tokens"),
        )
        .order_by("point")
    )
    return [{"day": row["point"], "input": row["input"], "output": row["output"]} for row in grouped]


def grid_daily_costs(grid: list[dict], start: dt.date, end: dt.date) -> dict[dt.date, Decimal]:
    """daily_costs from a day_grid covering [start, end): each day's priced spend summed over its rows, as SQL's
    SUM does (a day none of whose rows has a cost is left out)."""
    found: dict[dt.date, Decimal] = {}
    for row in grid:
        if start <= row["day"] < end and row["cost"] is not None:
            found[row["day"]] = found.get(row["day"], ZERO) + row["cost"]
    return found
