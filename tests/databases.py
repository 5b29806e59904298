"""The suite's databases: each process's cloned from a migrated template rather than migrated anew every run,
and emptied by DELETE after a transactional test rather than by TRUNCATE (unless a table has grown big).

Creating a test database runs every migration (~10 s of CPU on this 2-core machine: Django renders the models'
states migration by migration), in each pytest-xdist worker, in every run. The migrated schema depends only on the
product's code, so the first process to need it migrates a database as usual and keeps a copy as a template named
for a digest of that code (`test_<database>_migrated_<digest>`, one for all of a run's workers); every process then
gets its own database with `CREATE DATABASE … TEMPLATE` (a fraction of a second), and a later run of the same code
skips the migrations. A run leaves its databases behind (dropping one at the end waits on a checkpoint of all the
run wrote): the next run drops each before cloning it again.

The digest covers every file the migrations could read: `finops/` and `ingest/` (their Python, the price catalog
and other data files) and Django's version, not `tests/`, so changing a test reuses the template and changing the
product builds a new one (older templates of the same test database are dropped then). Postgres only; SQLite (never
used by the suite) would take pytest-django's usual path.

Every table of the template (and so of each clone) is UNLOGGED: a test database is thrown away after the run, and
a logged table's every write also goes to the server's write-ahead log (WAL) — ~600 MB a whole run, with a full
copy of each page the first time it changes after each of the ~14 checkpoints that volume asks for. What an
UNLOGGED table gives up is surviving a crash of the server (it comes back empty) and replication; no test stops or
crashes the cluster (the Postgres fault tests cut a TCP proxy in front of it: tests/integration/), and the upgrade
tests build their own databases (tests/migration_helpers.py), logged. The template's name carries UNLOGGED_MARK so
that a template built before this (logged) is not reused.
"""

import hashlib
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
CODE = ("finops", "ingest")
SKIPPED = {"__pycache__"}


# Part of the template's digest: changing how the template is made (not only the code it migrates) renames it.
UNLOGGED_MARK = b"unlogged tables"


def code_digest() -> str:
    import django

    digest = hashlib.sha256(django.get_version().encode() + UNLOGGED_MARK)
    for package in CODE:
        for path in sorted((PROJECT_ROOT / package).rglob("*")):
            if path.is_file() and not SKIPPED.intersection(path.parts) and path.suffix != ".pyc":
                digest.update(str(path.relative_to(PROJECT_ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:12]


def _maintenance():
    """A connection to the server's `postgres` database (creating and dropping databases cannot run in one)."""
    import psycopg
    from django.db import connection

    settings = connection.settings_dict
    return psycopg.connect(
        dbname="postgres",
        user=settings["USER"] or None,
        password=settings["PASSWORD"] or None,
        host=settings["HOST"] or None,
        port=settings["PORT"] or None,
        autocommit=True,
    )


def _exists(cursor, name: str) -> bool:
    cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name])
    return cursor.fetchone() is not None


def setup_from_template(setup_databases, verbosity: int, **arguments):
    """`setup_databases(...)` with the default database cloned from the migrated template (built first if
    missing, under a lock the other processes wait on). Returns what `setup_databases` returns."""
    from django.db import connection
    from psycopg import sql

    test_name = connection.creation._get_test_db_name()  # test_<NAME>, and _gwN under pytest-xdist
    base = f"test_{connection.settings_dict['NAME']}"  # the run's workers share one template
    template = f"{base}_migrated_{code_digest()}"
    with _maintenance() as admin, admin.cursor() as cursor:
        # One process at a time builds or clones (a template being copied may have no other session on it).
        cursor.execute("SELECT pg_advisory_lock(hashtext(%s))", [f"finops tests {base}"])
        if not _exists(cursor, template):
            config = setup_databases(verbosity=verbosity, interactive=False, keepdb=False, **arguments)
            set_unlogged(connection)
            connection.close()
            cursor.execute(
                "SELECT datname FROM pg_database WHERE datname LIKE %s AND datname <> %s",
                [f"{base}_migrated_%", template],
            )
            for (old,) in cursor.fetchall():
                cursor.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(old)))
            cursor.execute(
                sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(sql.Identifier(template), sql.Identifier(test_name))
            )
            return config
        cursor.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(test_name)))
        cursor.execute(
            sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(sql.Identifier(test_name), sql.Identifier(template))
        )
    # The clone exists: Django keeps it (keepdb) and its `migrate` finds nothing to apply.
    return setup_databases(verbosity=verbosity, interactive=False, keepdb=True, **arguments)


