"""Data freshness per source, as rows for tables. The rules live in account_status.py, so the overview,
the Sources list and the account page say the same thing about an account."""

import datetime as dt

from .account_status import STALE_AFTER_DAYS, account_statuses, by_urgency

__all__ = ["STALE_AFTER_DAYS", "source_freshness"]


def source_freshness(today: dt.date) -> list[dict]:
    """One row per account, the ones needing attention first: its status, newest day and days behind."""
    return [
        {
            "account": s.account,
            "status": s,
            "state": s.label,
            "detail": s.detail,
            "latest_day": s.latest_day,
            "lag_days": s.lag_days,
            "stale": s.stale,
        }
        for s in by_urgency(account_statuses(today))
    ]
