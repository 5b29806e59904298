"""What the daily and the monthly rebuild share: narrowing rows to the accounts and workloads a rebuild is
limited to, and writing a grouped query's rows in one INSERT … SELECT compiled by the ORM (so it runs on
Postgres and on the demo's SQLite alike)."""

import datetime as dt

from django.db import connection
from django.db.models import Model, Q, QuerySet


def of_workloads(field: str, workload_ids: set) -> Q:
    """Rows of these workloads (`field` names the workload); None among them stands for unattributed."""
    only = Q(**{f"{field}__in": [w for w in workload_ids if w is not None]})
    return only | Q(**{f"{field}__isnull": True}) if None in workload_ids else only


def limited(
    rows: QuerySet, *, account_ids: list[int] | None, workload_ids: set | None, workload_field: str = "workload_id"
) -> QuerySet:
    """`rows` of these accounts and workloads only (None: no limit)."""
    if account_ids is not None:
        rows = rows.filter(account_id__in=account_ids)
    if workload_ids is not None:
        rows = rows.filter(of_workloads(workload_field, workload_ids))
    return rows


def insert_select(model: type[Model], columns: tuple[str, ...], rows: QuerySet) -> None:
    """INSERT INTO the model's table (`columns`) the rows of `rows`, a values_list in that column order."""
    select_sql, params = rows.query.sql_with_params()
    names = ", ".join(connection.ops.quote_name(c) for c in columns)
    with connection.cursor() as cursor:
        cursor.execute(f"INSERT INTO {connection.ops.quote_name(model._meta.db_table)} ({names}) {select_sql}", params)


def day_ranges(days: set[dt.date]) -> list[tuple[dt.date, dt.date]]:
    """Consecutive days grouped into inclusive (first, last) ranges, oldest first."""
    ranges: list[list[dt.date]] = []
    for day in sorted(days):
        if ranges and day == ranges[-1][1] + dt.timedelta(days=1):
            ranges[-1][1] = day
        else:
            ranges.append([day, day])
    return [(first, last) for first, last in ranges]


# A run of consecutive days is rebuilt this many days at a time: a month of a large organisation's groups fits
# in the aggregate's memory (below), where a whole year's would spill to disk or fall back to a sort.
CHUNK_DAYS = 31
AGGREGATE_WORK_MEM = "128MB"


def day_chunks(days: set[dt.date], size: int = CHUNK_DAYS) -> list[tuple[dt.date, dt.date]]:
    """Runs of consecutive days, cut into pieces of at most `size` days: what one INSERT … SELECT rebuilds."""
    chunks = []
    for first, last in day_ranges(days):
        while first <= last:
            chunk_last = min(last, first + dt.timedelta(days=size - 1))
            chunks.append((first, chunk_last))
            first = chunk_last + dt.timedelta(days=1)
    return chunks


class aggregate_settings:
    """Postgres, for a rebuild only (restored after it; SET LOCAL would last to the end of the caller's
    transaction): a hash aggregate's worth of work_mem, no sort and no nested loop, and no JIT. Lines an import has
    just written have no statistics yet, so the planner expects one row: it sorted them all on disk (4 s for 1M
    lines) where hashing them into a few hundred groups takes a fraction of that, and it joined them to their
    signatures by scanning the signature table once per line (72 s for 1M lines) where a hash join of the
    few thousand signatures takes well under a second. JIT off here too, whatever DB_JIT says (finops/settings.py): the
    disabled plan shapes price a statement far above jit_above_cost, and compiling a performance rollup statement
    with inlining and optimisation took 0.4–0.5 s of CPU on the 10M-line page bench, for a query that runs ~3 s."""

    SETTINGS = {"work_mem": AGGREGATE_WORK_MEM, "enable_sort": "off", "enable_nestloop": "off", "jit": "off"}
    # `parallel_scan`: a statement that scans every usage line to keep a fifth of them (a re-attribution's moved
    # lines, finops.spend.services.spend_delta) splits the scan and its filter over two workers, whatever
    # DB_PARALLEL_WORKERS says for pages (finops/settings.py: 0 by default). The planner prices each row a worker
    # hands back at 0.1 and kept the scan serial for 1.9M rows of 10M; at 0.01 it splits it. With the filter the
    # workers can apply (spend_delta: the moved ids as a constant array) the statement went 4.8–5.1 → 2.7–2.9 s on
    # the 10M-line page bench (2 cores). A background job's few seconds, not a page's share of the cores.
    PARALLEL_SCAN = {"max_parallel_workers_per_gather": "2", "parallel_tuple_cost": "0.01"}
    # `sorted_groups`: a grouping with nearly as many groups as rows, each holding numeric sums (a re-attribution's
    # net change per rollup row: 151k groups of 177k rows on the 10M-line bench) sorts its rows and sums one group
    # at a time. Hashed, the groups' sum states took 265 MB, spilled past work_mem in five batches: 1.43 s against
    # 0.76 s sorted (in memory, 35 MB).
    SORTED_GROUPS = {"enable_sort": "on", "enable_hashagg": "off"}

    def __init__(self, *, parallel_scan: bool = False, sorted_groups: bool = False):
        self.settings = {
            **self.SETTINGS,
            **(self.PARALLEL_SCAN if parallel_scan else {}),
            **(self.SORTED_GROUPS if sorted_groups else {}),
        }

    def __enter__(self):
        self.previous = None
        if connection.vendor == "postgresql":
            self.previous = self._set_all(self.settings)

    def __exit__(self, exc_type, exc, tb):
        if self.previous is not None and exc_type is None:  # after an error the rollback restores them
            self._set_all(self.previous)

    @staticmethod
    def _set_all(values: dict[str, str]) -> dict[str, str]:
        """Set every setting and return what each was, in one statement: a small import's rebuild is a few
        milliseconds of SQL, and a round trip per setting to set and one to restore were 8 of its ~54 statements.
        The values are read in the materialised CTE, before the outer SELECT sets them."""
        names = list(values)
        reads = ", ".join(f"current_setting(%s) AS v{n}" for n in range(len(names)))
        sets = ", ".join("set_config(%s, %s, true)" for _ in names)
        with connection.cursor() as cursor:
            cursor.execute(
                f"WITH previous AS MATERIALIZED (SELECT {reads}) SELECT previous.*, {sets} FROM previous",
                [*names, *(part for name in names for part in (name, values[name]))],
            )
            return dict(zip(names, cursor.fetchone()[: len(names)]))
