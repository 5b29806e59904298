"""The monthly TCO report's sections beyond spend: caps and alerts, unit economics and SLAs, commitments and
renewals, data quality and sources, savings (finops.reports.selectors.tco_report assembles them; the tables' columns are
finops.reports.tco_tables). Each reads through the selector its own page uses, as of the report's last day.

Provisional (docs/reports.md): a month is settled once every enabled source has caught up past the lookback after
the month's end — an API source with a successful pull at or after the month's end + LOOKBACK_DAYS (its pulls
re-read that many days, so later restatements of the month are in), a file or gateway source with data for the
month's last day and LOOKBACK_DAYS gone since. Until then the report says "provisional", and so does its snapshot.
"""

import datetime as dt
from decimal import Decimal

from django.db.models import Count, Min, Q

from finops.alerts.selectors.caps import SCOPE_KEYS, cap_statuses
from finops.contracts.selectors import advice_words, contract_statuses, renewals_ahead
from finops.core import display
from finops.core.months import month_of, next_month
from finops.models import (
    Account,
    AlertEvent,
    Cap,
    CapScope,
    Contract,
    CostBasis,
    DailySpend,
    IngestRun,
    MonthlySpend,
    Notification,
    Provider,
    Team,
)
from finops.performance.selectors.scorecard import workload_rows
from finops.sources.models import LOOKBACK_DAYS
from finops.sources.selectors.account_status import account_statuses
from finops.spend.selectors import spend
from finops.spend.selectors.reconciliation import provider_totals
from finops.whatif.savings_rows import saving_rows
from finops.whatif.selectors import savings

ZERO = Decimal(0)
HUNDRED = Decimal(100)
RENEWALS_WITHIN_DAYS = 183  # six months
ALERTS_SHOWN = 100
DAY = dt.timedelta(days=1)


def _midnight(day: dt.date) -> dt.datetime:
    return dt.datetime.combine(day, dt.time(), tzinfo=dt.UTC)


def _badge(status: str, label: str) -> dict:
    """A badge column's keys (finops.reports.tables): the label it reads, the status that colours it, its tooltip.
    Spread after the row's own keys, so it must carry the label itself ("On track", never "on_track")."""
    return {"status": label, "status_status": status, "status_text": label}


def cap_outcome(spent: Decimal, amount: Decimal) -> str:
    return "breached" if spent > amount else "ok"


def cap_outcome_words(spent: Decimal, amount: Decimal) -> str:
    """A closed cap period's outcome: "Over by $1,204.10" or "Within, $356.20 under"."""
    if spent > amount:
        return f"Over by {display.money_exact(spent - amount)}"
    return f"Within, {display.money_exact(amount - spent)} under"


def commitment_outcome(consumed: Decimal, committed: Decimal, currency: str) -> tuple[str, str]:
    """A closed commitment period's outcome (badge status, words): "Under-used by $1,356.34", "Over by …", "Met"."""
    if consumed < committed:
        return "shortfall", f"Under-used by {display.money_exact(committed - consumed, currency)}"
    if consumed > committed:
        return "overage", f"Over by {display.money_exact(consumed - committed, currency)}"
    return "on_track", "Met exactly"