def set_unlogged(connection) -> None:
    """Make every table of `connection`'s database UNLOGGED (its indexes and its own sequences follow).

    Postgres refuses to make a table unlogged while a logged table has a foreign key to it, so a table goes once
    every other table that refers to it has: the referring ones first. Django's schema has no cycle of foreign
    keys between tables (a table referring to itself is fine); if one appeared, the loop would find nothing left
    to do and raise, naming the tables."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname, coalesce(array_agg(DISTINCT r.relname) FILTER (WHERE r.oid <> c.oid), '{}') "
            "FROM pg_class c "
            "LEFT JOIN pg_constraint f ON f.contype = 'f' AND f.confrelid = c.oid "
            "LEFT JOIN pg_class r ON r.oid = f.conrelid "
            "WHERE c.relkind = 'r' AND c.relpersistence = 'p' AND c.relnamespace = 'public'::regnamespace "
            "GROUP BY c.relname"
        )
        referred_by = {table: set(referrers) for table, referrers in cursor.fetchall()}
        while referred_by:
            ready = sorted(table for table, referrers in referred_by.items() if not referrers & referred_by.keys())
            if not ready:
                raise RuntimeError(f"foreign keys in a cycle, cannot make these unlogged: {sorted(referred_by)}")
            for table in ready:
                cursor.execute(f"ALTER TABLE {connection.ops.quote_name(table)} SET UNLOGGED")
                del referred_by[table]


# A table whose file has grown past this is emptied by TRUNCATE (a new, empty file) rather than DELETE.
BLOATED_BYTES = 8 * 1024 * 1024


KEPT = frozenset({"django_content_type", "auth_permission"})


def flush_by_delete() -> None:
    """Empty tables with DELETE rather than TRUNCATE when a transactional test ends (Django's flush), unless one of
    them has grown big.

    A transactional test (live server, real workers, threads) ends with Django's flush, a TRUNCATE of all 60
    tables: ~1 s however few rows the test left, since Postgres gives each truncated table a new file. DELETE of
    what the test left takes ~20 ms. Django's foreign keys are DEFERRABLE INITIALLY DEFERRED, so the tables may be
    emptied in any order: the flush's one transaction checks them at commit, when everything is gone. A flush
    that resets sequences keeps Django's TRUNCATE … RESTART IDENTITY.

    The content types and permissions (KEPT) are not deleted: they are what the models are, not what a test wrote,
    and the flush's post_migrate signal put every one of them back at once, ~120 rows built and inserted after
    every transactional test (half of a browser test's flush). Its receivers still run: with the rows there they
    only read, and they would put back any a test deleted. The TRUNCATE path empties them too, as Django does.

    But DELETE leaves every row it removes in the table's file as a dead tuple, and nothing clears them while the
    process runs (the local server has autovacuum off; where it is on it comes by minutes later): after a test that
    wrote a few hundred thousand usage lines (tests/integration/test_worker_killed.py), every later test of that
    process that reads the usage lines or their rollups scans the dead ones too, on statistics that say the table
    is empty — tests/test_retention.py took 44 s a test after it instead of 2-6 s (2026-11-27, load ~9). So when
    any table's file is past BLOATED_BYTES (rows written then deleted or rolled back since the database was cloned
    or last truncated), the flush is Django's TRUNCATE of them all, once, and the files start empty again.
    """
    from django.db.backends.postgresql.operations import DatabaseOperations

    truncate = DatabaseOperations.sql_flush

    def sql_flush(self, style, tables, *, reset_sequences=False, allow_cascade=False):
        if reset_sequences or _bloated(self.connection, tables):
            return truncate(self, style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade)
        return [f"DELETE FROM {self.quote_name(table)};" for table in tables if table not in KEPT]

    DatabaseOperations.sql_flush = sql_flush


def _bloated(connection, tables) -> bool:
    """Whether the file of any of `tables` (its rows, live or dead, not its indexes) is past BLOATED_BYTES."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT coalesce(max(pg_relation_size(c.oid)), 0) FROM pg_class c "
            "WHERE c.relkind = 'r' AND c.relnamespace = 'public'::regnamespace AND c.relname = ANY(%s)",
            [list(tables)],
        )
        return cursor.fetchone()[0] > BLOATED_BYTES
