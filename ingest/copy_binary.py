"""Postgres binary COPY written from columns (numpy, Arrow): no Python object per row, and nothing for Postgres to
parse.

A CSV COPY has Postgres parse every value from text — timestamps, NUMERIC amounts, bigint[] arrays — which on a
gateway log of a line per request cost as much server CPU as the row writer's binary COPY saved in Python
(docs/ingestion.md). psycopg writes binary COPY rows too (`Copy.set_types` + `write_row`), but row by row in
Python. Here each column is encoded at once into its fields — a field is an int32 length (-1: NULL) then the value
in Postgres' binary ("send") format, big-endian — as an Arrow binary array of one entry per row, and the rows are
the element-wise concatenation of a field count and their fields (`rows`), done by Arrow in C++.

Each encoder returns one entry per row holding one or more whole fields; `fixed` packs several fixed-width fields
into a numpy structured array. The formats, from Postgres' *send/*recv functions:
- bigint: 8 bytes. timestamptz: bigint microseconds since 2000-01-01 00:00 UTC.
- text, varchar: the UTF-8 bytes (varchar's length limit is checked on receipt, as for text input).
- numeric: int16 ndigits, int16 weight, uint16 sign, uint16 dscale, then ndigits base-10,000 digits, the first of
  weight `weight`. Postgres truncates to `dscale` then applies the column's typmod (rounds to its scale) exactly as
  numeric_in does for text, so a value sent with all its digits and dscale = its fraction digits is stored as the
  same text would be.
- bigint[]: int32 ndim (1), int32 has-nulls (0), int32 element type (20, int8), int32 length, int32 lower bound (1),
  then per element an int32 length (8) and the bigint.
"""

from decimal import Decimal, InvalidOperation

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

SIGNATURE = b"PGCOPY\n\xff\r\n\x00" + bytes(8)  # the signature, no flags, no header extension
TRAILER = b"\xff\xff"
NULL = b"\xff\xff\xff\xff"  # a NULL field: length -1, no bytes
PG_EPOCH_S = 946_684_800  # 2000-01-01 00:00 UTC in Unix seconds
_INT8_OID = 20
_NUMERIC_POS, _NUMERIC_NEG = 0x0000, 0x4000
_EMPTY = pa.scalar(b"", pa.binary())

BIGINT = [(">i4", ">i8")]  # fixed(): a bigint field's length and value


def text(value: str) -> bytes:
    """A constant text field."""
    data = value.encode()
    return len(data).to_bytes(4, "big") + data


def bigint(value: int) -> bytes:
    """A constant bigint field."""
    return b"\x00\x00\x00\x08" + value.to_bytes(8, "big", signed=True)


def fixed(*fields) -> pa.BinaryArray:
    """Fixed-width fields, one entry per row: each of `fields` is a numpy array (a bigint field of each value; a
    timestamptz is a bigint: `timestamptz_us`) or bytes (the same encoded field(s) in every row)."""
    n = next(len(f) for f in fields if not isinstance(f, bytes))
    layout, values = [], {}
    for i, field in enumerate(fields):
        if isinstance(field, bytes):
            layout.append((f"c{i}", f"S{len(field)}"))
            values[f"c{i}"] = field
        else:
            layout += [(f"l{i}", ">i4"), (f"v{i}", ">i8")]
            values[f"l{i}"], values[f"v{i}"] = 8, field
    packed = np.empty(n, dtype=np.dtype(layout))  # packed: numpy aligns nothing unless asked
    for name, value in values.items():
        packed[name] = value
    return _binary(packed.view(np.uint8), np.full(n, packed.dtype.itemsize))


def timestamptz_us(unix_seconds: np.ndarray) -> np.ndarray:
    """timestamptz values (as bigints for `fixed`) of instants given in Unix seconds."""
    return (unix_seconds.astype(np.int64) - PG_EPOCH_S) * 1_000_000


def bigints(values: pa.Array) -> pa.BinaryArray:
    """A bigint field per row of an int64 array, NULL where null."""
    fields = fixed(pc.fill_null(values, 0).to_numpy(zero_copy_only=False))
    return fields if not values.null_count else pc.if_else(pc.is_valid(values), fields, pa.scalar(NULL, pa.binary()))


def texts(values: pa.Array) -> pa.BinaryArray:
    """A text field per row of a string array without nulls."""
    if values.null_count:
        raise ValueError("texts: a null value (NULL text is not written here)")
    lengths = pc.binary_length(values).to_numpy(zero_copy_only=False).astype(">i4")
    return pc.binary_join_element_wise(
        _binary(lengths.view(np.uint8), np.full(len(values), 4)), values.cast(pa.binary()), _EMPTY
    )


