"""The daily rollup, rebuilt set-based for exactly the days a write touched (docs/architecture.md invariant 7)."""

import datetime as dt

from django.db import connection, transaction
from django.db.models import Count, F, Sum
from django.db.models.functions import TruncDate

from finops.models import (
    DailyPerformance,
    DailySpend,
    LineSignature,
    MonthlyPerformance,
    MonthlySpend,
    TeamDailySpend,
    UsageLine,
)
from finops.performance.services.performance_rollup import performance_rollup_rebuild

from .monthly_rollup import monthly_rollup_rebuild
from .rollup_rows import aggregate_settings, day_chunks, insert_select, limited
from .spend_delta import spend_delta_apply
from .team_rollup import team_rollup_rebuild

# Rollup dimension -> the usage-line column it is read from (workload and team: the line's signature's);
# the order is the INSERT's column order.
DIMENSIONS = {
    "account_id": F("account_id"),
    "provider_id": F("provider_id"),
    "model": F("model"),
    "workload_id": F("signature__workload_id"),
    "team_id": F("signature__team_id"),
    "currency": F("currency"),
    "cost_basis": F("cost_basis"),
    "charge_category": F("charge_category"),
}
MEASURES = {
    "input_tokens": Sum("input_tokens"),
    "cached_input_tokens": Sum("cached_input_tokens"),
    "cache_write_tokens": Sum("cache_write_tokens"),
    "output_tokens": Sum("output_tokens"),
    "requests": Sum("requests"),
    "cost": Sum("cost"),
    "reporting_cost": Sum("reporting_cost"),
    "line_count": Count("id"),
}


def _day_bounds(first: dt.date, last: dt.date) -> tuple[dt.datetime, dt.datetime]:
    start = dt.datetime.combine(first, dt.time(), tzinfo=dt.UTC)
    end = dt.datetime.combine(last + dt.timedelta(days=1), dt.time(), tzinfo=dt.UTC)
    return start, end


@transaction.atomic
def rollup_rebuild(
    *,
    days: set[dt.date],
    account_ids: list[int] | None = None,
    workload_ids: set | None = None,
    lines_written: bool = True,
) -> None:
    """Replace the rollup rows of exactly `days` with fresh sums of the raw lines.

    One INSERT … SELECT … GROUP BY per run of consecutive days (at most CHUNK_DAYS each), compiled by the
    ORM so it runs on Postgres and on the demo's SQLite. `workload_ids` (None standing for unattributed)
    limits the rebuild to those workloads' rows: workload is a rollup dimension, so after a re-attribution
    only the rows of workloads that lost or gained lines differ from the raw lines. `lines_written` False: no
    line of those days was written, only signatures moved (a re-attribution), so the performance rollup regroups
    its signature-day rows instead of merging the lines' latency again (finops.performance.services.performance_rollup).
    """
    if workload_ids is not None and not workload_ids:
        return
    # Latency moves with spend: the same days, accounts and workloads (issue 12). It takes the same settings itself:
    # its join of the new lines to their signatures was a nested loop too (a gateway log of 116k lines and 151
    # signatures: 17M rows compared, 2.5 s of Postgres CPU against 0.64 s hashed; issue 23). An import of timed
    # lines on Postgres gets its daily spend rows from the same pass over the lines as its daily performance rows
    # (finops.performance.services.daily_pass: one scan of the lines and one hash of their signatures, not two).
    spend_written = performance_rollup_rebuild(
        days=days, account_ids=account_ids, workload_ids=workload_ids, lines_written=lines_written, daily_spend=True
    )
    if not spend_written:
        with aggregate_settings():  # finops.spend.services.rollup_rows: a rebuild's planner settings, restored after
            for first, last in day_chunks(days):
                _rebuild_range(first, last, account_ids, workload_ids)
    # The months of those days, re-summed from the daily rows just written, in this transaction.
    monthly_rollup_rebuild(days=days, account_ids=account_ids, workload_ids=workload_ids)
    # The overview's rollup of those days (TeamDailySpend), whole days: it has neither accounts nor workloads.
    team_rollup_rebuild(days=days)


def rollup_moved(*, days: set[dt.date], workload_ids: set) -> None:
    """The rollups after signatures moved and no line was written (Postgres: a re-attribution, a workload changing
    team), inside the move's transaction: what `rollup_rebuild(days=…, workload_ids=…, lines_written=False)` would
    write, proportional to the lines that moved. The daily, monthly and team-daily spend rows change by the moved
    lines' sums (finops.spend.services.spend_delta, kept by its `signatures_move`), the performance rollup regroups
    its signature-day rows. A table derived from the spend rollup that `rollup_rebuild` keeps must be kept here too
    (the overview's TeamDailySpend is, by spend_delta_apply)."""
    spend_delta_apply()
    performance_rollup_rebuild(days=days, workload_ids=workload_ids, lines_written=False)


def _rebuild_range(
    first: dt.date, last: dt.date, account_ids: list[int] | None, workload_ids: set | None = None
) -> None:
    start, end = _day_bounds(first, last)
    limits = {"account_ids": account_ids, "workload_ids": workload_ids}
    limited(DailySpend.objects.filter(day__gte=first, day__lte=last), **limits).delete()
    lines = limited(
        UsageLine.objects.filter(period_start__gte=start, period_start__lt=end),
        **limits,
        workload_field="signature__workload_id",
    )
    # Aliased as `<dimension>_of`: a line's own columns cannot be re-annotated under their names.
    grouped = (
        lines.annotate(
            day=TruncDate("period_start"), **{f"{name}_of": expression for name, expression in DIMENSIONS.items()}
        )
        .values("day", *(f"{name}_of" for name in DIMENSIONS))
        .annotate(**MEASURES)
        .values_list("day", *(f"{name}_of" for name in DIMENSIONS), *MEASURES)
        .order_by()
    )
    insert_select(DailySpend, ("day", *DIMENSIONS, *MEASURES), grouped)


def rollups_vacuum() -> None:
    """VACUUM (ANALYZE) the rollups and the line signatures, after a change that rewrote a large share of them
    (a re-attribution rewrites the rows of every workload that moved: about 40 % of DailySpend on the 10M-line
    bench when they were rebuilt; ~28 % deleted, updated or inserted since they change by difference). Until
    their dead rows are gone and their statistics fresh, pages read them slower (the team page as an admin:
    117 ms against 24 ms), and autovacuum may take a while to come round, or be off (it is on
    this project's CI machine). The performance rollups too (issue 23): their rows are wide (latency cells), and
    the dead ones left by a re-attribution made the scorecard's read of the batch workloads' hours touch 22k
    buffers for 6.6k rows. VACUUM cannot run inside a transaction: inside one (a test, a caller's
    atomic block) and on SQLite this does nothing."""
    if connection.vendor != "postgresql" or connection.in_atomic_block:
        return
    rewritten = (DailySpend, MonthlySpend, TeamDailySpend, DailyPerformance, MonthlyPerformance, LineSignature)
    tables = ", ".join(connection.ops.quote_name(m._meta.db_table) for m in rewritten)
    with connection.cursor() as cursor:
        cursor.execute(f"VACUUM (ANALYZE) {tables}")
