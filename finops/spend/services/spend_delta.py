"""A re-attribution's spend rollup by difference (Postgres; issue 23): proportional to the lines that moved.

A re-attribution moves signatures, never lines: the lines of a moved signature leave the rollup rows of its old
workload and team and join those of its new ones, every other dimension unchanged. So the moved lines are read
once, before their signatures move, and summed by day and every rollup dimension with both the old and the new
workload and team (`signatures_move`); each rollup row of the moved workloads then changes by exactly those sums:
subtracted from the old workload's row, added to the new one's (`spend_delta_apply`). Rebuilding the moved
workloads' rows instead read every line of their days again (the whole year on the 10M-line bench: ~9 s for 2M
lines moved).

Exact: tokens, requests and line counts are integers; cost and reporting cost are numeric, and NULL exactly when
the row's cost basis is unpriced (a line's cost is NULL iff it is unpriced, and the basis is a dimension), so
NULL + NULL stays NULL and a priced row adds numerics. A row left with no line is deleted, as a rebuild would not
have written it; a new combination is inserted. The monthly rollup changes by the same sums grouped by month, so it
still equals the daily rollup summed by month. tests/test_attribution*.py hold the result to the raw lines.

The demo's SQLite keeps the rebuild (finops.spend.services.attribution): its data is small, and its decimals are
not exact numerics to add and subtract.
"""

from contextlib import nullcontext

from django.db import connection
from django.db.models import QuerySet

from finops.models import DailySpend, LineSignature, MonthlySpend, TeamDailySpend, UsageLine

from .monthly_rollup import MEASURES as MONTHLY_MEASURES
from .rollup_rows import aggregate_settings
from .team_rollup import DIMENSIONS as TEAM_DIMENSIONS
from .team_rollup import MEASURES as TEAM_SUMS

MOVES = "reattribution_moves"
DELTA = "reattribution_delta"
NET = "reattribution_net"
# The rollup's measures (line_count a count of lines in the daily rollup, a sum of them here).
SUMS = MONTHLY_MEASURES
# Dimensions besides the period, workload and team: a line's own columns, unchanged by a move.
FIXED = ("account_id", "provider_id", "model", "currency", "cost_basis", "charge_category")
# The overview's rollup (TeamDailySpend): its dimensions but the team, a subset of FIXED.
TEAM_FIXED = tuple(name for name in TEAM_DIMENSIONS if name != "team_id")
# The moves' owner columns (w, t: workload and team before or after, -1 for none) and the rollup columns they are.
OWNER_COLUMNS = {"w": "workload_id", "t": "team_id"}


def signatures_move(changed: QuerySet) -> dict:
    """Move the signatures of `changed` (annotated with cur_w, new_w, cur_t, new_t: workload and team before and
    after, -1 for none) and keep their lines' sums for `spend_delta_apply`, in temporary tables dropped at commit.

    Returns {"moves": [(cur_w, new_w, cur_t, new_t)…] distinct, "per_day": {day: lines moved}}. One scan of the
    lines (a hash join on the moved signatures), and an UPDATE joined to the moves rather than the rules' CASE
    evaluated once more."""
    select, params = changed.values_list("id", "cur_w", "new_w", "cur_t", "new_t").query.sql_with_params()
    lines = UsageLine._meta.db_table
    sums = ", ".join(f"sum({name}) AS {name}" for name in SUMS if name != "line_count")
    with connection.cursor() as cursor:
        for table in (MOVES, DELTA, NET):
            cursor.execute(f"DROP TABLE IF EXISTS {table}")
        cursor.execute(
            f"CREATE TEMPORARY TABLE {MOVES} (id, cur_w, new_w, cur_t, new_t) ON COMMIT DROP AS {select}", params
        )
        cursor.execute(f"SELECT DISTINCT cur_w, new_w, cur_t, new_t FROM {MOVES}")
        moves = cursor.fetchall()
        if not moves:
            return {"moves": [], "per_day": {}}
        cursor.execute(f"ANALYZE {MOVES}")  # a temporary table has no statistics: the join below hashes it
        cursor.execute(f"SELECT array_agg(id) FROM {MOVES}")
        (moved_ids,) = cursor.fetchone()
    # The rebuild's planner settings (hash joins and aggregates in memory): see `_apply` for what a nested loop cost.
    # The lines are scanned by two workers (`parallel_scan`), each keeping the moved signatures' lines: a worker
    # cannot read the temporary table, so they filter on the moved ids as a constant array (hashed; an array read
    # from the table would be a parameter, compared element by element: 21 s), and the join runs in this process.
    with aggregate_settings(parallel_scan=True), connection.cursor() as cursor:
        # The day as the rollup computes it (TruncDate in UTC); the line's own account, provider and model.
        cursor.execute(
            f"""CREATE TEMPORARY TABLE {DELTA} ON COMMIT DROP AS
                SELECT (l.period_start AT TIME ZONE 'UTC')::date AS day, {", ".join(f"l.{c}" for c in FIXED)},
                       m.cur_w, m.new_w, m.cur_t, m.new_t, {sums}, count(*) AS line_count
                  FROM {lines} AS l JOIN {MOVES} AS m ON m.id = l.signature_id
                 WHERE l.signature_id = ANY(%s::bigint[])
                 GROUP BY 1, {", ".join(f"l.{c}" for c in FIXED)}, m.cur_w, m.new_w, m.cur_t, m.new_t""",
            [moved_ids],
        )
        cursor.execute(f"SELECT day, sum(line_count) FROM {DELTA} GROUP BY day")
        per_day = {day: int(n) for day, n in cursor.fetchall()}
        cursor.execute(
            f"""UPDATE {LineSignature._meta.db_table} AS s
                   SET workload_id = nullif(m.new_w, -1), team_id = nullif(m.new_t, -1)
                  FROM {MOVES} AS m WHERE s.id = m.id"""
        )
    return {"moves": moves, "per_day": per_day}


