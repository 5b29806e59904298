"""Contracts against the spend of the accounts they cover (issue 11): consumption, expectation, projection,
shortfall or overage, the renewal baseline, the notice deadline and a status. Read from the daily rollup.

Definitions (UTC days, half-open periods, money in the contract's currency):
- **Covered spend**: the rollup's priced spend of the contract's accounts (none named: every account of its
  provider). In the reporting currency when the contract is in it; otherwise the provider's own amounts of the
  rows billed in the contract's currency (`cost`), since a contract is paid in the currency it was signed in.
- **Commitment periods**: `term` is one period, the whole term; `monthly` is each calendar month the term
  touches (a month cut by the term's start or end is committed pro rata by day); `yearly` is each year from the
  start date (the last one cut by the end pro rata). Each period is judged on its own: a period's unused part is
  lost, and spending more in one does not make up for another.
- **Consumed**: covered spend from the term's start to today (today's partial day included), per period.
- **Expected to date**: each period's commitment × the share of its days already gone (straight line).
- **Projected**: per period, finops.forecast.projection of the covered spend (by day of week with a trend, from the last
  eight weeks, the same forecast as the overview, the caps and the report), never below what the period has
  consumed; a finished period is what it consumed. **Run rate**: the forecast's average daily spend over the current
  period's days left (none without enough history, or once the term has ended). **Shortfall** = Σ max(0, commitment −
  projected) per period (money committed and not used);
  **overage** = Σ max(0, projected − commitment).
- **Renewal baseline**: the average monthly covered spend of the last 3 complete calendar months × the renewal
  term in months (fewer months when the covered accounts' spend starts later: the average runs from the first
  month with spend; none without any). "Renew at or below $X" when the committed amount of a renewed term
  would be above it.
- **Prepaid** credit is part of the commitment, not added to it: it is shown, drawn down by consumption first
  (`prepaid_used`, `prepaid_left`), and the commitment figures above already include it.
- **Renewed in place**: every figure is the current term's (the contract's own dates); archived terms are history.
- **Notice deadline**: end − notice days; after it, an auto-renewing contract renews whatever happens.
- **Status**, most urgent first: `not_started`, `ended`, `notice_passed` (auto-renewing and the deadline is
  behind us while the term runs), `shortfall` (at least a quarter of the term left and the periods not yet over
  projected to use less than SHORTFALL_SHARE of what they commit, each period counting at most its own
  commitment: with a monthly basis one month's overage does not hide another's shortfall; for a term basis this
  is simply projected < 90 % of the commitment), `overage` (some period projected above its commitment),
  `on_track`.
"""

import calendar
import datetime as dt
from dataclasses import dataclass, field
from decimal import Decimal

from django.conf import settings
from django.db.models import QuerySet, Sum, prefetch_related_objects

from finops.core import display
from finops.core.months import month_of, next_month
from finops.forecast.projection import fit, forecast, history_start
from finops.models import CommitmentBasis, Contract, DailySpend
from finops.spend.selectors.spend import ZERO, period

BASELINE_MONTHS = 3
SHORTFALL_SHARE = Decimal("0.9")
STATUS_LABELS = {
    "notice_passed": "Notice passed",
    "shortfall": "Shortfall risk",
    "overage": "Overage risk",
    "on_track": "On track",
    "ended": "Ended",
    "not_started": "Not started",
}


@dataclass
class CommitmentPeriod:
    start: dt.date
    end: dt.date
    committed: Decimal
    consumed: Decimal = ZERO
    expected: Decimal = ZERO
    projected: Decimal = ZERO

    @property
    def shortfall(self) -> Decimal:
        return max(ZERO, self.committed - self.projected)

    @property
    def overage(self) -> Decimal:
        return max(ZERO, self.projected - self.committed)


