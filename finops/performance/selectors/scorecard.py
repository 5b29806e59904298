"""The quarterly scorecard (issue 12): per workload the user may see, per UTC calendar quarter, what it cost, what
it produced and how well it ran, and the change from the previous quarter — the figures platform teams are asked
for ($/M tokens, p99 latency against the SLA, quality) beside cost per outcome and the error rate.

Each source is read once for every workload of the scorecard, never once per workload: spend from the rollups
(spend.sums, whole months from the monthly rollup, so a quarter is three monthly rows per group), measured
performance (performance_totals: three monthly rows per workload × provider × model, their distributions merged
in Postgres, both spans in one pass), the batch workloads' hours (day_hours), outcomes (outcome_counts) and eval scores
(quality_by) — for the quarter and for the quarter it
is compared with.

Decisions (docs/performance.md, "Quarterly scorecard"):
- Quarters are UTC calendar quarters, half-open. The current quarter is read *to date*: its complete UTC days
  (today is not complete, as month to date elsewhere), and it is compared with as many days from the start of the
  previous quarter, so a change is like for like; a past quarter is compared with the whole previous quarter.
- A workload is listed when it has usage, measured requests or outcomes in the quarter or the one it is compared
  with (a workload whose spend stopped is a change finance wants to see). Unattributed spend is no workload: it
  is on the unattributed page.
- Spend is the priced spend (None, "—", when none of the usage had a price; $0.00 when there was no usage at all);
  $/M tokens divides it by priced tokens only; cost per outcome is Σcost / Σoutcomes (None without outcomes).
- Requests are those the usage lines report (the population of spend); the error rate, p99 and output speed are
  over the measured requests (gateway logs, metrics API), their count beside them (`measured_requests`).
- p99 is read from the merged distribution of every measured request of the quarter (±1 %), never an average of
  percentiles; a quarter known from summaries only has no p99 (the verdict says what its bound allows).
- The verdict is the workload's: its latency SLA (p99 against sla_seconds, with the share of requests over it), or
  for a batch workload with a window, whether each day's work fit it (finops.performance.selectors.performance).
- Quality is the workload's primary eval, weighted by the requests each provider × model served (quality_by).
- Changes: % for spend, tokens, $/M tokens, cost per outcome and output speed (relative figures finance compares);
  percentage points for the error rate (a rate of a rate misleads: 0.1 % → 0.2 % is not "+100 %" worth of news);
  milliseconds for p99; the score's difference for quality (only when both quarters scored the same eval).
"""

import datetime as dt
import re
from dataclasses import dataclass
from decimal import Decimal

from finops.core import access, display
from finops.core.any_of import AnyOf
from finops.core.reporting_period import LATEST, resolve
from finops.models import MonthlyPerformance, MonthlySpend, Workload
from finops.performance.measures import Performance
from finops.performance.selectors import outcomes as outcome_selectors
from finops.performance.selectors.evals import quality_by
from finops.spend.selectors import spend

from .performance import day_hours, is_batch, workload_verdict
from .performance_totals import performance_totals

QUARTER = re.compile(r"^(\d{4})-?Q([1-4])$", re.IGNORECASE)
FIRST_YEAR = 2000
HUNDRED = Decimal(100)


class QuarterError(ValueError):
    """A quarter the URL asks for that does not exist or has not begun; the message names it."""


@dataclass(frozen=True)
class Quarter:
    key: str  # "2026Q4"
    start: dt.date
    end: dt.date  # excluded: the first day of the next quarter
    label: str  # "Q4 2026"
    read_end: dt.date  # where its figures stop: `end`, or today for the quarter to date
    compare_start: dt.date
    compare_end: dt.date
    compare_label: str

    @property
    def to_date(self) -> bool:
        return self.read_end < self.end

    @property
    def title(self) -> str:
        return f"{self.label} to date" if self.to_date else self.label

    @property
    def days(self) -> int:
        return (self.read_end - self.start).days


def quarter_key(day: dt.date) -> str:
    return f"{day.year}Q{(day.month - 1) // 3 + 1}"


