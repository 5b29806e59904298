"""`unpriced_usage`: a provider/model seen with usage of unknown cost, once per model ever."""

import datetime as dt

from django.db.models import Min

from finops.alerts.services.spend_changes import SpendChange
from finops.core import display
from finops.models import AlertEvent, AlertKind, DailySpend
from finops.spend.models.usage import CostBasis
from finops.spend.selectors.spend import TOKEN_SUM

from .events import event_raise

KINDS = (AlertKind.UNPRICED_USAGE,)

# Raised once per model ever: every event of this kind has this period_start, so the unique constraint holds
# "once" even when a later import finds the model unpriced on an earlier day. The first day seen is in details.
UNPRICED_PERIOD = dt.date(2000, 1, 1)
UNPRICED_RECENT_DAYS = 2  # the beat looks at today and the 2 days before


def evaluate(*, today: dt.date, change: SpendChange | None = None) -> list[AlertEvent]:
    """One event per provider/model the first time it is seen with unpriced usage (cost basis `unpriced`)."""
    rows = DailySpend.objects.filter(cost_basis=CostBasis.UNPRICED)
    if change is None:
        rows = rows.filter(day__gte=today - dt.timedelta(days=UNPRICED_RECENT_DAYS))
    else:
        rows = rows.filter(day__in=change.days)
        rows = rows.filter(account_id__in=change.account_ids) if change.account_ids else rows
    found: dict[tuple[str, str], dict] = {}
    grouped = (
        rows.values("provider__slug", "provider__name", "model", "account__name")
        .annotate(tokens=TOKEN_SUM, first_day=Min("day"))
        .order_by("provider__slug", "model", "account__name")
    )
    for row in grouped:
        seen = found.setdefault(
            (row["provider__slug"], row["model"]),
            {
                "provider": row["provider__slug"],
                "provider_name": row["provider__name"],
                "model": row["model"],
                "tokens": 0,
                "accounts": [],
                "first_day": row["first_day"],
            },
        )
        seen["tokens"] += row["tokens"] or 0
        seen["accounts"].append(row["account__name"])
        seen["first_day"] = min(seen["first_day"], row["first_day"])
    raised = []
    for (slug, model), seen in found.items():
        first_day = seen["first_day"].isoformat()
        title = (
            f"{display.model_name(model)} ({seen['provider_name']}) has usage with no known price "
            f"since {display.day(seen['first_day'])}: {display.tokens_compact(seen['tokens'])} tokens of unknown cost"
        )
        event = event_raise(
            kind=AlertKind.UNPRICED_USAGE,
            subject=f"model:{slug}/{model}"[:255],
            period_start=UNPRICED_PERIOD,
            title=title[:300],
            details={**seen, "first_day": first_day},
        )
        raised += [event] if event else []
    return raised
