"""Storing the tag sets and line signatures a run's lines point at (content-addressed: an id is its content's digest).

Postgres, set-based (issue 23): the keys are COPYed into a session temp table, then one `INSERT … SELECT … ORDER
BY id ON CONFLICT DO NOTHING` per table, then the digest-collision check as one join in SQL, which returns only
the clashing rows. A file of per-resource rows (a tag set and a signature per resource and meter) brings tens of
thousands of new keys; through the ORM's bulk_create and a read-back of every model instance they took ~59 % of a
300k-row Bedrock import (and as array parameters, ~100 µs a key for psycopg to bind).

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

import pyarrow as pa
from django.db import connection

from finops.models import LineSignature, TagSet
from ingest.connectors.base import tags_json

from . import copy_binary

_TAG_SETS = TagSet._meta.db_table
_SIGNATURES = LineSignature._meta.db_table
# LineSignature's columns as stored: id, its key (LineSignature.KEY), then the attribution. A new signature is
# such a row (a tuple, what LinePreparer keeps) or a LineSignature.
SIGNATURE_COLUMNS = _SIGNATURE_COLUMNS = ("id", *LineSignature.KEY, "workload_id", "team_id")
_SIGNATURE_TYPES = ("bigint", "bigint", "bigint", "text", "text", "text", "text", "text", "bigint", "bigint", "bigint")


def new_keys_store(
    tag_sets: dict[int, dict], signatures: dict[int, "tuple | LineSignature"], texts: dict[int, str] | None = None
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
    with connection.cursor() as cursor:
        texts = texts or {}
        _stage(
            cursor,
            "ingest_new_tag_sets",
            "id bigint, tags text",
            binary_rows=_binary_rows(
                [(i, texts[i] if i in texts else tags_json(tag_sets[i])) for i in sorted(tag_sets)], ("bigint", "text")
            ),
        )
        cursor.execute(
            f"INSERT INTO {_TAG_SETS} (id, tags) SELECT id, tags::jsonb FROM ingest_new_tag_sets ORDER BY id "
            "ON CONFLICT (id) DO NOTHING"
        )
        if not _some_were_stored(cursor, len(tag_sets), "ingest_new_tag_sets"):
            return
        # Every staged set now has a row under its id: the ones inserted above equal themselves.
        cursor.execute(
            f"SELECT t.id, t.tags FROM ingest_new_tag_sets n JOIN {_TAG_SETS} t ON t.id = n.id "
            "WHERE t.tags <> n.tags::jsonb ORDER BY t.id"
        )
        clashes = cursor.fetchall()
    _clash_tags(tag_sets, [i for i, _ in clashes], {i: _json(tags) for i, tags in clashes})


def signatures_store(signatures: dict[int, "tuple | LineSignature"]) -> None:
    """Store the signatures not stored yet, after their tag sets; a different signature under an existing id
    fails the run. Each is a SIGNATURE_COLUMNS row or a LineSignature."""
    if not signatures:
        return
    signatures = {i: _signature_row(s) for i, s in signatures.items()}
    if connection.vendor != "postgresql":
        LineSignature.objects.bulk_create(
            [LineSignature(**dict(zip(_SIGNATURE_COLUMNS, signatures[i]))) for i in sorted(signatures)],
            ignore_conflicts=True,
            batch_size=2000,
        )
        stored = {s.id: s.key() for s in LineSignature.objects.filter(id__in=list(signatures)).only(*LineSignature.KEY)}
        _clash_signatures(signatures, [i for i, s in signatures.items() if stored.get(i) != _key(s)], stored)
        return
    names = ", ".join(_SIGNATURE_COLUMNS)
    key, stored_key = (", ".join(f"{table}.{c}" for c in LineSignature.KEY) for table in ("n", "s"))
    with connection.cursor() as cursor:
        _stage(
            cursor,
            "ingest_new_signatures",
            ", ".join(f"{c} {t}" for c, t in zip(_SIGNATURE_COLUMNS, _SIGNATURE_TYPES)),
            binary_rows=_binary_rows([signatures[i] for i in sorted(signatures)], _SIGNATURE_TYPES),
        )
        cursor.execute(
            f"INSERT INTO {_SIGNATURES} ({names}) SELECT {names} FROM ingest_new_signatures ORDER BY id "
            "ON CONFLICT (id) DO NOTHING"
        )
        if not _some_were_stored(cursor, len(signatures), "ingest_new_signatures"):
            return
        cursor.execute(
            f"SELECT s.id, {stored_key} FROM ingest_new_signatures n JOIN {_SIGNATURES} s ON s.id = n.id "
            f"WHERE ({stored_key}) IS DISTINCT FROM ({key}) ORDER BY s.id"
        )
        clashes = {row[0]: row[1:] for row in cursor.fetchall()}
    _clash_signatures(signatures, list(clashes), clashes)


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


def _binary_rows(rows: list[tuple], types: tuple) -> "pa.Buffer":
    """Rows of bigints (or None) and strings as binary COPY data, encoded column by column (copy_binary): a scattered
    log stores a signature per line, and psycopg's write_row of each cost ~4 µs of the COPY thread."""
    columns = list(zip(*rows))
    return copy_binary.rows(
        [
            copy_binary.field_count(len(types)),
            *(
                copy_binary.texts(pa.array(values, pa.string()))
                if kind == "text"
                else copy_binary.bigints(pa.array(values, pa.int64()))
                for values, kind in zip(columns, types)
            ),
        ]
    )


def _some_were_stored(cursor, staged: int, table: str) -> bool:
    """After the INSERT … ON CONFLICT DO NOTHING of `staged` rows: whether some ids were already stored, so the
    collision check has rows to compare. When every row was inserted (a file's new keys: the usual case), none
    can clash — each is its own — and the check's join of every staged row is skipped."""
    if cursor.rowcount == staged:
        return False
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
    from .writing import IngestError  # writing imports this module

    if clashes:
        first = min(clashes)
        raise IngestError(
            f"tag set {tag_sets[first]!r} shares its digest with {stored.get(first)!r}; "
            "this import cannot be stored (please report it)"
        )


def _clash_signatures(signatures: dict, clashes: list, stored: dict) -> None:
    from .writing import IngestError

    if clashes:
        first = min(clashes)
        raise IngestError(
            f"line signature {_key(signatures[first])!r} shares its digest with {stored.get(first)!r}; "
            "this import cannot be stored (please report it)"
        )
