"""The rows of a performance merge on their way through Python (Postgres; issue 23): fetched from their grouping
statement in binary, each group's cells merged bin by bin (finops.performance.latency.merge_sent_cells) and written
back by a binary COPY — inside a rebuild, the merge on a second thread while the next statement runs
(OverlappedCopies). finops.performance.services.performance_rollup and its daily pass build the statements."""

from concurrent.futures import ThreadPoolExecutor
from contextvars import ContextVar

import psycopg
from django.db import connection
from psycopg.adapt import Dumper
from psycopg.pq import Format

from finops.performance.latency import merge_sent_cells

# The rebuild's OverlappedCopies, while one runs in this context.
_OVERLAPPED: ContextVar["OverlappedCopies | None"] = ContextVar("overlapped_copies", default=None)


def grouped_rows(statement: str, params: list) -> list[tuple]:
    """The rows of a merge's grouping statement, fetched in binary: each group's cells as the bytes Postgres holds.
    Through Django's cursor (client-side binding, text results) they came as hex, twice their size, encoded by
    Postgres and decoded by psycopg: 1.8 s of the 10M-line page bench's performance rollup went to fetching ~700 MB
    of cells that way (issue 23). The statement is bound client-side, as Django's default cursor binds it (the same
    literals, whatever cursor the settings give Django), then run by a plain psycopg cursor of the same connection, in
    the same transaction; a rebuild's waiting rows that it names are COPYed first (OverlappedCopies), as Django's
    execute wrapper would have it."""
    overlapped = _OVERLAPPED.get()
    if overlapped is not None:
        overlapped.hold_for(statement)
    connection.ensure_connection()
    with psycopg.ClientCursor(connection.connection) as binder:
        bound = binder.mogrify(statement, params)
    with psycopg.Cursor(connection.connection) as cursor:
        cursor.execute(bound, binary=True)
        return cursor.fetchall()


def copy_merged(model, columns: str, merged: list) -> None:
    """COPY the grouped rows into `model`: each row's columns as fetched, its last one (the group's cells, as sent)
    merged by bin (latency.merge_sent_cells) — on a second thread, while the next statement runs, inside a rebuild
    (OverlappedCopies)."""
    if not merged:
        return
    overlapped = _OVERLAPPED.get()
    if overlapped is not None:
        overlapped.put(model, columns, merged)
        return
    _copy_rows(model, columns, merged, merge_sent_cells([row[-1] for row in merged]))


def _copy_rows(model, columns: str, merged: list, cells: list) -> None:
    table = model._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT attname, atttypid FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0", [table]
        )
        types = dict(cursor.fetchall())
        copy_cursor = cursor.cursor  # psycopg's: its binary COPY takes the merged arrays as they are
        copy_cursor.adapters.register_dumper(SentCells, SentCellsDumper)
        with copy_cursor.copy(f"COPY {table} ({columns}) FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types([types[name] for name in columns.split(", ")])
            for row, latency in zip(merged, cells, strict=True):
                copy.write_row((*row[:-1], None if latency is None else SentCells(latency)))


class OverlappedCopies:
    """Inside a rebuild (Postgres): each statement's merge of cells runs on a second thread while the main one goes on
    to the next statement, and its rows are COPYed once the next statement's rows are fetched (their merge started
    first), or before any statement that names their table — an execute wrapper holds such a statement back until
    the rows it could read, delete or add to are there. At most one statement's rows wait.

    Why (issue 23): Python merged and Postgres waited, then Postgres ran the next statement and Python waited; on the
    10M-line page bench the merges were 4.2 s of a 19.2 s performance rollup, and the other core sat idle. A level's
    rows are deleted for all its days before its first merge (performance_rollup_rebuild), so that a delete between
    two merges does not hold the first one's rows back. The thread only runs numpy over fetched bytes (no database
    access); an error in the rebuild drops the waiting rows with its transaction."""

    def __enter__(self):
        self.waiting = None  # (model, columns, rows, the merge's future)
        self.executor = None
        if connection.vendor != "postgresql":
            return self
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="performance-merge")
        self.hold = connection.execute_wrapper(self._before_statement)
        self.hold.__enter__()
        self.token = _OVERLAPPED.set(self)
        return self

    def __exit__(self, exc_type, exc, tb):
        if self.executor is None:
            return
        try:
            if exc_type is None:
                self.flush()
        finally:
            _OVERLAPPED.reset(self.token)
            self.hold.__exit__(exc_type, exc, tb)
            self.executor.shutdown(cancel_futures=True)

    def put(self, model, columns: str, rows: list) -> None:
        merge = self.executor.submit(merge_sent_cells, [row[-1] for row in rows])
        self.flush()
        self.waiting = (model, columns, rows, merge)

    def flush(self) -> None:
        if self.waiting is None:
            return
        model, columns, rows, merge = self.waiting
        self.waiting = None
        _copy_rows(model, columns, rows, merge.result())

    def hold_for(self, sql: str) -> None:
        """Before `sql` runs: the waiting rows COPYed if it names their table."""
        if self.waiting is not None and self.waiting[0]._meta.db_table in sql:
            self.flush()

    def _before_statement(self, execute, sql, params, many, context):
        self.hold_for(sql)
        return execute(sql, params, many, context)


class SentCells(bytes):
    """An int8[] already in Postgres' binary form (finops.performance.latency.merge_sent_cells)."""


class SentCellsDumper(Dumper):
    format = Format.BINARY
    oid = 1016  # int8[]

    def dump(self, obj):
        return obj
