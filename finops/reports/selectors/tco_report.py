"""The monthly TCO report (issue 14): one calendar month (UTC) of inference spend in the reporting currency, as the
tables of finops.reports.tco_tables — the one report the page, its print and PDF, CSV, XLSX, the email and the
snapshots all render.

Every spend figure comes from the spend selectors, never a query of its own: the month's totals and the tables by
provider, team and workload are `spend_report.spend_rows` (what `GET /api/v1/spend` and `manage.py spend` answer
for the same month), the trend and the movers' parts `spend.sums`, cost per outcome and the SLA verdicts the
scorecard's `workload_rows`, caps `cap_statuses`, contracts `contract_statuses`, savings the Savings page's
`savings`. So the report cannot disagree with the pages.

Decisions (docs/reports.md):
- A month is its UTC calendar month. A past month is read whole; the current month *to date* (its complete days,
  today excluded, as everywhere) and compared with as many days of last month and of the same month last year.
  A month not yet begun (or today, the 1st, with no complete day) is refused (MonthError).
- "As of": the figures that are states rather than sums (caps, contracts' consumption) are read as of the
  month's last day (today for the month to date), so a past month's report does not change with time. Renewals
  ahead are the exception: a list to act on, they look six months ahead from the day the report is made.
- Forecast for next month: finops.forecast.projection (by day of week with trend, and its range) from the daily spend up
to
  the month's end (or today).
- Movers, both ways: the three workloads (unattributed counts as one) whose spend rose most from last month, then
  the three whose spend fell most, each change split into volume, price and mix effects over its provider × model
  parts (finops.spend.selectors.movers).
- Provisional: until every enabled source has synced past its lookback after the month's end (tco_sections.sources).
"""

import datetime as dt
from dataclasses import dataclass, field
from decimal import Decimal

from django.conf import settings
from django.utils import timezone

from finops.contracts.selectors import add_months
from finops.core import access
from finops.core.months import MonthError, month_of, next_month, parse_month
from finops.forecast.projection import forecast, history_start
from finops.models import MonthlySpend, Provider, Team, Workload
from finops.reports.selectors import tco_json, tco_sections
from finops.spend.selectors import movers, spend
from finops.spend.selectors.shared_charges import shared_charges
from finops.spend.selectors.spend_report import UNATTRIBUTED_LABEL, spend_rows

TOP_WORKLOADS = 15
MOVERS = 3
ZERO = Decimal(0)


def last_full_month(today: dt.date) -> dt.date:
    return add_months(month_of(today), -1)


def report_month(text: str | None, *, today: dt.date) -> dt.date:
    """The month "YYYY-MM" names (its first day); None or "": the last full month. Beyond parse_month's rules,
    the current month needs a complete day (on the 1st there is none)."""
    if not (text or "").strip():
        return last_full_month(today)
    month = parse_month(text, today=today)
    if month == month_of(today) and today.day == 1:
        raise MonthError(
            f"{month:%B %Y} has no complete day yet: pick {last_full_month(today):%Y-%m} or an earlier month."
        )
    return month


@dataclass
class TcoReport:
    month: dt.date
    end: dt.date  # exclusive: the next month's first day, or today for the month to date
    generated_at: dt.datetime
    currency: str
    provisional: bool
    has_data: bool
    tables: dict[str, list[dict]] = field(default_factory=dict)
    notes: dict = field(default_factory=dict)  # {"alerts_total": …, "workloads_total": …}

    @property
    def to_date(self) -> bool:
        return self.end < next_month(self.month)

    @property
    def label(self) -> str:
        return f"{self.month:%B %Y}" + (" to date" if self.to_date else "")

    @property
    def key(self) -> str:
        return f"{self.month:%Y-%m}"

    @property
    def summary(self) -> dict:
        return self.tables["summary"][0]

    def rows(self, name: str) -> list[dict]:
        return self.tables.get(name, [])  # a version published before a table existed has none of it

    def as_json(self) -> dict:
        return tco_json.dump(
            {
                "month": self.month,
                "end": self.end,
                "generated_at": self.generated_at,
                "currency": self.currency,
                "provisional": self.provisional,
                "has_data": self.has_data,
                "tables": self.tables,
                "notes": self.notes,
            }
        )

    @classmethod
    def from_json(cls, data: dict) -> "TcoReport":
        return cls(**tco_json.load(data))