def _quarter_begins(day: dt.date) -> bool:
    """The first day of a quarter: the quarter has no complete day yet to show."""
    return day.day == 1 and day.month % 3 == 1


def quarter(text: str | None, *, today: dt.date) -> Quarter:
    """The quarter `text` names ("2026Q4" or "2026-Q4"), read as the module says. None or "": the current quarter,
    or on its first day (no complete day yet) the one before."""
    text = (text or "").strip() or quarter_key(today - dt.timedelta(days=1) if _quarter_begins(today) else today)
    match = QUARTER.match(text)
    if not match or not FIRST_YEAR <= int(match[1]) < LATEST.year:  # 9999Q4's comparison once overflowed (500)
        raise QuarterError(f"Unknown quarter {text!r}: use a year and a quarter, e.g. {quarter_key(today)}.")
    period = resolve(f"{match[1]}-Q{match[2]}", today=today)
    key = f"{match[1]}Q{match[2]}"
    if period.start >= today:
        raise QuarterError(
            f"{period.label} has no complete day yet ({key}): pick {quarter_key(today)} or an earlier quarter."
        )
    previous = period.compare
    if today < period.end:
        days = today - period.start
        return Quarter(
            key,
            period.start,
            period.end,
            period.label,
            today,
            previous.start,
            min(previous.start + days, previous.end),
            f"the same {days.days} days of {previous.label}",
        )
    return Quarter(
        key, period.start, period.end, period.label, period.end, previous.start, previous.end, previous.label
    )


def quarter_choices(user, *, today: dt.date) -> list[tuple[str, str]]:
    """What the picker offers: the current quarter (to date) and every earlier quarter with spend or measured
    performance the user may see, newest first."""
    months = set(spend.visible_spend(user, MonthlySpend).values_list("month", flat=True).distinct())
    performance = MonthlyPerformance.objects.all()
    if not access.can_see_unattributed(user):
        performance = performance.filter(team_id__in=list(access.visible_teams(user).values_list("id", flat=True)))
    months |= set(performance.values_list("month", flat=True).distinct())
    current = quarter_key(today)
    keys = sorted({quarter_key(m) for m in months if quarter_key(m) < current}, reverse=True)
    found = [] if _quarter_begins(today) else [(current, f"Q{current[-1]} {current[:4]} to date")]
    return found + [(key, f"Q{key[-1]} {key[:4]}") for key in keys]


# --- the figures ---


@dataclass
class Figures:
    """One workload's figures over one span (the quarter, or the span it is compared with)."""

    cost: Decimal | None = spend.ZERO
    unpriced_tokens: int = 0
    tokens: int = 0
    usd_per_mtok: Decimal | None = None
    outcomes: int | None = 0  # None: no outcome reported in the quarter (whether or not it has a unit) — "—", not 0
    per_outcome: Decimal | None = None
    requests: int = 0
    measured_requests: int = 0
    errors: int = 0
    error_rate: Decimal | None = None
    p99_ms: float | None = None
    summary_only: bool = False
    tokens_per_s: Decimal | None = None
    tokens_per_s_basis: str = ""
    quality: Decimal | None = None
    quality_eval: str = ""
    verdict: object = None  # finops.performance.selectors.performance.Verdict

    @property
    def active(self) -> bool:
        return bool(
            self.tokens
            or self.requests
            or self.measured_requests
            or self.outcomes
            or (self.cost is not None and self.cost != spend.ZERO)
        )


def _spend_by_workload(daily, monthly, ids: list[int], start: dt.date, end: dt.date, today: dt.date) -> dict[int, dict]:
    rows = spend.sums(
        daily.filter(AnyOf("workload_id", ids)),
        monthly.filter(AnyOf("workload_id", ids)),
        start,
        end,
        ("workload_id",),
        today=today,
        months_beyond_days=0,
    )
    return {row["workload_id"]: row for row in rows}


