"""The data version: one number that changes whenever a write to the database commits (issue 23's page cache,
finops/web/page_cache.py, keys its entries on it).

Postgres keeps it, not the code: a statement-level trigger on every table (but the few below that hold no figure
and no permission) adds 1 to the writing backend's row of `finops_data_version` once per transaction, in that
transaction. So the number moves at the very commit that makes the data visible, whatever wrote it — a service, the
Django admin, a migration, raw SQL, a COPY, a TRUNCATE — and a rolled-back write moves nothing. There is no list of
write paths to keep in step: a table added later gets its trigger from `install_triggers` after `migrate`
(post_migrate, finops/apps.py), and tests/test_page_cache.py fails naming any table without one.

Why one row per backend and a sum: a single counter row would be locked by the first writer until it commits, so
two imports would queue on it (and a writer waiting on it while holding a row another needs would deadlock). A
backend runs one transaction at a time, so its own row is never contended; readers add the rows up (the sum grows
by exactly one per committed writing transaction). Rows of backends that have exited are folded into row 0 by
`compact` (the sum unchanged), so the table stays as small as the number of connections.

SQLite (the demo) has no such trigger: `current()` answers None there and pages are computed every time.
"""

import logging

from django.db import DEFAULT_DB_ALIAS, ProgrammingError, connection, connections

log = logging.getLogger(__name__)

TABLE = "finops_data_version"
TRIGGER = "finops_data_changed"
# Tables whose writes change nothing a page shows: who is signed in (sessions), which migrations ran, and django-axes'
# record of sign-in attempts (written on every sign-in). Everything else — figures, configuration, rules, prices,
# outcomes, evals, users, roles, memberships, tokens — bumps the version.
EXCLUDED = frozenset({TABLE, "django_session", "django_migrations"})
EXCLUDED_PREFIXES = ("axes_",)
# Columns whose update alone moves nothing: bookkeeping no cached page shows, written on every sign-in or API use
# (a token's last use, at most once a minute per token; a user's last sign-in). Counted, they would empty the cache
# each time a script calls the API or someone signs in. Any other column of these tables, an insert or a delete
# still moves the version; their triggers are made again after each migrate, so a column added later is watched.
COLUMNS_NOT_WATCHED = {"finops_apitoken": frozenset({"last_used_at"}), "finops_user": frozenset({"last_login"})}
COMPACT_OVER = 64  # rows of backends; folded into row 0 past this many

# Run by migration 0042 (and again by install_triggers, so the function is current after any migrate).
CREATE_TABLE = f"""
CREATE TABLE IF NOT EXISTS {TABLE} (backend integer PRIMARY KEY, writes bigint NOT NULL);
INSERT INTO {TABLE} (backend, writes) VALUES (0, 0) ON CONFLICT DO NOTHING;
"""
CREATE_FUNCTION = f"""
CREATE OR REPLACE FUNCTION {TRIGGER}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- Once per transaction: the setting is transaction-local, and undone with the write if a savepoint rolls back.
    IF current_setting('finops.data_changed', true) IS DISTINCT FROM '1' THEN
        INSERT INTO {TABLE} AS v (backend, writes) VALUES (pg_backend_pid(), 1)
            ON CONFLICT (backend) DO UPDATE SET writes = v.writes + 1;
        PERFORM set_config('finops.data_changed', '1', true);
    END IF;
    RETURN NULL;
END
$$;
"""
DROP = f"DROP FUNCTION IF EXISTS {TRIGGER}() CASCADE; DROP TABLE IF EXISTS {TABLE};"


def watched(table: str) -> bool:
    return table not in EXCLUDED and not table.startswith(EXCLUDED_PREFIXES)


def tables_without_trigger(using: str = DEFAULT_DB_ALIAS) -> list[str]:
    """Ordinary and partitioned tables of the public schema that should bump the version and have no trigger."""
    with connections[using].cursor() as cursor:
        cursor.execute(
            """
            SELECT c.relname FROM pg_class c
            WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p')
              AND NOT EXISTS (SELECT 1 FROM pg_trigger t WHERE t.tgrelid = c.oid AND t.tgname = %s)
            ORDER BY c.relname
            """,
            [TRIGGER],
        )
        return [name for (name,) in cursor.fetchall() if watched(name)]


