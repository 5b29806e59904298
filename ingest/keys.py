"""Storing the tag sets and line signatures a run's lines point at (content-addressed: an id is its content's digest).

Postgres, set-based (issue 23): the keys are COPYed into a session temp table, then one `INSERT … SELECT … ORDER
BY id ON CONFLICT DO NOTHING` per table, then the digest-collision check as one join in SQL, which returns only
the clashing rows. A file of per-resource rows (a tag set and a signature per resource and meter) brings tens of
thousands of new keys; through the ORM's bulk_create and a read-back of every model instance they took ~59 % of a
300k-row Bedrock import (and as array parameters, ~100 µs a key for psycopg to bind).

- First, when a store holds many keys (FAST_AT), they are COPYed straight into the table in a savepoint, id order:
  a file's new keys are new, and a plain insert costs Postgres a third less than staging them and an `INSERT …
  ON CONFLICT` (178k signatures of a scattered log: 1.2–1.3 s against 1.7–2.0 s for the INSERT alone, psql, load
  8). An id already stored (a re-import, a concurrent import's keys) makes the COPY fail at once with a unique
  violation; the savepoint is rolled back and the keys take the staged path below, which then skips the
  ones stored. Every row inserted means no id was there before: nothing can clash.
- A store of a few keys (SMALL_AT: a small import's, a pull's) skips the temp table: the keys go as arrays in the
  INSERT and, when some were stored already, in the check (one or two statements instead of six).
- Sorted by id, so two imports storing overlapping new keys take their row locks in one order (no deadlock);
  the second waits on ON CONFLICT for the first to commit, then does nothing for those rows.
- The check is a second statement: under READ COMMITTED it sees rows another import committed while this one
  waited, which a check inside the INSERT's own statement (its snapshot) would not.
- When the INSERT stored every staged row (a file's new keys, the usual case) no id was there before, so nothing
  can clash and the check is skipped (a file of scattered keys stores a signature per line).
- A different set or signature under an id already stored (a digest collision) fails the run: never two sets
  merged under one id.
- A signature already stored keeps its workload and team (the last re-attribution set them; it equals the rules'
  answer unless a rule changed meanwhile, and that change's re-attribution settles it).

SQLite (the demo) keeps the plain ORM path: demo-sized, and the same rules.
"""

import json
from typing import NamedTuple

import numpy as np
import psycopg
import pyarrow as pa
import pyarrow.compute as pc
from django.db import connection, transaction

from finops.models import LineSignature, TagSet
from ingest.connectors.base import tags_json

from . import copy_binary
from .lines import IngestError

_TAG_SETS = TagSet._meta.db_table
_SIGNATURES = LineSignature._meta.db_table
# LineSignature's columns as stored: id, its key (LineSignature.KEY), then the attribution. A new signature is
# such a row (a tuple, what LinePreparer keeps) or a LineSignature.
SIGNATURE_COLUMNS = _SIGNATURE_COLUMNS = ("id", *LineSignature.KEY, "workload_id", "team_id")
_SIGNATURE_TYPES = ("bigint", "bigint", "bigint", "text", "text", "text", "text", "text", "bigint", "bigint", "bigint")
SIGNATURE_SCHEMA = pa.schema(
    [(name, pa.string() if kind == "text" else pa.int64()) for name, kind in zip(_SIGNATURE_COLUMNS, _SIGNATURE_TYPES)]
)
EMPTY_SIGNATURES = SIGNATURE_SCHEMA.empty_table()


class EncodedSignatures(NamedTuple):
    """New signatures sorted by id (a signature_table) with their binary COPY rows, made by `new_keys_encode` in a
    writer's helper thread, not in the COPY thread while Postgres waits: a scattered gateway log of 1M requests
    brings 584k signatures, and its import's COPY phase fell from 11.2–12.0 s to 8.2–9.0 s (docs/ingestion.md)."""

    table: pa.Table
    rows: "pa.Buffer"


def new_keys_encode(new_keys: tuple) -> tuple:
    """new_keys_store's arguments (LinePreparer.take_new's) with the signatures sorted and encoded ahead where the
    store would encode them (more than SMALL_AT of them: a gateway log's table, a FOCUS file's found one by one), for
    a Postgres writer's helper thread; touches no database."""
    tag_sets, signatures, texts = new_keys
    if len(signatures) <= SMALL_AT:
        return new_keys
    table = (signatures if isinstance(signatures, pa.Table) else signature_table_of(signatures)).sort_by("id")
    return tag_sets, EncodedSignatures(table, _binary_rows(table)), texts


