"""Data freshness per source: the newest day each account has data for, and whether that is late."""

import datetime as dt

from django.db.models import Max

from finops.models import Account, DailySpend

STALE_AFTER_DAYS = 2  # providers publish yesterday's usage within a day; two days without data is late


def source_freshness(today: dt.date) -> list[dict]:
    latest = dict(DailySpend.objects.values_list("account_id").annotate(day=Max("day")).order_by())
    rows = []
    for account in Account.objects.select_related("provider"):
        day = latest.get(account.id)
        lag = (today - day).days if day else None
        rows.append({"account": account, "latest_day": day, "lag_days": lag, "stale": lag is None or lag > STALE_AFTER_DAYS})
    return sorted(rows, key=lambda r: (not r["stale"], r["account"].name))