def _figures(
    workloads: list[Workload],
    daily,
    monthly,
    start: dt.date,
    end: dt.date,
    *,
    today: dt.date,
    hours: dict[int, dict[dt.date, int]],
    measured: tuple[dict[int, Performance], dict],
) -> dict[int, Figures]:
    """Figures of every workload over [start, end): one read per source, whatever the number of workloads.
    `measured`: the span's performance_totals (read with the other span's, in one pass)."""
    ids = [w.id for w in workloads]
    spent = _spend_by_workload(daily, monthly, ids, start, end, today)
    counts = outcome_selectors.outcome_counts(ids, start, end)
    merged, requests = measured
    quality = quality_by(ids, start, end, requests)
    found = {}
    for workload in workloads:
        row = spent.get(workload.id)
        performance = merged.get(workload.id)
        figures = Figures()
        if row is not None:
            figures.cost, figures.unpriced_tokens = row["cost"], row["unpriced_tokens"]
            figures.tokens, figures.requests, figures.usd_per_mtok = row["tokens"], row["requests"], row["usd_per_mtok"]
        figures.outcomes = counts.get(workload.id)  # nothing reported in the quarter: "—", not "0"
        figures.per_outcome = outcome_selectors.per_outcome(figures.cost, figures.outcomes)
        if performance is not None:
            figures.measured_requests, figures.errors = performance.all_requests, performance.all_errors
            known = performance.requests + performance.summary_counted  # requests whose failure is known
            if known:
                figures.error_rate = Decimal(performance.all_errors) / Decimal(known)
            figures.p99_ms = performance.p_ms(0.99) if performance.e2e.count else None
            figures.summary_only = performance.summary_only
            figures.tokens_per_s, figures.tokens_per_s_basis = performance.output_tokens_per_s
        if workload.id in quality:
            figures.quality, figures.quality_eval = quality[workload.id].score, quality[workload.id].name
        days = {day: mask for day, mask in hours.get(workload.id, {}).items() if start <= day < end}
        figures.verdict = workload_verdict(workload, performance, days)
        found[workload.id] = figures
    return found


def _pct(now, before) -> Decimal | None:
    return spend.change(None if now is None else Decimal(now), None if before is None else Decimal(before))


def changes(now: Figures, before: Figures) -> dict:
    """The change of each figure from `before` to `now`, in the unit the module's docstring gives it."""
    return {
        "cost_change": _pct(now.cost, before.cost),
        "tokens_change": _pct(now.tokens, before.tokens),
        "usd_per_mtok_change": _pct(now.usd_per_mtok, before.usd_per_mtok),
        "per_outcome_change": _pct(now.per_outcome, before.per_outcome),
        "error_rate_change": None
        if now.error_rate is None or before.error_rate is None
        else (now.error_rate - before.error_rate) * HUNDRED,
        "p99_change_ms": None if now.p99_ms is None or before.p99_ms is None else now.p99_ms - before.p99_ms,
        "tokens_per_s_change": _pct(now.tokens_per_s, before.tokens_per_s),
        "quality_change": None
        if now.quality is None or before.quality is None or now.quality_eval != before.quality_eval
        else now.quality - before.quality,
    }


def sla_text(workload: Workload) -> str:
    if is_batch(workload):
        return f"{workload.batch_window_hours} h window"
    return "" if workload.sla_seconds is None else display.duration(workload.sla_seconds)


def verdict_cell(verdict) -> dict:
    """The badge: status, label, and what it was judged on (the p99 and the SLA, or the batch window)."""
    if verdict.kind == "batch":
        if verdict.status == "no-sla":
            title = "A batch workload with no window set"
        elif verdict.status == "no-data":
            title = f"No measured work to judge against its {verdict.window_hours} h window"
        else:
            title = (
                f"{verdict.days_over} of {verdict.days} days ran longer than the {verdict.window_hours} h window "
                f"(longest day: {verdict.longest_span_hours} h)"
            )
    else:
        p99 = display.latency_ms(verdict.p99_ms)
        sla = None if verdict.sla_seconds is None else display.duration(verdict.sla_seconds)
        if verdict.status == "no-sla":
            title = f"No latency SLA set; p99 {p99}"
        elif verdict.status == "no-data":
            title = f"No measured requests to judge against the {sla} SLA"
        elif verdict.bound:
            title = f"Summary only: p99 ≤ {p99} against its {sla} SLA (no distribution to read it from)"
        else:
            title = f"p99 {p99} against its {sla} SLA; {display.share(verdict.share_over)} of requests slower"
    return {"status": verdict.status, "label": verdict.label, "title": title, "kind": verdict.kind}