def new_keys_store(
    tag_sets: dict[int, dict],
    signatures: "dict[int, tuple | LineSignature] | pa.Table | EncodedSignatures",
    texts: dict[int, str] | None = None,
) -> None:
    """Store the new tag sets and signatures lines point at: the sets first, as signatures name them. `texts`: the
    sets' canonical texts where the caller has them (LinePreparer.take_new), so none is encoded twice."""
    tag_sets_store(tag_sets, texts)
    signatures_store(signatures)


def tag_sets_store(tag_sets: dict[int, dict], texts: dict[int, str] | None = None) -> None:
    """Store the tag sets not stored yet; a different set under an existing id fails the run. `texts`: some sets'
    canonical texts (`tags_json`), by id."""
    if not tag_sets:
        return
    if connection.vendor != "postgresql":
        TagSet.objects.bulk_create([TagSet(id=i, tags=tag_sets[i]) for i in sorted(tag_sets)], ignore_conflicts=True)
        stored = dict(TagSet.objects.filter(id__in=list(tag_sets)).values_list("id", "tags"))
        _clash_tags(tag_sets, [i for i, tags in tag_sets.items() if stored.get(i) != tags], stored)
        return
    texts = texts or {}
    ids = sorted(tag_sets)
    canonical = [texts[i] if i in texts else tags_json(tag_sets[i]) for i in ids]
    # jsonb's binary input is a version byte (1) and the text: U+0001 encodes as that byte. The same rows serve the
    # COPY straight into the table and, when some set is stored already (a re-import), the staging table below.
    rows = (
        None if len(ids) <= SMALL_AT else _binary_rows(pa.table({"id": ids, "tags": ["\x01" + t for t in canonical]}))
    )
    if rows is not None and _copied_new(_TAG_SETS, ("id", "tags"), len(ids), rows):
        return
    with connection.cursor() as cursor:
        if rows is None:
            new, parameters = "unnest(%s::bigint[], %s::text[]) AS n (id, tags)", [ids, canonical]
            tags = "n.tags::jsonb"
        else:
            # Staged as jsonb, so each set's text is parsed once, by the COPY: staged as text, the INSERT and then
            # the collision check each parsed every set again (a re-import of a per-resource file, every set
            # stored: 14k sets, ~0.35 s of Postgres for the two statements at load 13, about half of it parsing).
            new, parameters, tags = "ingest_new_tag_sets n", [], "n.tags"
            _stage(cursor, "ingest_new_tag_sets", "id bigint, tags jsonb", binary_rows=rows)
        cursor.execute(
            f"INSERT INTO {_TAG_SETS} (id, tags) SELECT n.id, {tags} FROM {new} ORDER BY n.id "
            "ON CONFLICT (id) DO NOTHING",
            parameters,
        )
        if not _some_were_stored(cursor, len(tag_sets), None if parameters else "ingest_new_tag_sets"):
            return
        # Every staged set now has a row under its id: the ones inserted above equal themselves.
        cursor.execute(
            f"SELECT t.id, t.tags FROM {new} JOIN {_TAG_SETS} t ON t.id = n.id WHERE t.tags <> {tags} ORDER BY t.id",
            parameters,
        )
        clashes = cursor.fetchall()
    _clash_tags(tag_sets, [i for i, _ in clashes], {i: _json(tags) for i, tags in clashes})