def spend_delta_apply() -> None:
    """Change the daily, monthly and team-daily spend rows by the moved lines' sums kept by `signatures_move`.

    With the rebuild's planner settings: the planner multiplies the nine key columns' selectivities and expects one
    matching row, so it looked each of 112k net rows up through an index (5.1 s on the 10M-line bench) and sorted
    both sides to disk for the others, where hashing the 394k daily rows takes a fraction of that.

    The overview's rollup (TeamDailySpend: no account, model, currency nor workload) changes only where a move
    crosses teams: a line moving between two workloads of one team leaves its team's sums as they were. Re-summing
    every moved day from DailySpend instead (finops.spend.services.team_rollup) read the whole year's 450k daily
    rows to rewrite 80k team rows, 1.5–1.9 s of a 10M-line bench's re-attribution."""
    with aggregate_settings():
        _apply(DailySpend, "day", "day", sorted_groups=True)
        _apply(MonthlySpend, "month", "date_trunc('month', day)::date")
        _apply(TeamDailySpend, "day", "day", fixed=TEAM_FIXED, sums=TEAM_SUMS, by_workload=False)


def _apply(
    model,
    period: str,
    period_of_day: str,
    *,
    fixed=FIXED,
    sums=SUMS,
    by_workload: bool = True,
    sorted_groups: bool = False,
) -> None:
    """The net change per rollup row (the old side subtracted, the new side added, summed per key), then: rows left
    with no line deleted, the others updated in place (only measures change: a HOT update where the page has room),
    and the combinations no row holds yet inserted. A key can be one move's old side and another's new (two signatures
    swapping workloads): its net line count may be zero with its cost changed, so every existing row is updated.

    `by_workload` False: a rollup without the workload dimension (TeamDailySpend), which only the moves between
    teams change (within a team the two sides cancel exactly; they are left out). `sorted_groups`: the net rows are
    grouped by sorting (finops.spend.services.rollup_rows.aggregate_settings), for the daily rollup, whose net rows
    are nearly all groups of one; the monthly rollup's fold many days into a group and hash faster (0.4 against
    0.6–0.8 s on the 10M-line bench)."""
    table = model._meta.db_table
    owners = ("w", "t") if by_workload else ("t",)
    keys = (period, *fixed, *owners)
    negated = ", ".join(f"-{name} AS {name}" for name in sums)
    plain = ", ".join(sums)
    net_sums = ", ".join(f"sum({name}) AS {name}" for name in sums)
    columns = ", ".join(fixed)
    old_side = ", ".join(f"cur_{owner} AS {owner}" for owner in owners)
    new_side = ", ".join(f"new_{owner} AS {owner}" for owner in owners)
    crossing = "" if by_workload else " WHERE cur_t <> new_t"
    # A row's key, NULL workload or team compared as -1 (the moves' own way): a hash join, not IS NOT DISTINCT FROM.
    match = " AND ".join(
        (
            f"d.{period} = n.{period}",
            *(f"d.{c} = n.{c}" for c in fixed),
            *(f"coalesce(d.{OWNER_COLUMNS[owner]}, -1) = n.{owner}" for owner in owners),
        )
    )
    with connection.cursor() as cursor:
        cursor.execute(f"DROP TABLE IF EXISTS {NET}")
    with aggregate_settings(sorted_groups=True) if sorted_groups else nullcontext(), connection.cursor() as cursor:
        cursor.execute(
            f"""CREATE TEMPORARY TABLE {NET} ON COMMIT DROP AS
                SELECT {", ".join(keys)}, {net_sums} FROM (
                    SELECT {period_of_day} AS {period}, {columns}, {old_side}, {negated} FROM {DELTA}{crossing}
                    UNION ALL
                    SELECT {period_of_day} AS {period}, {columns}, {new_side}, {plain} FROM {DELTA}{crossing}
                ) AS moved GROUP BY {", ".join(keys)}"""
        )
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {NET}")
        cursor.execute(f"DELETE FROM {table} AS d USING {NET} AS n WHERE {match} AND d.line_count + n.line_count = 0")
        cursor.execute(
            f"UPDATE {table} AS d SET {', '.join(f'{name} = d.{name} + n.{name}' for name in sums)} "
            f"FROM {NET} AS n WHERE {match}"
        )
        # New combinations only gain lines; a row just deleted lost them all (a negative net), so it is not
        # inserted again.
        cursor.execute(
            f"""INSERT INTO {table} ({period}, {columns}, {", ".join(OWNER_COLUMNS[o] for o in owners)}, {plain})
                SELECT n.{period}, {", ".join(f"n.{c}" for c in fixed)},
                       {", ".join(f"nullif(n.{owner}, -1)" for owner in owners)},
                       {", ".join(f"n.{name}" for name in sums)}
                  FROM {NET} AS n
                 WHERE n.line_count > 0 AND NOT EXISTS (SELECT 1 FROM {table} AS d WHERE {match})"""
        )