def install_triggers(using: str = DEFAULT_DB_ALIAS, **_) -> list[str]:
    """Give every watched table its trigger (idempotent); the tables it was added to. A post_migrate receiver."""
    db = connections[using]
    if db.vendor != "postgresql":
        return []
    with db.cursor() as cursor:
        cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [TABLE])
        if not cursor.fetchone()[0]:  # migrated back before 0042
            return []
        cursor.execute(CREATE_FUNCTION)
        for table in COLUMNS_NOT_WATCHED:  # made again with the table's columns as they are now
            cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [table])
            if cursor.fetchone()[0]:
                cursor.execute(f"DROP TRIGGER IF EXISTS {TRIGGER} ON {db.ops.quote_name(table)}")
        added = tables_without_trigger(using)
        for table in added:
            cursor.execute(
                f"CREATE TRIGGER {TRIGGER} AFTER INSERT OR {_updates(cursor, db, table)} OR DELETE OR TRUNCATE "
                f"ON {db.ops.quote_name(table)} FOR EACH STATEMENT EXECUTE FUNCTION {TRIGGER}()"
            )
    return added


def _updates(cursor, db, table: str) -> str:
    """UPDATE, or UPDATE OF every column but those not watched (a statement setting only those fires nothing)."""
    skipped = COLUMNS_NOT_WATCHED.get(table)
    if not skipped:
        return "UPDATE"
    columns = [c.name for c in db.introspection.get_table_description(cursor, table) if c.name not in skipped]
    return "UPDATE OF " + ", ".join(db.ops.quote_name(c) for c in columns)


def current() -> str | None:
    """The committed data version, or None where there is none (SQLite; a database not migrated to 0042): the
    database's oid and the count of committed writing transactions. The oid, because a database dropped and
    created again under the same name (a test run's clone, a reset demo) counts from where its template stood, and
    the same count there is not the same data.

    Read in its own statement: a caller reads it before the figures, so a write committing in between leaves a
    fresher page under the older version (never an older page under the newer one)."""
    if connection.vendor != "postgresql":
        return None
    try:
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT sum(writes)::bigint, count(*), "
                f"(SELECT oid FROM pg_database WHERE datname = current_database()) FROM {TABLE}"
            )
            version, rows, database = cursor.fetchone()
    except ProgrammingError:  # the table is missing: no version, no cache
        log.warning("data version: %s is missing (migrate)", TABLE)
        return None
    if rows > COMPACT_OVER and not connection.in_atomic_block:
        compact()
    return f"{database}:{version}"


def compact() -> int:
    """Fold the rows of backends that have exited into row 0 (the sum, hence the version, unchanged); rows locked by
    a live transaction are skipped, never waited for. One compaction at a time (an advisory lock).

    Row 0 is written by an upsert, not an UPDATE: the deleted rows' writes must land somewhere even where row 0 is
    missing (a table emptied by hand, a copy of another database's rows), or the sum would fall back to a version
    some older page was cached under."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            WITH lock AS (SELECT pg_try_advisory_xact_lock(hashtext(%s)) AS held),
            gone AS (
                DELETE FROM {TABLE} WHERE backend IN (
                    SELECT backend FROM {TABLE}
                    WHERE backend <> 0 AND (SELECT held FROM lock)
                      AND backend NOT IN (SELECT pid FROM pg_stat_activity WHERE pid IS NOT NULL)
                    FOR UPDATE SKIP LOCKED
                ) RETURNING writes
            )
            INSERT INTO {TABLE} AS v (backend, writes)
            SELECT 0, sum(writes) FROM gone HAVING count(*) > 0
            ON CONFLICT (backend) DO UPDATE SET writes = v.writes + excluded.writes
            RETURNING (SELECT count(*) FROM gone)
            """,
            [TABLE],
        )
        row = cursor.fetchone()
    return int(row[0]) if row else 0


def bump() -> None:
    """Move the version without writing a table: for a change the database does not hold (the benches' cold runs
    use it to time a page as it is after a write)."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {TABLE} AS v (backend, writes) VALUES (pg_backend_pid(), 1) "
            "ON CONFLICT (backend) DO UPDATE SET writes = v.writes + 1"
        )