def signatures_store(signatures: "dict[int, tuple | LineSignature] | pa.Table | EncodedSignatures") -> None:
    """Store the signatures not stored yet, after their tag sets; a different signature under an existing id
    fails the run. Each is a SIGNATURE_COLUMNS row or a LineSignature, or they are the columns of a table
    (`signature_table`: a gateway log's, found in bulk), maybe encoded ahead (`new_keys_encode`)."""
    encoded = None
    if isinstance(signatures, EncodedSignatures):
        signatures, encoded = signatures.table, signatures.rows
    if not len(signatures):
        return
    if encoded is not None:
        table = signatures  # sorted by new_keys_encode
    elif isinstance(signatures, pa.Table):
        table = signatures.sort_by("id")
    else:
        rows = [_signature_row(signatures[i]) for i in sorted(signatures)]
        table = pa.table(dict(zip(_SIGNATURE_COLUMNS, zip(*rows))), schema=SIGNATURE_SCHEMA)
    if connection.vendor != "postgresql":
        rows = {row[0]: row for row in zip(*(table.column(c).to_pylist() for c in _SIGNATURE_COLUMNS))}
        LineSignature.objects.bulk_create(
            [LineSignature(**dict(zip(_SIGNATURE_COLUMNS, row))) for row in rows.values()],
            ignore_conflicts=True,
            batch_size=2000,
        )
        stored = {s.id: s.key() for s in LineSignature.objects.filter(id__in=list(rows)).only(*LineSignature.KEY)}
        _clash_signatures(rows, [i for i, s in rows.items() if stored.get(i) != _key(s)], stored)
        return
    if encoded is None and len(table) > SMALL_AT:  # both paths below COPY them: encoded once
        encoded = _binary_rows(table)
    if _copied_new(_SIGNATURES, _SIGNATURE_COLUMNS, len(table), encoded):
        return
    names = ", ".join(_SIGNATURE_COLUMNS)
    key, stored_key = (", ".join(f"{table}.{c}" for c in LineSignature.KEY) for table in ("n", "s"))
    with connection.cursor() as cursor:
        if len(table) <= SMALL_AT:
            arrays = ", ".join(f"%s::{kind}[]" for kind in _SIGNATURE_TYPES)
            new = f"unnest({arrays}) AS n ({names})"
            parameters = [table.column(c).to_pylist() for c in _SIGNATURE_COLUMNS]
        else:
            new, parameters = "ingest_new_signatures n", []
            _stage(
                cursor,
                "ingest_new_signatures",
                ", ".join(f"{c} {t}" for c, t in zip(_SIGNATURE_COLUMNS, _SIGNATURE_TYPES)),
                binary_rows=encoded,
            )
        cursor.execute(
            f"INSERT INTO {_SIGNATURES} ({names}) SELECT {names} FROM {new} ORDER BY id ON CONFLICT (id) DO NOTHING",
            parameters,
        )
        if not _some_were_stored(cursor, len(table), None if parameters else "ingest_new_signatures"):
            return
        cursor.execute(
            f"SELECT s.id, {stored_key} FROM {new} JOIN {_SIGNATURES} s ON s.id = n.id "
            f"WHERE ({stored_key}) IS DISTINCT FROM ({key}) ORDER BY s.id",
            parameters,
        )
        clashes = {row[0]: row[1:] for row in cursor.fetchall()}
    if clashes:
        wanted = pc.is_in(table.column("id"), pa.array(list(clashes), pa.int64()))
        rows = table.filter(wanted).to_pylist()
        _clash_signatures({row["id"]: tuple(row.values()) for row in rows}, list(clashes), clashes)


def signature_table(
    ids, account_id, provider_ids, project, api_keys, users, models, model_raws, tag_set_ids, workloads, teams
):
    """New signatures as columns (SIGNATURE_SCHEMA): ids, provider ids and tag set ids as int64 arrays, the texts as
    lists, account and project one value for all, workloads and teams lists (None: unattributed) or None for all."""
    n = len(ids)
    unattributed = pa.nulls(n, pa.int64())
    return pa.table(
        [
            pa.array(ids, pa.int64()),
            pa.array(np.full(n, account_id, dtype=np.int64)),
            pa.array(provider_ids, pa.int64()),
            pa.array([project] * n, pa.string()),
            pa.array(api_keys, pa.string()),
            pa.array(users, pa.string()),
            pa.array(models, pa.string()),
            pa.array(model_raws, pa.string()),
            pa.array(tag_set_ids, pa.int64()),
            unattributed if workloads is None else pa.array(workloads, pa.int64()),
            unattributed if teams is None else pa.array(teams, pa.int64()),
        ],
        schema=SIGNATURE_SCHEMA,
    )


def signature_table_of(signatures: dict) -> pa.Table:
    """A dict of signatures (id -> SIGNATURE_COLUMNS row or LineSignature) as a signature_table."""
    rows = [_signature_row(s) for s in signatures.values()]
    return pa.table(dict(zip(_SIGNATURE_COLUMNS, zip(*rows))), schema=SIGNATURE_SCHEMA) if rows else EMPTY_SIGNATURES


def signature_table_concat(tables: list) -> pa.Table:
    return pa.concat_tables(tables)


def signature_ids_of(signatures: "dict | pa.Table | EncodedSignatures") -> list[int]:
    """The ids of what signatures_store is given."""
    if isinstance(signatures, EncodedSignatures):
        signatures = signatures.table
    return signatures.column("id").to_pylist() if isinstance(signatures, pa.Table) else list(signatures)