@dataclass(frozen=True)
class Span:
    start: dt.date
    end: dt.date

    @property
    def days(self) -> int:
        return (self.end - self.start).days


def spans(month: dt.date, today: dt.date) -> tuple[Span, Span, Span]:
    """The month (to date when current), last month and the same month last year, each as long as the month read."""
    end = min(next_month(month), today)
    now = Span(month, end)

    def like(start: dt.date) -> Span:
        return Span(start, min(start + dt.timedelta(days=now.days), next_month(start)))

    return now, like(add_months(month, -1)), like(add_months(month, -12))


def tco_report(user, month: dt.date, *, today: dt.date, now: dt.datetime | None = None) -> TcoReport:
    """The report of `month` (report_month's answer) as `user` (admins and finance: everything) sees it."""
    return _report(user, month, today=today, now=now, settled_only=False)


def settled_tco_report(user, month: dt.date, *, today: dt.date, now: dt.datetime | None = None) -> TcoReport | None:
    """tco_report's report when it would be final; None, without making the rest of it, when it would be
    provisional (whether it is, the sources' rows, is read first and once). For whoever discards a provisional
    report: the hourly restatement check, which during the days a month's sources settle would otherwise make the
    whole report every hour for nothing."""
    return _report(user, month, today=today, now=now, settled_only=True)


def _report(user, month: dt.date, *, today: dt.date, now: dt.datetime | None, settled_only: bool) -> TcoReport | None:
    now_span, before, last_year = spans(month, today)
    as_of = now_span.end - dt.timedelta(days=1)
    sections = tco_sections.Sections(user=user, span=now_span, compare=before, as_of=as_of, today=today)
    if settled_only and sections.settling():
        return None
    read = {"user": user, "today": today}
    month_rows = {
        name: _one(spend_rows(start=s.start, end=s.end, by="month", **read))
        for name, s in (("now", now_span), ("before", before), ("last_year", last_year))
    }
    tables: dict[str, list[dict]] = {}
    by = {
        by: (
            spend_rows(start=now_span.start, end=now_span.end, by=by, **read),
            spend_rows(start=before.start, end=before.end, by=by, **read),
        )
        for by in ("provider", "team", "workload")
    }
    total = month_rows["now"]
    priced_total = total["cost"] if total else None
    tables["by_provider"] = _by_provider(*by["provider"], priced_total)
    tables["by_team"] = _by_team(*by["team"], priced_total)
    tables["by_workload"], workloads_total = _by_workload(*by["workload"], priced_total)
    tables["shared_charges"] = _shared_charges(user, now_span)
    tables["trend"] = _trend(user, month, now_span, today)
    daily = spend.visible_spend(user)
    tables["summary"] = [_summary(month_rows, tables["by_workload"], daily, now_span, month)]
    tables["summary"][0].update(_to_date(read, now_span))
    tables["movers"] = _movers(user, now_span, before, today)
    tables["quality"] = [_quality(tables["summary"][0])]
    tables.update(sections.tables())
    tables["budgets"] = sections.budgets(tables["by_team"])
    report = TcoReport(
        month=month,
        end=now_span.end,
        generated_at=now or timezone.now(),
        currency=settings.FINOPS_REPORTING_CURRENCY,
        provisional=sections.provisional,
        has_data=total is not None,
        tables=tables,
        notes={
            "workloads_total": workloads_total,
            "alerts_total": sections.alerts_total,
            "top_workloads": TOP_WORKLOADS,
            "compare_label": _compare_label(before, now_span),
            "last_year_label": _compare_label(last_year, now_span),
        },
    )
    return report