@dataclass(frozen=True)
class Scorecard:
    quarter: Quarter
    rows: list[dict]
    team: object = None  # the Team the scorecard is narrowed to, if any


def scorecard(user, the_quarter: Quarter, *, today: dt.date, team=None) -> Scorecard:
    """One row per workload the user may see (narrowed to `team`) with activity in the quarter or the span it is
    compared with (workload_rows)."""
    q = the_quarter
    return Scorecard(
        q,
        workload_rows(
            user,
            (q.start, q.read_end),
            (q.compare_start, q.compare_end),
            compare_label=q.compare_label,
            today=today,
            team=team,
        ),
        team,
    )


def workload_rows(
    user,
    span: tuple[dt.date, dt.date],
    compare: tuple[dt.date, dt.date],
    *,
    compare_label: str,
    today: dt.date,
    team=None,
) -> list[dict]:
    """The scorecard's rows over any span (a quarter here, a month in the TCO report): per workload with activity
    in `span` or `compare`, its figures (row keys = the Table spec's, finops.performance.tables.scorecard), the changes,
    and `previous` (the comparison span's Figures)."""
    workloads = access.visible_workloads(user)
    if team is not None:
        workloads = workloads.filter(team=team)
    workloads = list(
        workloads.only(
            "id",
            "name",
            "slug",
            "team__name",
            "team__slug",
            "latency_profile",
            "sla_seconds",
            "batch_window_hours",
            "outcome_unit",
        ).order_by("name", "id")
    )
    daily, monthly = spend.visible_spend(user), spend.visible_spend(user, MonthlySpend)
    (start, end), (compare_start, compare_end) = span, compare
    batch = [w.id for w in workloads if is_batch(w)]
    hours = day_hours(batch, min(start, compare_start), max(end, compare_end)) if batch else {}
    measured = performance_totals([w.id for w in workloads], {"now": span, "before": compare})
    now = _figures(workloads, daily, monthly, start, end, today=today, hours=hours, measured=measured["now"])
    before = _figures(
        workloads, daily, monthly, compare_start, compare_end, today=today, hours=hours, measured=measured["before"]
    )
    rows = []
    for workload in workloads:
        figures, previous = now[workload.id], before[workload.id]
        if not (figures.active or previous.active):
            continue
        rows.append(
            {
                "workload_id": workload.id,
                "label": workload.name,
                "slug": workload.slug,
                "team": workload.team.name,
                "team_slug": workload.team.slug,
                "outcome_unit": workload.outcome_unit,
                "sla": sla_text(workload),
                **{name: getattr(figures, name) for name in Figures.__dataclass_fields__ if name != "verdict"},
                "verdict": verdict_cell(figures.verdict),
                "verdict_detail": figures.verdict,
                **changes(figures, previous),
                "previous": previous,
                "delta_title": f"Change from {compare_label}",
            }
        )
    return rows


# --- sorting (the page, server-side) ---

VERDICT_ORDER = {"fails": 0, "unknown": 1, "meets": 2, "no-sla": 3, "no-data": 4}


def sort_rows(rows: list[dict], key: str, descending: bool = False) -> list[dict]:
    """Rows sorted by `key`, stable (ties keep the workload-name order), rows without a value last either way.
    Text sorts case-blind; the verdict sorts worst first (fails, unknown, meets, no SLA, no data)."""

    def value(row):
        found = row.get(key)
        if key == "verdict" and found is not None:
            return VERDICT_ORDER.get(found["status"], 9)
        return found.casefold() if isinstance(found, str) else found

    known = [row for row in rows if value(row) not in (None, "")]
    unknown = [row for row in rows if value(row) in (None, "")]
    return sorted(known, key=value, reverse=descending) + unknown