@dataclass
class ContractStatus:
    contract: Contract
    today: dt.date
    periods: list[CommitmentPeriod] = field(default_factory=list)
    run_rate: Decimal | None = None  # per day
    renewal_baseline: Decimal | None = None

    @property
    def committed(self) -> Decimal:
        return sum((p.committed for p in self.periods), ZERO)

    @property
    def consumed(self) -> Decimal:
        return sum((p.consumed for p in self.periods), ZERO)

    @property
    def expected_to_date(self) -> Decimal:
        return sum((p.expected for p in self.periods), ZERO)

    @property
    def projected(self) -> Decimal:
        return sum((p.projected for p in self.periods), ZERO)

    @property
    def shortfall(self) -> Decimal:
        return sum((p.shortfall for p in self.periods), ZERO)

    @property
    def overage(self) -> Decimal:
        return sum((p.overage for p in self.periods), ZERO)

    @property
    def prepaid_used(self) -> Decimal:
        return min(self.contract.prepaid, self.consumed)

    @property
    def prepaid_left(self) -> Decimal:
        return self.contract.prepaid - self.prepaid_used

    @property
    def open_periods(self) -> list[CommitmentPeriod]:
        """The periods not over yet (the current one and those ahead)."""
        return [p for p in self.periods if p.end > self.today]

    @property
    def shortfall_risk(self) -> bool:
        """Module docstring, Status: the open periods projected short, with a quarter of the term left."""
        periods = self.open_periods
        committed = sum((p.committed for p in periods), ZERO)
        used = sum((min(p.projected, p.committed) for p in periods), ZERO)
        return bool(committed) and used < committed * SHORTFALL_SHARE and self.days_left * 4 >= self.term_days

    @property
    def notice_deadline(self) -> dt.date:
        return self.contract.end - dt.timedelta(days=self.contract.notice_days)

    @property
    def days_to_notice_deadline(self) -> int:
        return (self.notice_deadline - self.today).days

    @property
    def term_days(self) -> int:
        return (self.contract.end - self.contract.start).days

    @property
    def days_left(self) -> int:
        return max(0, (self.contract.end - max(self.today, self.contract.start)).days)

    @property
    def renewal_advice(self) -> Decimal | None:
        """ "Renew at or below this": the baseline, when a renewed term at today's commitment would be above it."""
        if self.renewal_baseline is None:
            return None
        return self.renewal_baseline if renewed_commitment(self.contract) > self.renewal_baseline else None

    @property
    def status(self) -> str:
        contract, today = self.contract, self.today
        if today < contract.start:
            return "not_started"
        if today >= contract.end:
            return "ended"
        if contract.auto_renew and today > self.notice_deadline:
            return "notice_passed"
        if self.shortfall_risk:
            return "shortfall"
        if self.overage > 0:
            return "overage"
        return "on_track"

    @property
    def status_label(self) -> str:
        return STATUS_LABELS[self.status]


def add_months(day: dt.date, months: int) -> dt.date:
    """The same day `months` later, clamped to the month's last day (Jan 31 + 1 month = Feb 28 or 29)."""
    month_index = day.month - 1 + months
    year, month = day.year + month_index // 12, month_index % 12 + 1
    return dt.date(year, month, min(day.day, calendar.monthrange(year, month)[1]))


def commitment_periods(contract: Contract) -> list[CommitmentPeriod]:
    """The term cut into the periods its commitment is judged over, each with its committed amount."""
    start, end, amount = contract.start, contract.end, contract.commitment
    if contract.commitment_basis == CommitmentBasis.TERM:
        return [CommitmentPeriod(start, end, amount)]
    found = []
    if contract.commitment_basis == CommitmentBasis.MONTHLY:
        month = month_of(start)
        while month < end:
            following = next_month(month)
            first, stop = max(start, month), min(end, following)
            share = Decimal((stop - first).days) / Decimal((following - month).days)
            found.append(CommitmentPeriod(first, stop, amount * share))
            month = following
        return found
    year_start, years = start, 0
    while year_start < end:
        years += 1
        full_end = add_months(start, 12 * years)
        stop = min(end, full_end)
        share = Decimal((stop - year_start).days) / Decimal((full_end - year_start).days)
        found.append(CommitmentPeriod(year_start, stop, amount * share))
        year_start = full_end
    return found


def renewed_commitment(contract: Contract) -> Decimal:
    """What a renewed term would commit at today's commitment: over renewal_term_months."""
    months = Decimal(contract.renewal_term_months)
    if contract.commitment_basis == CommitmentBasis.MONTHLY:
        return contract.commitment * months
    if contract.commitment_basis == CommitmentBasis.YEARLY:
        return contract.commitment * months / 12
    term_months = whole_months(contract.start, contract.end)
    if term_months is None:  # a term of no whole number of months: in mean months
        term_months = Decimal((contract.end - contract.start).days) / Decimal("30.436875")
    return contract.commitment * months / term_months if term_months else contract.commitment