def numerics(values: pa.Array) -> pa.BinaryArray:
    """A numeric field per row of decimal texts (as str(Decimal) writes them, exponent included), NULL where null."""
    valid = pc.is_valid(values)
    values = pc.fill_null(values, "0")
    exponent = pc.match_substring(values, "E", ignore_case=True)
    if pc.any(exponent).as_py():  # a tiny or huge Decimal's str: written out in full (rare; Python)
        texts_ = values.to_pylist()
        for i in np.flatnonzero(exponent.to_numpy(zero_copy_only=False)).tolist():
            try:
                texts_[i] = format(Decimal(texts_[i]), "f")
            except InvalidOperation:
                raise ValueError(f"numerics: {texts_[i]!r} is not a decimal number") from None
        values = pa.array(texts_, pa.string())
    fields = _numerics_aligned(values)
    if fields is None:
        fields = _numerics_ragged(values)
    return pc.if_else(valid, fields, pa.scalar(NULL, pa.binary()))


# A plain decimal's parts (numerics): sign, integer digits (at least one), fraction digits after a point (maybe none).
_PARTS = r"^(?P<minus>-?)(?P<integer>[0-9]+)(?:\.(?P<fraction>[0-9]*))?$"
_ALIGNED_DIGITS = 48  # numerics aligns values of at most this many integer and as many fraction digits (amounts)
_GROUP_DIGITS = np.array([1000, 100, 10, 1], dtype=np.int16)


