"""Retention of the raw usage lines: lines older than FINOPS_USAGE_RETENTION_MONTHS whole months are deleted.

What stays: everything derived from them — the daily and monthly spend rollups, the performance rollups, reports,
snapshots, alert events — so every page, report and total reads the same after a prune (they read the rollups,
docs/architecture.md). What goes: the drill-down to single lines of those months (Explore's line view shows none there).

The cut-off is the first instant of a UTC month: a month is kept whole or pruned whole, so no day ever has half its
lines (a later rollup rebuild of a day — a re-attribution, a re-import — sums whole days or nothing). With the
default 25, the current month and the 25 whole months before it are kept.

How, without holding the table: one UTC day at a time from the oldest line, each day deleted in batches of at most
`batch_size` lines, each batch its own short transaction (a DELETE of ids picked from that day's period range,
which the BRIN index on (account, period_start) finds without scanning the table). Each batch holds only row
locks on the lines it deletes, for milliseconds: imports, pages and re-attributions go on meanwhile. A statement
waiting more than LOCK_TIMEOUT for a lock gives up and the prune stops, to go on at its next run. Idempotent: a
second run finds nothing older than the cut-off. Two at once (two beats, a command beside the beat): the second
finds the advisory lock taken and does nothing.
"""

import datetime as dt
import logging
from dataclasses import dataclass

from django.conf import settings
from django.db import OperationalError, connection, transaction
from django.db.models import Min
from django.utils import timezone

from finops.core.months import month_of
from finops.models import UsageLine
from finops.performance.services.performance_rollup import lines_alone_keep

log = logging.getLogger(__name__)

BATCH_SIZE = 5_000
LOCK_TIMEOUT = "5s"
PRUNE_LOCK = (7304, 0)  # pg advisory lock: one prune at a time


@dataclass
class PruneResult:
    cutoff: dt.datetime | None  # lines starting before it are pruned; None: retention is off (0 months)
    deleted: int = 0
    batches: int = 0
    skipped: bool = False  # another prune was running


def retention_cutoff(*, now: dt.datetime, months: int) -> dt.datetime:
    """The first instant of the month `months` whole months before now's month (UTC)."""
    first = month_of(now.astimezone(dt.UTC).date())
    index = first.year * 12 + first.month - 1 - months
    return dt.datetime(index // 12, index % 12 + 1, 1, tzinfo=dt.UTC)


def usage_lines_prune(
    *, now: dt.datetime | None = None, months: int | None = None, batch_size: int = BATCH_SIZE
) -> PruneResult:
    """Delete usage lines that start before the retention cut-off, day by day in batches; returns what it did."""
    months = settings.FINOPS_USAGE_RETENTION_MONTHS if months is None else months
    if months <= 0:
        return PruneResult(cutoff=None)
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    cutoff = retention_cutoff(now=now or timezone.now(), months=months)
    result = PruneResult(cutoff=cutoff)
    with _prune_lock() as mine:
        if not mine:
            log.info("another prune of usage lines is running; this one does nothing")
            result.skipped = True
            return result
        oldest = UsageLine.objects.filter(period_start__lt=cutoff).aggregate(first=Min("period_start"))["first"]
        day = oldest.astimezone(dt.UTC).replace(hour=0, minute=0, second=0, microsecond=0) if oldest else cutoff
        while day < cutoff:
            end = min(day + dt.timedelta(days=1), cutoff)
            lines_alone_keep(day=day.date())  # their performance, kept as signature-day rows first
            while True:
                deleted = _delete_batch(day, end, batch_size)
                if not deleted:
                    break
                result.deleted += deleted
                result.batches += 1
            day = end
    if result.deleted:
        log.info("pruned %s usage lines older than %s in %s batches", result.deleted, cutoff.date(), result.batches)
    return result


def _delete_batch(start: dt.datetime, end: dt.datetime, batch_size: int) -> int:
    """At most batch_size lines starting in [start, end), in a transaction of their own."""
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL lock_timeout = %s", [LOCK_TIMEOUT])
        ids = UsageLine.objects.filter(period_start__gte=start, period_start__lt=end).values("id")[:batch_size]
        # Nothing references a usage line (ingest/writing.py): Django issues this one DELETE, no cascade.
        return UsageLine.objects.filter(id__in=list(ids.values_list("id", flat=True))).delete()[0]


class _prune_lock:
    """A session-level advisory lock for the whole prune (its batches commit one by one, so not a transaction one)."""

    def __enter__(self) -> bool:
        self.held = True
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", list(PRUNE_LOCK))
                self.held = cursor.fetchone()[0]
        return self.held

    def __exit__(self, *exc):
        if self.held and connection.vendor == "postgresql":
            try:
                with connection.cursor() as cursor:
                    cursor.execute("SELECT pg_advisory_unlock(%s, %s)", list(PRUNE_LOCK))
            except OperationalError:
                pass  # the connection is gone, and the lock with it