# Stores of at most this many keys skip the temp table: their few ids and columns are sent as arrays with the
# INSERT (and with the collision check when some were stored already). A small import (a few keys) paid six round
# trips per table to stage them — create, empty, COPY, INSERT, ANALYZE, check — where this takes one or two; binding
# costs grow with the keys (~100 µs a key as arrays), so larger stores keep the COPY.
SMALL_AT = 32

# Stores of fewer keys go the staged path only: the COPY's savepoint and its failure on a re-import cost more than
# what it saves on a few hundred keys.
FAST_AT = 1024


def _copied_new(table_name: str, columns: tuple, count: int, rows: "pa.Buffer") -> bool:
    """COPY `count` keys (`rows`: their binary rows, `_binary_rows` of a table sorted by id, columns in `columns`
    order) straight into `table_name` in a savepoint: True when every row was inserted, False (nothing inserted) when
    some id was already stored — the staged path then sends the same rows — or the keys are too few to be worth
    trying."""
    if count < FAST_AT:
        return False
    try:
        with transaction.atomic(), connection.cursor() as cursor:  # a savepoint
            with cursor.cursor.copy(f"COPY {table_name} ({', '.join(columns)}) FROM STDIN (FORMAT binary)") as copy:
                copy.write(copy_binary.SIGNATURE)
                copy.write(rows)
                copy.write(copy_binary.TRAILER)
    except psycopg.errors.UniqueViolation:
        return False
    return True


def _stage(cursor, table: str, columns: str, *, binary_rows) -> None:
    """`binary_rows` (copy_binary.rows of the rows) into an empty session temp table (created once per connection,
    emptied at every commit), by COPY: binding tens of thousands of values as query parameters costs ~100 µs each
    (arrays dumped element by element), and psycopg's write_row ~4 µs a row."""
    cursor.execute(f"CREATE TEMP TABLE IF NOT EXISTS {table} ({columns}) ON COMMIT DELETE ROWS")
    cursor.execute(f"DELETE FROM {table}")  # what a store earlier in this transaction staged
    with cursor.cursor.copy(f"COPY {table} FROM STDIN (FORMAT binary)") as copy:
        copy.write(copy_binary.SIGNATURE)
        copy.write(binary_rows)
        copy.write(copy_binary.TRAILER)


def _binary_rows(table: pa.Table) -> "pa.Buffer":
    """A table of bigint and text columns (new signatures, new tag sets) as binary COPY data, encoded column by
    column (copy_binary): a scattered log stores a signature per line, a per-resource FOCUS file a tag set per
    resource, and psycopg's write_row of each cost ~4 µs of the COPY thread."""
    return copy_binary.rows(
        [
            copy_binary.field_count(table.num_columns),
            *(
                copy_binary.texts(column) if pa.types.is_string(column.type) else copy_binary.bigints(column)
                for column in (table.column(i).combine_chunks() for i in range(table.num_columns))
            ),
        ]
    )


def _some_were_stored(cursor, staged: int, table: str | None) -> bool:
    """After the INSERT … ON CONFLICT DO NOTHING of `staged` rows: whether some ids were already stored, so the
    collision check has rows to compare. When every row was inserted (a file's new keys: the usual case), none
    can clash — each is its own — and the check's join of every staged row is skipped. `table`: the temp table
    they were staged in (None: sent as arrays)."""
    if cursor.rowcount == staged:
        return False
    if table is not None:
        # The staged table's size, so the check probes the stored table's primary key rather than hash all of it.
        cursor.execute(f"ANALYZE {table}")
    return True


def _signature_row(signature) -> tuple:
    if isinstance(signature, LineSignature):
        return tuple(getattr(signature, c) for c in _SIGNATURE_COLUMNS)
    return signature


def _key(row: tuple) -> tuple:
    """A signature row's key, as LineSignature.key() gives it."""
    return tuple(row[1 : 1 + len(LineSignature.KEY)])


def _json(value):
    return json.loads(value) if isinstance(value, str) else value


def _clash_tags(tag_sets: dict, clashes: list, stored: dict) -> None:

    if clashes:
        first = min(clashes)
        raise IngestError(
            f"tag set {tag_sets[first]!r} shares its digest with {stored.get(first)!r}; "
            "this import cannot be stored (please report it)"
        )


def _clash_signatures(signatures: dict, clashes: list, stored: dict) -> None:

    if clashes:
        first = min(clashes)
        raise IngestError(
            f"line signature {_key(signatures[first])!r} shares its digest with {stored.get(first)!r}; "
            "this import cannot be stored (please report it)"
        )