def _numerics_aligned(values: pa.Array) -> pa.BinaryArray | None:
    """numerics of non-null plain decimal texts, the values aligned on their decimal point in a fixed-width byte matrix
    (numpy over a few bytes a value, no per-digit index arrays: a 16k-row batch of the bench's costs 13 → 8 ms with
    its exponent forms, load 9); the same fields as `_numerics_ragged`. None when a value has more digits than
    _ALIGNED_DIGITS on either side of its point."""
    n = len(values)
    parts = pc.extract_regex(values, _PARTS)
    if parts.null_count:
        raise ValueError("numerics: a value that is not a plain decimal number")
    minus, integer, fraction = (parts.field(name) for name in ("minus", "integer", "fraction"))
    integer_digits = pc.utf8_length(integer).to_numpy(zero_copy_only=False).astype(np.int64)
    scale = pc.utf8_length(fraction).to_numpy(zero_copy_only=False).astype(np.int64)  # dscale, as text input gives
    if n == 0 or integer_digits.max() > _ALIGNED_DIGITS or scale.max() > _ALIGNED_DIGITS:
        return None if n else pa.array([], pa.binary())
    left, right = -(-int(integer_digits.max()) // 4), -(-int(scale.max()) // 4)  # base-10,000 digits either side
    aligned = pc.binary_join_element_wise(
        pc.utf8_lpad(integer, 4 * left, "0"), pc.utf8_rpad(fraction, 4 * right, "0") if right else "", ""
    )
    data = np.frombuffer(aligned.buffers()[2], dtype=np.uint8, count=n * 4 * (left + right), offset=0)
    groups = (data.reshape(n, left + right, 4).astype(np.int16) - 48) @ _GROUP_DIGITS  # (n, left + right)
    # Row i keeps the groups of weights top..bottom, as `_numerics_ragged` writes them (leading and trailing zero
    # groups included: Postgres strips them on receipt).
    top, bottom = (integer_digits - 1) // 4, -((scale + 3) // 4)
    ndigits = top - bottom + 1
    column = np.arange(left + right)
    kept = (column >= (left - 1 - top)[:, None]) & (column <= (left - 1 - bottom)[:, None])
    head = np.empty(n, dtype=[("l", ">i4"), ("n", ">i2"), ("w", ">i2"), ("s", ">u2"), ("d", ">u2")])
    head["l"], head["n"], head["w"] = 8 + 2 * ndigits, ndigits, top
    negative = pc.equal(minus, "-").to_numpy(zero_copy_only=False)
    head["s"], head["d"] = np.where(negative, _NUMERIC_NEG, _NUMERIC_POS), scale
    return pc.binary_join_element_wise(
        _binary(head.view(np.uint8), np.full(n, head.dtype.itemsize)),
        _binary(groups[kept].astype(">i2").view(np.uint8), 2 * ndigits),
        _EMPTY,
    )


def _numerics_ragged(values: pa.Array) -> pa.BinaryArray:
    """numerics of non-null decimal texts of any length, digit by digit."""
    n = len(values)
    flat, lengths = _ragged(values)
    row = np.repeat(np.arange(n), lengths)
    pos = np.arange(len(flat)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    digit, dot, minus = (flat >= 48) & (flat <= 57), flat == 46, flat == 45
    if not (digit | dot | (minus & (pos == 0))).all() or np.bincount(row[dot], minlength=n).max(initial=0) > 1:
        raise ValueError("numerics: a value that is not a plain decimal number")
    negative = np.zeros(n, dtype=bool)
    negative[row[minus]] = True
    point = lengths.copy()  # where each value's decimal point is (its length if it has none)
    point[row[dot]] = pos[dot]
    integer_digits = point - negative
    scale = np.maximum(lengths - point - 1, 0)  # fraction digits: the dscale text input would give
    if (integer_digits < 1).any():
        raise ValueError("numerics: a value without an integer digit")
    top, bottom = (integer_digits - 1) // 4, -((scale + 3) // 4)  # weights of the first and last base-10,000 digit
    ndigits = top - bottom + 1
    # Each decimal digit's power of ten, then its base-10,000 digit (slot) and the place within it.
    row, pos, flat = row[digit], pos[digit], flat[digit].astype(np.int64) - 48
    power = np.where(pos < point[row], point[row] - pos - 1, point[row] - pos)
    weight = power // 4
    starts = np.cumsum(ndigits) - ndigits
    slot = starts[row] + (top[row] - weight)
    groups = np.bincount(slot, weights=flat * 10 ** (power - 4 * weight), minlength=int(ndigits.sum()))
    head = np.empty(n, dtype=[("l", ">i4"), ("n", ">i2"), ("w", ">i2"), ("s", ">u2"), ("d", ">u2")])
    head["l"], head["n"], head["w"] = 8 + 2 * ndigits, ndigits, top
    head["s"], head["d"] = np.where(negative, _NUMERIC_NEG, _NUMERIC_POS), scale
    return pc.binary_join_element_wise(
        _binary(head.view(np.uint8), np.full(n, head.dtype.itemsize)),
        _binary(groups.astype(">i2").view(np.uint8), 2 * ndigits),
        _EMPTY,
    )


def bigint_arrays(values: np.ndarray, counts: np.ndarray) -> pa.BinaryArray:
    """A bigint[] field per row: row i's elements are the next `counts[i]` of `values`; NULL where it has none."""
    n = len(counts)
    head = np.empty(n, dtype=[(name, ">i4") for name in ("l", "ndim", "nulls", "oid", "dim", "lbound")])
    head["l"], head["ndim"], head["nulls"], head["oid"], head["dim"], head["lbound"] = (
        20 + 12 * counts,
        1,
        0,
        _INT8_OID,
        counts,
        1,
    )
    elements = np.empty(len(values), dtype=[("l", ">i4"), ("v", ">i8")])
    elements["l"], elements["v"] = 8, values
    fields = pc.binary_join_element_wise(
        _binary(head.view(np.uint8), np.full(n, head.dtype.itemsize)),
        _binary(elements.view(np.uint8), 12 * counts),
        _EMPTY,
    )
    return pc.if_else(pa.array(counts > 0), fields, pa.scalar(NULL, pa.binary()))


def rows(fields: list) -> pa.Buffer:
    """The COPY data of the rows (no signature nor trailer: see `SIGNATURE`, `TRAILER`). `fields` in order: arrays
    of one entry per row (each one or more whole fields, from the encoders above) or bytes (the same in every row:
    `field_count` first, then fields such as `text`, `bigint`, `NULL`)."""
    joined = joined_fields(fields)
    offsets = np.frombuffer(joined.buffers()[1], dtype=np.int32, count=len(joined) + 1, offset=4 * joined.offset)
    return joined.buffers()[2][int(offsets[0]) : int(offsets[-1])]


def joined_fields(fields: list) -> pa.BinaryArray:
    """Per row, its entries of `fields` (arrays of one entry per row, or bytes the same in every row) one after the
    other."""
    return pc.binary_join_element_wise(
        *(pa.scalar(f, pa.binary()) if isinstance(f, bytes) else f for f in fields), _EMPTY
    )


def field_count(count: int) -> bytes:
    """A row's first bytes: how many fields it has."""
    return count.to_bytes(2, "big")


def _binary(data: np.ndarray, lengths: np.ndarray) -> pa.BinaryArray:
    """A binary array whose entry i is the next lengths[i] bytes of `data` (zero copy)."""
    offsets = np.zeros(len(lengths) + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    return pa.BinaryArray.from_buffers(pa.binary(), len(lengths), [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def _ragged(values: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """A string array without nulls as (its bytes, one after the other; each entry's length)."""
    offsets = np.frombuffer(values.buffers()[1], dtype=np.int32, count=len(values) + 1, offset=4 * values.offset)
    data = (
        np.frombuffer(values.buffers()[2], dtype=np.uint8) if values.buffers()[2] is not None else np.zeros(0, np.uint8)
    )
    return data[offsets[0] : offsets[-1]], np.diff(offsets).astype(np.int64)