def _one(rows: list[dict]) -> dict | None:
    return rows[0] if rows else None


def _compare_label(span: Span, now: Span) -> str:
    whole = span.start.day == 1 and span.end == next_month(span.start)
    return f"{span.start:%B %Y}" if whole else f"the first {span.days} days of {span.start:%B %Y}"


def _share(cost: Decimal | None, total: Decimal | None) -> Decimal | None:
    return cost / total if cost is not None and total else None


def _with_change(rows: list[dict], before: list[dict], total: Decimal | None) -> list[dict]:
    """Each row with its share of the month's priced spend and its change from the comparison span (by group)."""
    previous = {row["group"]: row["cost"] for row in before}
    for row in rows:
        row["previous_cost"] = previous.get(row["group"])
        row["change"] = spend.change(row["cost"], row["previous_cost"])
        row["share"] = _share(row["cost"], total)
    return rows


def _plain(row: dict, **extra) -> dict:
    """The keys a report table reads (its snapshot stores exactly these)."""
    keys = (
        "cost",
        "billed_cost",
        "estimated_cost",
        "priced_tokens",
        "unpriced_tokens",
        "requests",
        "usd_per_mtok",
        "previous_cost",
        "change",
        "share",
    )
    found = {key: row.get(key) for key in keys}
    found["tokens"] = row["priced_tokens"] + row["unpriced_tokens"]
    return {**found, **extra}


def _by_cost(rows: list[dict]) -> list[dict]:
    return sorted(rows, key=lambda r: (r["group"] is None, r["cost"] is None, -(r["cost"] or ZERO), r["label"]))


def _by_provider(rows, before, total) -> list[dict]:
    names = dict(Provider.objects.values_list("slug", "name"))
    return [
        _plain(row, label=names.get(row["group"], row["group"]), slug=row["group"])
        for row in _by_cost(_with_change(rows, before, total))
    ]


def _by_team(rows, before, total) -> list[dict]:
    teams = {slug: (name, cc) for slug, name, cc in Team.objects.values_list("slug", "name", "cost_center")}
    found = []
    for row in _by_cost(_with_change(rows, before, total)):
        name, cost_center = teams.get(row["group"], (row["label"], ""))
        found.append(_plain(row, label=name, cost_center=cost_center, slug=row["group"] or ""))
    return found


def _shared_charges(user, span: Span) -> list[dict]:
    """Each team's share of the month's tax, fees and credits (finops.spend.selectors.shared_charges), the teams the
    user may see; by category and in all, to the cent (each column's cents add up to its charges)."""
    everything = user is None or access.sees_everything(user)
    visible = None if everything else set(access.visible_teams(user).values_list("id", flat=True))
    rows = []
    for share in shared_charges(span.start, span.end).rows:
        if not everything and share.team_id not in visible:
            continue
        by = share.by_category
        fees = [by[label] for label in ("Purchase", "Adjustment") if label in by]
        rows.append(
            {
                "label": share.label,
                "usage": share.usage,
                # $0.00 where the month billed none of a kind: known, and the totals row adds up.
                "tax": by.get("Tax", ZERO),
                "fees": sum(fees, ZERO),
                "credit": by.get("Credit", ZERO),
                "allocated": share.allocated,
            }
        )
    return rows