class Sections:
    def __init__(self, *, user, span, compare, as_of: dt.date, today: dt.date):
        self.user, self.span, self.compare, self.as_of, self.today = user, span, compare, as_of, today
        self.alerts_total = 0
        self.provisional = True
        self._sources: list[dict] | None = None

    def tables(self) -> dict[str, list[dict]]:
        # As of the month's end: the days after it are left out (a quarter's cap read on 31 October is October's
        # part of the quarter, not October plus November to date), whenever the report is read.
        statuses = cap_statuses(
            list(Cap.objects.select_related("team", "workload", "provider", "account")),
            today=self.as_of,
            rows=DailySpend.objects.filter(day__lt=self.span.end),
        )
        self.cap_statuses = statuses
        sources = self.source_rows()
        self.provisional = self.settling()
        return {
            "org_caps": [self._cap_row(s) for s in statuses if s.cap.scope == CapScope.ORG],
            "caps": [row for row in map(self._cap_row, statuses) if row["status_status"] in ("breached", "forecast")],
            "alerts": self.alerts(),
            "unit_economics": self.unit_economics(),
            "commitments": self.commitments(),
            "renewals": self.renewals(),
            "reconciliation": self.reconciliation(),
            "sources": sources,
            "savings": self.savings(),
        }

    # --- budget against actual ---

    def budgets(self, team_rows: list[dict]) -> list[dict]:
        """Budget against actual per team: a team's caps are its budget (its monthly cap; else its quarterly one,
        against the quarter to the month's end). Every team with spend or a cap is listed; one without a cap says so."""
        caps: dict[int, object] = {}
        for status in self.cap_statuses:
            if status.cap.scope == CapScope.TEAM and (status.cap.team_id not in caps or status.cap.period == "month"):
                caps[status.cap.team_id] = status
        teams = {t.slug: t for t in Team.objects.all()}
        listed = [teams[row["slug"]] for row in team_rows if row.get("slug") in teams]
        listed += [s.cap.team for team_id, s in caps.items() if s.cap.team not in listed]
        spent = {row["slug"]: row["cost"] for row in team_rows}
        rows = []
        for team in listed:
            status = caps.get(team.id)
            if status is None:
                rows.append(
                    {
                        "label": team.name,
                        "cap": "No cap",
                        "period": "",
                        "budget": None,
                        "actual": spent.get(team.slug),
                        "variance": None,
                        "variance_share": None,
                        **_badge("none", "No budget set"),
                    }
                )
                continue
            amount, actual = status.cap.amount, status.spent
            closed = status.period_end <= self.span.end
            code, words = (
                (cap_outcome(actual, amount), cap_outcome_words(actual, amount))
                if closed
                else (status.status, f"{status.status_label} (period open)")
            )
            rows.append(
                {
                    "label": team.name,
                    "cap": status.cap.name,
                    "period": status.period_label,
                    "budget": amount,
                    "actual": actual,
                    "variance": amount - actual,
                    "variance_share": (amount - actual) / amount,
                    **_badge(code, words),
                }
            )
        return rows

    # --- caps and alerts ---

    def _cap_row(self, status) -> dict:
        cap = status.cap
        key = SCOPE_KEYS[cap.scope]
        target = getattr(cap, key.removesuffix("_id")) if key else None
        scope = cap.get_scope_display() + (f": {target}" if target is not None else "")
        code, label, forecast = status.status, status.status_label, status.forecast
        if status.period_end <= self.span.end:  # the period closed with the month: an outcome, not a forecast
            code, label, forecast = (
                cap_outcome(status.spent, cap.amount),
                cap_outcome_words(status.spent, cap.amount),
                None,
            )
        return {
            "label": cap.name,
            "scope": scope,
            "period": status.period_label,
            "amount": cap.amount,
            "spent": status.spent,
            "used": status.spent / cap.amount,
            "forecast": forecast,
            "status": label,
            **_badge(code, label),
        }

    def alerts(self) -> list[dict]:
        """The alerts of the month: raised during it, or about it (their period — a cap's month or quarter, a
        spike's day — begins in it, whenever the evaluation ran). The newest ALERTS_SHOWN; `alerts_total` counts
        them all."""
        start, end = self.span.start, self.span.end
        # About the month: raised until its sources settle (end + LOOKBACK_DAYS), so the list stops growing.
        events = AlertEvent.objects.filter(
            Q(
                period_start__gte=start,
                period_start__lt=end,
                created_at__lt=_midnight(end + dt.timedelta(days=LOOKBACK_DAYS)),
            )
            | Q(created_at__gte=_midnight(start), created_at__lt=_midnight(end))
        )
        self.alerts_total = events.count()
        sent = Count("notifications", filter=Q(notifications__status=Notification.Status.SENT))
        rows = []
        for event in events.annotate(sent_to=sent).order_by("-created_at", "-id")[:ALERTS_SHOWN]:
            rows.append(
                {
                    "raised": event.created_at.astimezone(dt.UTC).date(),
                    "kind": event.get_kind_display(),
                    "label": event.title,
                    "state": event.get_state_display(),
                    "sent_to": event.sent_to,
                }
            )
        return rows

    # --- unit economics and SLAs ---

    def unit_economics(self) -> list[dict]:
        """Workloads that count outcomes or were judged against an SLA, from the scorecard's figures for the month."""
        rows = workload_rows(
            self.user,
            (self.span.start, self.span.end),
            (self.compare.start, self.compare.end),
            compare_label="last month",
            today=self.today,
        )
        found = []
        for row in rows:
            if not row["outcome_unit"] and row["verdict"]["status"] not in ("meets", "fails", "unknown"):
                continue
            found.append(
                {
                    "label": row["label"],
                    "team": row["team"],
                    "outcome_unit": row["outcome_unit"],
                    "outcomes": row["outcomes"],
                    "cost": row["cost"],
                    "unpriced_tokens": row["unpriced_tokens"],
                    "per_outcome": row["per_outcome"],
                    "per_outcome_change": row["per_outcome_change"],
                    "previous_per_outcome": row["previous"].per_outcome,
                    "p99_ms": row["p99_ms"],
                    "sla": row["sla"],
                    "verdict": row["verdict"],
                }
            )
        return found

    # --- commitments ---

    def commitments(self) -> list[dict]:
        """Each contract in force during the month: its commitment period holding the month's last day."""
        contracts = Contract.objects.filter(start__lt=self.span.end, end__gt=self.span.start).select_related("provider")
        rows = []
        for status in contract_statuses(contracts.order_by("end", "name"), today=self.as_of):
            period = next((p for p in status.periods if p.start <= self.as_of < p.end), None) or (
                status.periods[-1] if status.periods else None
            )
            if period is None:
                continue
            contract = status.contract
            code, label, projected = status.status, status.status_label, period.projected
            if period.end <= self.span.end:  # the period closed by the month's end: its outcome, not a projection
                code, label = commitment_outcome(period.consumed, period.committed, contract.currency)
                projected = None
            rows.append(
                {
                    "label": contract.name,
                    "provider": contract.provider.name,
                    "period": f"{period.start:%Y-%m-%d} – {period.end - DAY:%Y-%m-%d}",
                    "committed": period.committed,
                    "consumed": period.consumed,
                    "expected": period.expected,
                    "projected": projected,
                    "currency": contract.currency,
                    "status": label,
                    **_badge(code, label),
                }
            )
        return rows

    def renewals(self) -> list[dict]:
        """Auto-renewals whose notice deadline falls in the six months after the month's end, days counted from
        it: as of the month like every section, so the report reads the same whenever it is rendered."""
        return [
            {
                "label": s.contract.name,
                "provider": s.contract.provider.name,
                "renews_on": s.contract.end,
                "notice_deadline": s.notice_deadline,
                "days_left": s.days_to_notice_deadline,
                "committed": s.committed,
                "currency": s.contract.currency,
                "advice": advice_words(s) or "Renewing at today's commitment is within recent use",
            }
            for s in renewals_ahead(today=self.span.end, within_days=RENEWALS_WITHIN_DAYS)
        ]

    # --- data quality ---

    def reconciliation(self) -> list[dict]:
        """Billed usage against list price, per provider with billed usage in the month."""
        rows = spend.period(spend.visible_spend(self.user), self.span.start, self.span.end)
        billed = rows.filter(cost_basis=CostBasis.BILLED).values_list("provider_id", flat=True).distinct()
        # One read for every provider (provider_totals), not two per provider: the same sums as reconciliation()'s.
        totals = provider_totals(rows)
        empty = {"billed": ZERO, "at_list": ZERO, "unpriced_billed": ZERO, "variance": None}
        return [
            {"label": provider.name, **{k: totals.get(provider.id, empty)[k] for k in empty}}
            for provider in Provider.objects.filter(id__in=list(billed)).order_by("name")
        ]

    def source_rows(self) -> list[dict]:
        """sources(), read once per report: whoever asks whether the month is settled before the report is made
        (finops.reports.selectors.tco_report.settled_tco_report) has read them already."""
        if self._sources is None:
            self._sources = self.sources()
        return self._sources

    def settling(self) -> bool:
        """Provisional: the month read to date, or a source not settled yet (module docstring)."""
        return self.span.end < next_month(self.span.start) or any(r["settled"] == "No" for r in self.source_rows())

    def sources(self) -> list[dict]:
        """Per account: the month's days with data, the days missing since it first had data, failed runs,
        and whether it has settled past its lookback (module docstring)."""
        start, end = self.span.start, self.span.end
        present: dict[int, set] = {}
        for account_id, day in (
            DailySpend.objects.filter(day__gte=start, day__lt=end).values_list("account_id", "day").distinct()
        ):
            present.setdefault(account_id, set()).add(day)
        # The first month with data from the monthly rollup (small); within that month, the first day present.
        first_month = dict(
            MonthlySpend.objects.values("account_id")
            .annotate(first=Min("month"))
            .order_by()
            .values_list("account_id", "first")
        )
        latest = {status.account.id: status.latest_day for status in account_statuses(self.today)}
        failed = dict(
            IngestRun.objects.filter(
                status=IngestRun.Status.FAILED,
                created_at__gte=_midnight(start),
                created_at__lt=_midnight(end + dt.timedelta(days=LOOKBACK_DAYS)),
            )
            .values("account_id")
            .annotate(n=Count("id"))
            .order_by()
            .values_list("account_id", "n")
        )
        rows = []
        for account in Account.objects.select_related("provider").order_by("name"):
            days = present.get(account.id, set())
            if not account.enabled and not days:
                continue  # switched off and silent this month: not a source of the month
            first = first_month.get(account.id)
            if first is not None and month_of(first) == start:
                first = min(days) if days else None
            expected = [start + dt.timedelta(days=n) for n in range((end - start).days)] if first is not None else []
            missing = [day for day in expected if day >= first and day not in days]
            rows.append(
                {
                    "label": account.name,
                    "provider": account.provider.name,
                    "days_with_data": len(days),
                    "missing_days": len(missing),
                    "first_missing": missing[0] if missing else None,
                    "failed_runs": failed.get(account.id, 0),
                    "latest_day": max(days) if days else None,
                    "settled": self._settled(account, latest.get(account.id)),
                }
            )
        return rows

    def _settled(self, account: Account, latest: dt.date | None) -> str:
        if not account.enabled:
            return "Disabled"
        settle_day = self.span.end + dt.timedelta(days=LOOKBACK_DAYS)
        if account.is_api:
            done = account.last_success_at is not None and account.last_success_at >= _midnight(settle_day)
        else:
            done = latest is not None and latest >= self.span.end - DAY and self.today >= settle_day
        return "Yes" if done else "No"

    # --- savings ---

    def savings(self) -> list[dict]:
        """The routing savings priced on the report's month (the Savings page's basis, over the calendar month:
        its "This month" column is the month's spend of each part): only the parts that would save money."""
        return [row for row in saving_rows(savings(self.user, self.span.end, start=self.span.start)) if row["saving"]]