def whole_months(start: dt.date, end: dt.date) -> int | None:
    """How many months [start, end) is when it is a whole number of them (2024-02-29 to 2025-02-28: 12), else None."""
    months = (end.year - start.year) * 12 + end.month - start.month
    return months if months > 0 and add_months(start, months) == end else None


def covered(contract: Contract, rows: QuerySet[DailySpend] | None = None) -> QuerySet[DailySpend]:
    """The rollup rows a contract covers."""
    rows = (DailySpend.objects.all() if rows is None else rows).filter(provider_id=contract.provider_id)
    account_ids = [a.id for a in contract.accounts.all()]
    return rows.filter(account_id__in=account_ids) if account_ids else rows


def _money(rows: QuerySet[DailySpend], contract: Contract) -> str:
    """The column that holds covered spend in the contract's currency (module docstring)."""
    return "reporting_cost" if contract.currency == settings.FINOPS_REPORTING_CURRENCY else "cost"


def contract_daily(contract: Contract, start: dt.date, end: dt.date) -> dict[dt.date, Decimal]:
    """{day: covered spend} over [start, end)."""
    rows = period(covered(contract), start, end)
    column = _money(rows, contract)
    if column == "cost":
        rows = rows.filter(currency=contract.currency)
    return {row["day"]: row["spent"] or ZERO for row in rows.values("day").annotate(spent=Sum(column)).order_by()}


def contract_status(contract: Contract, *, today: dt.date) -> ContractStatus:
    status = ContractStatus(contract=contract, today=today, periods=commitment_periods(contract))
    baseline_start = add_months(month_of(today), -BASELINE_MONTHS)
    daily = contract_daily(
        contract,
        min(contract.start, baseline_start, history_start(today)),
        max(today + dt.timedelta(days=1), contract.start),
    )
    own = {d: v for d, v in daily.items() if d >= contract.start}  # the spend before the term is not the contract's
    # Fitted once for all the periods still running (a monthly commitment has twelve), when any is.
    fitted = fit(own, as_of=today) if any(part.end > today for part in status.periods) else None
    for part in status.periods:
        part.consumed = sum((v for d, v in daily.items() if part.start <= d < part.end and d <= today), ZERO)
        length = (part.end - part.start).days
        gone = min(length, max(0, (today - part.start).days))
        part.expected = part.committed * gone / length if length else ZERO
        projection = forecast(own, start=part.start, end=part.end, as_of=today, at_least=part.consumed, fitted=fitted)
        part.projected = part.consumed if projection.total is None else projection.total
        if status.run_rate is None and part.end > today:
            status.run_rate = projection.daily_rate
    this_month = month_of(today)
    spent_days = [d for d in daily if baseline_start <= d < this_month]
    if spent_days:
        first, months = month_of(min(spent_days)), 0
        while first < this_month:
            first, months = next_month(first), months + 1
        spent = sum((daily[d] for d in spent_days), ZERO)
        status.renewal_baseline = spent / months * contract.renewal_term_months
    return status


def contract_statuses(contracts, *, today: dt.date) -> list[ContractStatus]:
    """Each contract's status; their accounts are read in one query (not one per contract)."""
    contracts = list(contracts)
    prefetch_related_objects(
        [c for c in contracts if "accounts" not in getattr(c, "_prefetched_objects_cache", {})], "accounts"
    )
    return [contract_status(contract, today=today) for contract in contracts]


def renewals_ahead(*, today: dt.date, within_days: int = 183) -> list[ContractStatus]:
    """Auto-renewing contracts whose notice deadline falls in [today, today + within_days), soonest first."""
    found = []
    for contract in (
        Contract.objects.filter(auto_renew=True, end__gt=today).select_related("provider").prefetch_related("accounts")
    ):
        status = contract_status(contract, today=today)
        if 0 <= status.days_to_notice_deadline < within_days:
            found.append(status)
    return sorted(found, key=lambda s: s.notice_deadline)


def advice_words(status: ContractStatus) -> str | None:
    if status.renewal_advice is None:
        return None
    return (
        f"Renew at or below {display.money_exact(status.renewal_advice, status.contract.currency)} "
        f"for {status.contract.renewal_term_months} months"
    )