def _by_workload(rows, before, total) -> tuple[list[dict], int]:
    """The top TOP_WORKLOADS workloads by spend, the rest as one "Other" row, and unattributed spend last."""
    names = {slug: (name, team) for slug, name, team in Workload.objects.values_list("slug", "name", "team__name")}
    rows = _by_cost(_with_change(rows, before, total))
    attributed = [r for r in rows if r["group"] is not None]
    found = []
    for row in attributed[:TOP_WORKLOADS]:
        name, team = names.get(row["group"], (row["group"], ""))
        found.append(_plain(row, label=name, team=team, slug=row["group"]))
    rest = attributed[TOP_WORKLOADS:]
    if rest:
        found.append(_plain(_sum_rows(rest, total), label=f"Other ({len(rest)} workloads)", team="", slug=""))
    found += [
        _plain(row, label=UNATTRIBUTED_LABEL, team="", slug="", unattributed=True)
        for row in rows
        if row["group"] is None
    ]
    return found, len(attributed)


def _sum_rows(rows: list[dict], total: Decimal | None) -> dict:
    """Rows added up as one: a money sum is None where no row has it (unknown, never $0); ratios sum over sum."""
    found: dict = {"priced_tokens": 0, "unpriced_tokens": 0, "requests": 0}
    for key in ("cost", "billed_cost", "estimated_cost", "previous_cost"):
        known = [r[key] for r in rows if r.get(key) is not None]
        found[key] = sum(known, ZERO) if known else None
    for key in ("priced_tokens", "unpriced_tokens", "requests"):
        found[key] = sum(r[key] for r in rows)
    found["usd_per_mtok"] = spend.per_mtok(found["cost"], found["priced_tokens"])
    found["change"] = spend.change(found["cost"], found["previous_cost"])
    found["share"] = _share(found["cost"], total)
    return found


def _trend(user, month: dt.date, span: Span, today: dt.date) -> list[dict]:
    """Spend by provider and month over the six months ending with the report's."""
    start = add_months(month, -5)
    daily, monthly = spend.visible_spend(user), spend.visible_spend(user, MonthlySpend)
    names = dict(Provider.objects.values_list("id", "name"))
    rows = spend.sums(
        daily, monthly, start, span.end, ("provider_id",), today=today, point="month", months_beyond_days=0
    )
    rows.sort(key=lambda r: (r["point"], names.get(r["provider_id"], "")))
    return [
        {
            "month": f"{row['point']:%Y-%m}",
            "label": names.get(row["provider_id"], "?"),
            "cost": row["cost"],
            "tokens": row["tokens"],
            "unpriced_tokens": row["unpriced_tokens"],
            "usd_per_mtok": row["usd_per_mtok"],
        }
        for row in rows
    ]


def _summary(month_rows: dict, workloads: list[dict], daily, span: Span, month: dt.date) -> dict:
    now, before, last_year = (month_rows[k] for k in ("now", "before", "last_year"))
    row = {"label": f"{month:%B %Y}" + (" to date" if span.end < next_month(month) else "")}
    row.update(
        _plain(
            now,
            previous_cost=before["cost"] if before else None,
            change=spend.change(now["cost"], before["cost"] if before else None),
        )
        if now
        else {
            "cost": None,
            "billed_cost": None,
            "estimated_cost": None,
            "tokens": 0,
            "priced_tokens": 0,
            "unpriced_tokens": 0,
            "requests": 0,
            "usd_per_mtok": None,
            "previous_cost": before["cost"] if before else None,
            "change": None,
            "share": None,
        }
    )
    row["last_year_cost"] = last_year["cost"] if last_year else None
    row["yoy_change"] = spend.change(row["cost"], row["last_year_cost"])
    row["unattributed_cost"] = sum(
        (w["cost"] for w in workloads if w.get("unattributed") and w["cost"] is not None), ZERO
    )
    following = next_month(month)
    projection = forecast(
        spend.daily_costs(daily, history_start(span.end), span.end),
        start=following,
        end=next_month(following),
        as_of=span.end,
    )
    row.update(forecast_next=projection.total, forecast_next_low=projection.low, forecast_next_high=projection.high)
    return row


