"""The one "spend changed" signal (docs/architecture.md data flow; issue 10).

Every path that changes spend — an ingest run, a re-attribution after a rule change, `apply_config`, a workload
moved to another team — calls `spend_changed(...)` once, inside its write transaction, after rebuilding the
rollups. Nothing happens unless that transaction commits; then an alert evaluation is queued (inline when there
is no broker, like every task here) for the days and scopes that changed. A beat entry evaluates everything on a
schedule too, so a change made while no worker ran is not missed.
"""

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.db import transaction

from finops import tasks  # services import tasks; tasks import services inside their bodies (HackSoft)


@dataclass(frozen=True)
class SpendChange:
    days: tuple[dt.date, ...]
    reason: str  # "ingest", "reattribution", "config", "workload moved"
    account_ids: tuple[int, ...] = field(default=())
    workload_ids: tuple[int, ...] = field(default=())
    team_ids: tuple[int, ...] = field(default=())

    def as_task_kwargs(self) -> dict:
        return {
            "days": [d.isoformat() for d in self.days],
            "reason": self.reason,
            "account_ids": list(self.account_ids),
            "workload_ids": list(self.workload_ids),
            "team_ids": list(self.team_ids),
        }

    @classmethod
    def from_task_kwargs(cls, *, days, reason, account_ids=(), workload_ids=(), team_ids=()) -> "SpendChange":
        return cls(
            days=tuple(dt.date.fromisoformat(d) for d in days),
            reason=reason,
            account_ids=tuple(account_ids),
            workload_ids=tuple(workload_ids),
            team_ids=tuple(team_ids),
        )


def spend_changed(
    *,
    days: Iterable[dt.date],
    reason: str,
    account_ids: Iterable[int] = (),
    workload_ids: Iterable[int | None] = (),
    team_ids: Iterable[int | None] = (),
) -> SpendChange | None:
    """Say that spend on `days` changed for these accounts / workloads / teams (empty: unknown, evaluate all).
    Call inside the transaction that changed it; the evaluation is queued once that transaction commits."""
    days = tuple(sorted(set(days)))
    if not days:
        return None
    change = SpendChange(
        days=days,
        reason=reason,
        account_ids=tuple(sorted({a for a in account_ids if a is not None})),
        workload_ids=tuple(sorted({w for w in workload_ids if w is not None})),
        team_ids=tuple(sorted({t for t in team_ids if t is not None})),
    )

    def queue():
        tasks.evaluate_alerts.delay(**change.as_task_kwargs())

    # robust: the change has committed whatever happens next; an evaluation that fails to queue (or, inline, to
    # run) is logged and left to the beat's catch-up rather than turning a committed import into an error.
    transaction.on_commit(queue, robust=True)
    return change
