"""Which window a scheduled pull reads (issue 3): restatements land because every pull re-reads the past.

- a newly connected account (never synced successfully) backfills BACKFILL_DAYS;
- the first pull of each UTC day re-reads the whole month to date (and at least the lookback);
- every other pull re-reads the last LOOKBACK_DAYS.
Windows are whole UTC days, [start, end) with `end` = tomorrow 00:00 UTC so today's partial usage is read.
Long windows are split into chunks the provider APIs accept, one run (and task) per chunk.
"""

import datetime as dt

from finops.core.reporting_period import EARLIEST
from finops.sources.models import LOOKBACK_DAYS

BACKFILL_DAYS = 90
CHUNK_DAYS = 31  # OpenAI's daily usage pages hold at most 31 buckets
# The longest window one sync may ask for: a year and a month of restatements, 13 runs. A window of thousands of
# years once created 79,157 runs from one request.
MAX_SYNC_DAYS = 400


class WindowRefused(ValueError):
    """A sync window no provider can answer sensibly; the message says which bound it breaks."""


def window_check(start: dt.datetime, end: dt.datetime, *, now: dt.datetime) -> None:
    """Refuse a requested sync window that is empty, starts before the product's first day (2000-01-01, as every
    reported day: finops.core.reporting_period), is longer than MAX_SYNC_DAYS, or ends after tomorrow 00:00 UTC (the end
    of today's partial usage, as the scheduled window reads it). The one check behind the `sync` command, the
    "Sync now" page and the API's syncs (ingest.services)."""
    if end <= start:
        raise WindowRefused("the window is empty: end must be after start (end is exclusive)")
    if start < _midnight(EARLIEST):
        raise WindowRefused(f"the window starts {start:%Y-%m-%d}; the earliest day is {EARLIEST} (years 2000–2099)")
    latest_end = _midnight(now.astimezone(dt.UTC).date() + dt.timedelta(days=1))
    if end > latest_end:
        raise WindowRefused(
            f"the window ends {end:%Y-%m-%d}, in the future; the latest end is {latest_end:%Y-%m-%d} "
            "(exclusive: today's usage so far)"
        )
    if end - start > dt.timedelta(days=MAX_SYNC_DAYS):
        raise WindowRefused(
            f"the window is {(end - start).days:,} days long; one sync reads at most {MAX_SYNC_DAYS} days — split it"
        )


def _midnight(day: dt.date) -> dt.datetime:
    return dt.datetime.combine(day, dt.time(), tzinfo=dt.UTC)


def scheduled_window(*, now: dt.datetime, last_success_at: dt.datetime | None) -> tuple[dt.datetime, dt.datetime]:
    today = now.astimezone(dt.UTC).date()
    end = _midnight(today + dt.timedelta(days=1))
    if last_success_at is None:
        return end - dt.timedelta(days=BACKFILL_DAYS), end
    lookback_start = end - dt.timedelta(days=LOOKBACK_DAYS)
    if last_success_at.astimezone(dt.UTC).date() < today:
        return min(_midnight(today.replace(day=1)), lookback_start), end
    return lookback_start, end


def chunks(start: dt.datetime, end: dt.datetime, days: int = CHUNK_DAYS) -> list[tuple[dt.datetime, dt.datetime]]:
    """[start, end) cut into consecutive pieces of at most `days` days, oldest first."""
    pieces, cursor = [], start
    while cursor < end:
        piece_end = min(cursor + dt.timedelta(days=days), end)
        pieces.append((cursor, piece_end))
        cursor = piece_end
    return pieces
