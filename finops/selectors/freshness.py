"""Data freshness per source: the newest day each account has data for, and whether that is late."""

import datetime as dt

from django.db.models import OuterRef, Subquery

from finops.models import Account, DailySpend

STALE_AFTER_DAYS = 2  # providers publish yesterday's usage within a day; two days without data is late


def source_freshness(today: dt.date) -> list[dict]:
    # One index probe per account on (account, day), not a GROUP BY over every rollup row.
    newest = DailySpend.objects.filter(account=OuterRef("pk")).order_by("-day").values("day")[:1]
    rows = []
    for account in Account.objects.select_related("provider").annotate(latest_day=Subquery(newest)):
        day = account.latest_day
        lag = (today - day).days if day else None
        rows.append({"account": account, "latest_day": day, "lag_days": lag, "stale": lag is None or lag > STALE_AFTER_DAYS})
    return sorted(rows, key=lambda r: (not r["stale"], r["account"].name))