def _to_date(read: dict, span: Span) -> dict:
    """Year to date and quarter to date, up to the report's end: the months' spend as spend_rows answers it (the
    sum of the months' totals; None where no month had priced spend)."""
    found = {}
    for key, start in (
        ("ytd_cost", span.start.replace(month=1)),
        ("qtd_cost", span.start.replace(month=(span.start.month - 1) // 3 * 3 + 1)),
    ):
        costs = [
            row["cost"] for row in spend_rows(start=start, end=span.end, by="month", **read) if row["cost"] is not None
        ]
        found[key] = sum(costs, ZERO) if costs else None
    return found


def _quality(summary: dict) -> dict:
    """The month's data quality in one row: unattributed and unpriced, billed against estimated."""
    cost = summary["cost"]
    return {
        "unattributed_cost": summary["unattributed_cost"],
        "unattributed_share": _share(summary["unattributed_cost"], cost),
        "unpriced_tokens": summary["unpriced_tokens"],
        "billed_cost": summary["billed_cost"],
        "estimated_cost": summary["estimated_cost"],
        "estimated_share": _share(summary["estimated_cost"], cost),
    }


def _movers(user, now: Span, before: Span, today: dt.date) -> list[dict]:
    """The MOVERS largest increases and the MOVERS largest decreases, each change split into volume, price and mix
    (finops.spend.selectors.movers)."""
    daily, monthly = spend.visible_spend(user), spend.visible_spend(user, MonthlySpend)
    keys = ("workload_id", "provider_id", "model")
    parts: dict = {}
    for index, span in enumerate((before, now)):
        for row in spend.sums(daily, monthly, span.start, span.end, keys, today=today, months_beyond_days=0):
            if row["cost"] is None:
                continue  # no price: no known cost to move (the unpriced tokens are shown with the spend)
            subject = parts.setdefault(row["workload_id"], ({}, {}))
            subject[index][(row["provider_id"], row["model"])] = (row["cost"], row["priced_tokens"])
    effects = {workload_id: movers.split(*pair) for workload_id, pair in parts.items()}
    # Both ways: the MOVERS largest increases, then the MOVERS largest decreases.
    ups = sorted((i for i in effects.items() if i[1].change > 0), key=lambda item: (-item[1].change, item[0] or 0))
    downs = sorted((i for i in effects.items() if i[1].change < 0), key=lambda item: (item[1].change, item[0] or 0))
    biggest = ups[:MOVERS] + downs[:MOVERS]
    workloads = {w.id: w for w in Workload.objects.filter(id__in=[k for k, _ in biggest if k]).select_related("team")}
    providers = dict(Provider.objects.values_list("id", "name"))
    found = []
    for workload_id, effect in biggest:
        if not effect.change:
            continue
        workload = workloads.get(workload_id)
        found.append(
            {
                "label": workload.name if workload else UNATTRIBUTED_LABEL,
                "team": workload.team.name if workload else "",
                "before": effect.before,
                "after": effect.after,
                "change": effect.change,
                "volume": effect.volume,
                "price": effect.price,
                "mix": effect.mix,
                "why": movers.explain(effect, *parts[workload_id], providers),
            }
        )
    return found


def restated_sources(snapshot, report: TcoReport, *, until: dt.datetime | None = None) -> list[str]:
    """The accounts whose runs finished after `snapshot` was published (and before `until`: a later version's
    reading) and read days of its month: where a restatement came from."""
    from django.db.models import Q

    from finops.models import IngestRun

    start = dt.datetime.combine(report.month, dt.time(), tzinfo=dt.UTC)
    end = dt.datetime.combine(report.end, dt.time(), tzinfo=dt.UTC)
    runs = IngestRun.objects.filter(status=IngestRun.Status.SUCCEEDED, finished_at__gt=snapshot.generated_at).filter(
        Q(window_start__isnull=True) | Q(window_start__lt=end, window_end__gt=start)
    )
    if until is not None:
        runs = runs.filter(finished_at__lte=until)
    return sorted(set(runs.values_list("account__name", flat=True)))
