"""Storing the tag sets and line signatures a run's lines point at (content-addressed: an id is its content's digest).

Postgres, set-based (issue 23): one `INSERT … SELECT FROM unnest(arrays) ORDER BY id ON CONFLICT DO NOTHING
RETURNING id` per table, then the digest-collision check in SQL for the ids that were already there. A file of
per-resource rows (a tag set and a signature per resource and meter) brings tens of thousands of new keys; through
the ORM's bulk_create and a read-back of every model instance they took ~59 % of a 300k-row Bedrock import.

- Sorted by id, so two imports storing overlapping new keys take their row locks in one order (no deadlock);
  the second waits on ON CONFLICT for the first to commit, then does nothing for those rows.
- The check is a second statement: under READ COMMITTED it sees rows another import committed while this one
  waited, which a check inside the INSERT's own statement (its snapshot) would not.
- A different set or signature under an id already stored (a digest collision) fails the run: never two sets
  merged under one id.
- A signature already stored keeps its workload and team (the last re-attribution set them; it equals the rules'
  answer unless a rule changed meanwhile, and that change's re-attribution settles it).

SQLite (the demo) keeps the plain ORM path: demo-sized, and the same rules.
"""

import json

from django.db import connection

from finops.models import LineSignature, TagSet

_TAG_SETS = TagSet._meta.db_table
_SIGNATURES = LineSignature._meta.db_table
# LineSignature's columns as stored: id, its key (LineSignature.KEY), then the attribution.
_SIGNATURE_COLUMNS = ("id", *LineSignature.KEY, "workload_id", "team_id")
_SIGNATURE_TYPES = ("bigint", "bigint", "bigint", "text", "text", "text", "text", "text", "bigint", "bigint", "bigint")


def new_keys_store(tag_sets: dict[int, dict], signatures: dict[int, LineSignature]) -> None:
    """Store the new tag sets and signatures lines point at: the sets first, as signatures name them."""
    tag_sets_store(tag_sets)
    signatures_store(signatures)


def tag_sets_store(tag_sets: dict[int, dict]) -> None:
    """Store the tag sets not stored yet; a different set under an existing id fails the run."""
    if not tag_sets:
        return
    if connection.vendor != "postgresql":
        TagSet.objects.bulk_create([TagSet(id=i, tags=tag_sets[i]) for i in sorted(tag_sets)], ignore_conflicts=True)
        stored = dict(TagSet.objects.filter(id__in=list(tag_sets)).values_list("id", "tags"))
        _clash_tags(tag_sets, [i for i, tags in tag_sets.items() if stored.get(i) != tags], stored)
        return
    ids = sorted(tag_sets)
    texts = [json.dumps(tag_sets[i]) for i in ids]
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {_TAG_SETS} (id, tags) SELECT id, tags::jsonb FROM unnest(%s::bigint[], %s::text[]) AS n(id, tags) "
            "ORDER BY id ON CONFLICT (id) DO NOTHING RETURNING id",
            [ids, texts],
        )
        inserted = {row[0] for row in cursor.fetchall()}
        kept = [(i, text) for i, text in zip(ids, texts) if i not in inserted]  # already there: the same set?
        if not kept:
            return
        cursor.execute(
            f"SELECT t.id, t.tags FROM unnest(%s::bigint[], %s::text[]) AS n(id, tags) JOIN {_TAG_SETS} t ON t.id = n.id "
            "WHERE t.tags <> n.tags::jsonb ORDER BY t.id",
            [[i for i, _ in kept], [text for _, text in kept]],
        )
        clashes = cursor.fetchall()
    _clash_tags(tag_sets, [i for i, _ in clashes], {i: _json(tags) for i, tags in clashes})


def signatures_store(signatures: dict[int, LineSignature]) -> None:
    """Store the signatures not stored yet, after their tag sets; a different signature under an existing id
    fails the run."""
    if not signatures:
        return
    if connection.vendor != "postgresql":
        LineSignature.objects.bulk_create([signatures[i] for i in sorted(signatures)], ignore_conflicts=True, batch_size=2000)
        stored = {s.id: s.key() for s in LineSignature.objects.filter(id__in=list(signatures)).only(*LineSignature.KEY)}
        _clash_signatures(signatures, [i for i, s in signatures.items() if stored.get(i) != s.key()], stored)
        return
    ordered = [signatures[i] for i in sorted(signatures)]
    columns = [[getattr(s, name) for s in ordered] for name in _SIGNATURE_COLUMNS]
    unnest = ", ".join(f"%s::{kind}[]" for kind in _SIGNATURE_TYPES)
    names = ", ".join(_SIGNATURE_COLUMNS)
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {_SIGNATURES} ({names}) SELECT {names} FROM unnest({unnest}) AS n({names}) "
            "ORDER BY id ON CONFLICT (id) DO NOTHING RETURNING id",
            columns,
        )
        inserted = {row[0] for row in cursor.fetchall()}
        kept = [i for i, s in enumerate(ordered) if s.id not in inserted]
        if not kept:
            return
        cursor.execute(
            f"SELECT s.id, {', '.join(f's.{c}' for c in LineSignature.KEY)} FROM unnest({unnest}) AS n({names}) "
            f"JOIN {_SIGNATURES} s ON s.id = n.id "
            f"WHERE ({', '.join(f's.{c}' for c in LineSignature.KEY)}) IS DISTINCT FROM ({', '.join(f'n.{c}' for c in LineSignature.KEY)}) "
            "ORDER BY s.id",
            [[column[i] for i in kept] for column in columns],
        )
        clashes = {row[0]: row[1:] for row in cursor.fetchall()}
    _clash_signatures(signatures, list(clashes), clashes)


def _json(value):
    return json.loads(value) if isinstance(value, str) else value


def _clash_tags(tag_sets: dict, clashes: list, stored: dict) -> None:
    from .writing import IngestError  # writing imports this module

    if clashes:
        first = min(clashes)
        raise IngestError(f"tag set {tag_sets[first]!r} shares its digest with {stored.get(first)!r}; "
                          "this import cannot be stored (please report it)")


def _clash_signatures(signatures: dict, clashes: list, stored: dict) -> None:
    from .writing import IngestError

    if clashes:
        first = min(clashes)
        raise IngestError(f"line signature {signatures[first].key()!r} shares its digest with {stored.get(first)!r}; "
                          "this import cannot be stored (please report it)")
