"""One status per account, the same on every page: the Sources list, the account page, the overview's freshness.

Two questions, answered together so no page can answer one and forget the other:

- is the account *working*? Its latest finished sync or import that could change its data decides. A failed
  pull — a refused key, a malformed page — shows the account as `error` ("last run failed: reason") until a later
  run of that account succeeds. A file someone handed in that was refused (IngestRun.refused_file: nothing of it
  was written) does not: the account's data is exactly what it was, and the refusal is the uploader's to fix, shown
  to them on the upload and in the account's runs (issue 24: a rejected upload turned a healthy account to
  "error" and emailed finance "source failing"). An account switched off (a 401/403 disables it) is `disabled`.
- is its data *fresh*? The newest day it has spend for: `stale` when older than STALE_AFTER_DAYS, `never`
  when there is none. The freshness is shown beside an error, never hidden by it.

States, most urgent first: disabled, error, never (no data yet), stale (N days behind), ok.
"""

import datetime as dt
from dataclasses import dataclass

from django.db.models import OuterRef, Subquery

from finops.models import Account, DailySpend, IngestRun

STALE_AFTER_DAYS = 2  # providers publish yesterday's usage within a day; two days without data is late

URGENCY = {"disabled": 0, "error": 1, "never": 2, "stale": 3, "ok": 4}
BADGES = {"disabled": "bad", "error": "bad", "never": "", "stale": "warn", "ok": "ok"}
FINISHED = (IngestRun.Status.SUCCEEDED, IngestRun.Status.FAILED)


def deciding_runs(runs):
    """The finished runs that decide an account's state: every one but a refused file (IngestRun.refused_file)."""
    return runs.filter(status__in=FINISHED).exclude(
        status=IngestRun.Status.FAILED, trigger__in=IngestRun.HANDED_IN, file_name__gt=""
    )


@dataclass(frozen=True)
class AccountStatus:
    account: Account
    state: str  # disabled | error | never | stale | ok
    label: str  # the badge: "disabled", "error", "no data yet", "3 days behind", "ok"
    detail: str  # one sentence saying why, or what the data covers
    freshness: str  # "fresh", "3 days behind", "no data yet": shown beside an error
    latest_day: dt.date | None
    lag_days: int | None
    last_run: IngestRun | None  # the latest finished run

    @property
    def badge(self) -> str:
        """The CSS class of the badge (ok / warn / bad)."""
        return BADGES[self.state]

    @property
    def stale(self) -> bool:
        return self.lag_days is None or self.lag_days > STALE_AFTER_DAYS

    @property
    def failing(self) -> bool:
        return self.state in ("disabled", "error")


def failure_text(run: IngestRun) -> str:
    """How a failed run is named wherever an account's error is shown."""
    if run.trigger == IngestRun.Trigger.UPLOAD or run.file_name:
        return f"last import failed (file {run.file_name}): {run.error}"
    return f"last run failed: {run.error}"


def status_of(
    *, account: Account, latest_day: dt.date | None, last_run: IngestRun | None, today: dt.date
) -> AccountStatus:
    """The rules, on values already read (account_statuses reads them for many accounts in two queries)."""
    lag = (today - latest_day).days if latest_day else None
    if latest_day is None:
        freshness = "no data yet"
    elif lag > STALE_AFTER_DAYS:
        freshness = f"{lag} days behind"
    else:
        freshness = "fresh"
    failed = last_run is not None and last_run.status == IngestRun.Status.FAILED
    if not account.enabled:
        why = failure_text(last_run) if failed else "switched off by an admin"
        state, label, detail = (
            "disabled",
            "disabled",
            f"Not pulled: {why}. Replace its key and enable it in its connection settings.",
        )
    elif failed:
        state, label, detail = "error", "error", failure_text(last_run)
    elif latest_day is None:
        state, label = "never", "no data yet"
        detail = (
            "No run has brought data yet."
            if last_run
            else ("Waiting for its first pull." if account.is_api else "No file imported yet.")
        )
    elif freshness != "fresh":
        state, label, detail = (
            "stale",
            freshness,
            f"Newest data is for {latest_day:%Y-%m-%d}; data is late after {STALE_AFTER_DAYS} days.",
        )
    else:
        state, label, detail = "ok", "ok", f"Data up to {latest_day:%Y-%m-%d}."
    return AccountStatus(account, state, label, detail, freshness, latest_day, lag, last_run)


def account_statuses(today: dt.date, *, accounts=None) -> list[AccountStatus]:
    """Every account's status (or those of `accounts`, a queryset), in the queryset's order (by name)."""
    # One index probe per account on (account, day) and one on (account, -created_at): no scan of the rollup or runs.
    newest = DailySpend.objects.filter(account=OuterRef("pk")).order_by("-day").values("day")[:1]
    last = (
        deciding_runs(IngestRun.objects.filter(account=OuterRef("pk"))).order_by("-created_at", "-id").values("id")[:1]
    )
    queryset = Account.objects.all() if accounts is None else accounts
    rows = list(queryset.select_related("provider").annotate(latest_day=Subquery(newest), last_run_id=Subquery(last)))
    runs = IngestRun.objects.in_bulk([a.last_run_id for a in rows if a.last_run_id])
    return [status_of(account=a, latest_day=a.latest_day, last_run=runs.get(a.last_run_id), today=today) for a in rows]


def account_status(account: Account, today: dt.date) -> AccountStatus:
    (status,) = account_statuses(today, accounts=Account.objects.filter(pk=account.pk))
    return status


def by_urgency(statuses: list[AccountStatus]) -> list[AccountStatus]:
    """What needs someone first: disabled, failing, empty, late, then the healthy ones; by name within each."""
    return sorted(statuses, key=lambda s: (URGENCY[s.state], s.account.name))
