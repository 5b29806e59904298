"""The demo organisation loaded once per test run, then copied into every module that only reads it.

`load_demo` imports a month of files through the real importers, evaluates alerts and publishes reports: 20–60 s
on this 2-core machine, and several modules need the same organisation for the same day (the report's formats, the
FOCUS export, the TCO tables, the browser walks). The first module that asks loads it for real and keeps a binary
COPY of every table (and the sequences' positions); later modules get the tables back as that load left them, with
COPY, in a few hundred milliseconds. Modules that test the loading itself (tests/demo_story/test_demo.py,
tests/demo_story/test_unit_economics.py, tests/test_report_demo.py) still call `load_demo`.

pytest-xdist workers of one run share the copy through a file in the run's pytest temp directory (pytest keeps the
last three runs' and removes older ones); a lock lets one worker load while the other waits for its copy.
The copy holds the database only: what `load_demo` does outside it (emails in `mail.outbox`, log lines) is not
replayed, so a module that asserts those loads the demo itself.
"""

import datetime as dt
import fcntl
import os
import pickle
from collections.abc import Callable
from pathlib import Path

from django.db import connection, transaction

from demo.load import load_demo


def run_dir(tmp_path_factory) -> Path:
    """The directory this test run's processes share (pytest keeps the last three runs' and removes older ones)."""
    base = tmp_path_factory.getbasetemp()
    # Under xdist each worker's base is <the run's base>/popen-gwN: the run's base is what the workers share.
    path = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "shared-databases"
    path.mkdir(exist_ok=True)
    return path


def _tables(cursor) -> list[str]:
    # The schema's own tables (an import's temporary tables are not), but django_migrations: the same in every
    # module, and never emptied by a test.
    cursor.execute(
        "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() AND tablename <> 'django_migrations'"
        " ORDER BY tablename"
    )
    return [table for (table,) in cursor.fetchall()]


def _dump() -> dict:
    tables = {}
    with connection.cursor() as cursor:
        for table in _tables(cursor):
            with cursor.copy(f'COPY "{table}" TO STDOUT (FORMAT binary)') as copy:
                tables[table] = b"".join(bytes(block) for block in copy)
        cursor.execute("SELECT schemaname || '.' || sequencename, last_value FROM pg_sequences WHERE last_value > 0")
        sequences = cursor.fetchall()
    return {"tables": tables, "sequences": sequences}


def _restore(snapshot: dict) -> None:
    with transaction.atomic(), connection.cursor() as cursor:
        tables = _tables(cursor)
        if set(tables) != set(snapshot["tables"]):
            differ = sorted(set(tables) ^ set(snapshot["tables"]))
            raise RuntimeError(f"the demo snapshot was taken on another schema (tables {differ})")
        # Foreign keys are not checked while the rows go back in, table by table in any order: they were consistent
        # when copied. Only in this transaction (SET LOCAL), which the module rolls back or commits as it did.
        cursor.execute("SET LOCAL session_replication_role = replica")
        cursor.execute("TRUNCATE " + ", ".join(f'"{t}"' for t in tables))
        for table, data in snapshot["tables"].items():
            if len(data) > 21:  # a binary COPY of no rows is its 19-byte header and 2-byte trailer
                with cursor.copy(f'COPY "{table}" FROM STDIN (FORMAT binary)') as copy:
                    copy.write(data)
        cursor.execute("SET LOCAL session_replication_role = DEFAULT")
        for sequence, value in snapshot["sequences"]:
            # Never backwards: ids the module's database handed out before stay unique.
            cursor.execute(
                "SELECT setval(%s, GREATEST(%s, (SELECT last_value FROM " + sequence + ")))", [sequence, value]
            )


def demo_loaded(today: dt.date, tmp_path_factory, *, load: Callable[[], dict] | None = None) -> dict:
    """The demo for `today` in this connection's open transaction: loaded the first time in the run (by `load`,
    default `load_demo(today=today)`), copied back every later time. Returns `load_demo`'s summary."""
    if connection.vendor != "postgresql":
        return (load or (lambda: load_demo(today=today)))()
    folder = run_dir(tmp_path_factory)
    path = folder / f"demo-{today.isoformat()}.pickle"
    with (folder / f"demo-{today.isoformat()}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if path.exists():
            snapshot = pickle.loads(path.read_bytes())
            _restore(snapshot)
            return snapshot["summary"]
        summary = (load or (lambda: load_demo(today=today)))()
        snapshot = {**_dump(), "summary": summary}
        path.write_bytes(pickle.dumps(snapshot))
        return summary
