"""The `metadata` JSON column of a LiteLLM_SpendLogs CSV, for the gateway column reader (gateway/columns.py): the
fields gateway/log.py reads of it (who sent a request, its status, its cache tokens), parsed by Arrow's JSON reader
with a fixed schema, once per distinct text of a batch.

Arrow's JSON reader was the reader's biggest cost (2.4 s of CPU for the 110 MB of metadata of a busy day's 1M
requests, more than Arrow's CSV reading of the whole file): a LiteLLM log repeats its metadata texts — a busy
day's batch of 12k requests holds ~6k distinct ones, as most say only `{"usage_object": {"prompt_tokens_details":
{"cached_tokens": 0}}}` and a key's alias — so each distinct text is parsed once (the same text is the same JSON:
exact by construction) and its fields taken back to the rows. Where nearly every text differs (a proxy whose
`usage_object` repeats each request's token counts) finding the distinct texts costs more than it saves, so it is
skipped for a while and tried again now and then (`_Metadata.PROBE`).
"""

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pjson

from ingest.connectors.base import BatchDeclined as Declined
from ingest.connectors.gateway.values import CACHE_READS, CACHE_WRITES

JSON_BLOCK_BYTES = 1 << 20  # metadata parsed in blocks of this size, in parallel; a longer cell is read row by row
# What gateway_log reads of `metadata`, as Arrow's JSON reader is to read it (anything else in it is ignored).
META_NAMES = (
    "user_api_key_hash",
    "user_api_key_user_id",
    "user_api_key_team_id",
    "user_api_key_team_alias",
    "user_api_key_alias",
    "status",
    "status_code",
)
_COUNT = pa.int64()


def _counts_schema(paths) -> list:
    """The nested struct fields that hold `paths` (gateway_values.CACHE_READS …), each leaf a count."""
    tree: dict = {}
    for path in paths:
        node = tree
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node.setdefault(path[-1], None)

    def fields(node: dict) -> list:
        return [(name, _COUNT if child is None else pa.struct(fields(child))) for name, child in node.items()]

    return fields(tree)


META_SCHEMA = pa.schema(
    [
        *[(name, pa.string()) for name in META_NAMES],
        *_counts_schema(CACHE_READS + CACHE_WRITES),
        ("spend_logs_metadata", pa.null()),  # an object here: Arrow refuses it, the file is read row by row
    ]
)


class _Metadata:
    """Reads each batch's metadata column (`read`), deciding per batch whether to parse its distinct texts only."""

    SHARED = 0.7  # parse the distinct texts when they are at most this share of a batch's rows …
    PROBE = 8  # … and, after a batch where they were not, count them again only every PROBE batches

    def __init__(self):
        self.skip = 0  # batches left before the distinct texts are counted again

    def read(self, column: pa.Array | None, n: int) -> "MetadataFields | None":
        if column is None:
            return None
        trimmed = pc.utf8_trim_whitespace(column)
        empty = pc.or_(pc.equal(trimmed, ""), pc.equal(trimmed, "null"))
        text = pc.if_else(empty, pa.scalar("{}"), column) if pc.any(empty).as_py() else column
        if self.skip:
            self.skip -= 1
            return MetadataFields(_parsed(text), None)
        encoded = pc.dictionary_encode(text)
        if len(encoded.dictionary) > self.SHARED * n:
            self.skip = self.PROBE - 1
            return MetadataFields(_parsed(text), None)
        return MetadataFields(_parsed(encoded.dictionary), encoded.indices)


class MetadataFields:
    """The fields of a batch's metadata: `table` (META_SCHEMA's columns) has a row per distinct text, `rows` giving
    each row's (None: a row per row)."""

    def __init__(self, table: pa.Table, rows: pa.Array | None):
        self.table, self.rows = table, rows

    def _per_row(self, column: pa.Array) -> pa.Array:
        return column if self.rows is None else column.take(self.rows)

    def field(self, name: str) -> pa.Array:
        return self._per_row(self.table.column(name).combine_chunks())

    def first_count(self, paths) -> pa.Array | None:
        """Per row, the first of `paths` (nested count fields, ("usage_object", "prompt_tokens_details",
        "cached_tokens") …) that is not null, null when none is (ingest/connectors/gateway/fields.first_count's
        order); computed per distinct text."""
        present = [column for column in (self._path(path) for path in paths) if column is not None]
        if not present:
            return None
        return self._per_row(pc.coalesce(*present) if len(present) > 1 else present[0])

    def _path(self, path: tuple) -> pa.Array | None:
        """A nested field, null where any parent is; None where it is null in every row (nothing to coalesce)."""
        column = self.table.column(path[0]).combine_chunks()
        for name in path[1:]:
            if column.null_count == len(column):
                return None
            child = pc.struct_field(column, name)
            if column.null_count:  # null where the struct itself is (whatever the Arrow version's struct_field does)
                child = pc.if_else(pc.is_valid(column), child, pa.scalar(None, child.type))
            column = child
        return None if column.null_count == len(column) else column


def _parsed(text: pa.Array) -> pa.Table:
    """Each text parsed by Arrow into META_SCHEMA's columns, a row per text; anything but one JSON object per text
    declines (the row reader names the record)."""
    lines = pc.binary_join_element_wise(text, pa.scalar("\n"), "")
    offsets, data = lines.buffers()[1], lines.buffers()[2]
    bounds = np.frombuffer(offsets, dtype=np.int32, count=len(lines) + 1, offset=lines.offset * 4)
    body = data[bounds[0] : bounds[-1]] if data is not None else pa.py_buffer(b"")
    table = pjson.read_json(
        pa.BufferReader(body),
        read_options=pjson.ReadOptions(block_size=JSON_BLOCK_BYTES),
        parse_options=pjson.ParseOptions(
            explicit_schema=META_SCHEMA, unexpected_field_behavior="ignore", newlines_in_values=False
        ),
    )
    if table.num_rows != len(text):
        raise Declined("a metadata cell that is not one JSON object")
    return table
