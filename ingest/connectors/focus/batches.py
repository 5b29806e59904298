"""FOCUS CSV exports read as columns (pyarrow), for speed: the same rows focus/file.py reads one by one.

Per-row Python costs ~30 µs a line; a million-line monthly export needs the work done in columns. Values
that vary per row (costs, quantities, refs) are handled as Arrow arrays; what repeats (meters, periods,
units, tags, models) is interpreted once per distinct combination by focus/format.py's functions (shared with
focus/file.py), so the
two readers cannot disagree on what a meter, a unit or a tag set means.

The batch reader only takes what it can read exactly. Anything else — a value that would be an error, an
exponent or other rare number form, padded or "null" cells, Parquet, a ragged row — raises `Declined`, and the
import reads the whole file again row by row (ingest/services.py), which handles it or names the line.
tests/ingest/test_focus_batches.py holds the two readers to the same lines on every FOCUS fixture.
"""

import csv
import gzip
import io
import zlib

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv

from ingest.connectors.base import BatchDeclined as Declined
from ingest.connectors.base import RowBatch
from ingest.connectors.focus.format import (
    CHARGE_CATEGORIES,
    GZIP_MAGIC,
    METER_COLUMNS,
    NULLS,
    OWN_TOKEN_COLUMNS,
    PARQUET_MAGIC,
    ZIP_MAGIC,
    Prefixed,
    analyse,
    read_up_to,
    resolve_header,
)
from ingest.connectors.focus.meters import CACHE_READ, CACHE_WRITE, INPUT, OUTPUT, unit_of
from ingest.connectors.focus.scope import SCOPE_COLUMNS, LeftOut, Scope
from ingest.connectors.focus.values import TAG_COLUMNS, charge_periods, currency_code, tag_set_items
from ingest.connectors.text_input import bounded_decompressed

BLOCK_BYTES = 1 << 22  # ~5k rows of a typical export a block: memory stays flat
# Blocks are read together into batches of at least this many rows: what a batch repeats (its distinct meters, tag
# sets and signatures looked up again, ~200 Arrow calls) cost ~10 ms a batch, a fifth of the hourly file's Python at
# ~5k rows. Larger Arrow blocks did the same but the process's RSS then grew with the file (1M lines: 900 MB).
BATCH_ROWS = 16_384
SEPARATOR = "\x1f"  # joins a row's cells into one key; a file with a cell holding it is declined
_NULL_MARKERS = pa.array(["null", "NULL", "Null"])
# Columns read per row (not through a memo): cleaned as whole columns.
_CLEANED = (
    "BilledCost",
    "ChargeCategory",
    "ConsumedQuantity",
    "PricingQuantity",
    "ResourceName",
    "ResourceId",
    "SubAccountId",
    "x_ProjectId",
    "x_ProjectName",
    "CredentialId",
    "PrincipalId",
    "InvoiceId",
)
# Numbers the batch reader takes as they are: what Postgres and Decimal read alike, within the columns' range
# (a negative exponent, as in `9.324e-05`, only shrinks a value; a positive one could overflow: declined).
_COST = r"^-?[0-9]{1,20}(\.[0-9]+)?([eE]-[0-9]{1,3})?$"
_QUANTITY = r"^-?[0-9]{1,9}(\.[0-9]{1,9})?$"  # negative: a refund or correction
_QUANTITY_TYPE = pa.decimal128(18, 9)  # × a block (decimal128(19, 0), as Arrow casts int64): within 38 digits


def focus_csv_batches(stream, *, file_name: str, scope: Scope | None = None, left_out: LeftOut | None = None):
    """Yield a RowBatch per block of a FOCUS CSV (or CSV.gz) export; raise Declined for anything unusual.

    With a `scope`, only the rows it keeps; the others are counted into `left_out` (focus/scope.py)."""
    if left_out is not None:
        left_out.clear()
    head = read_up_to(stream, 4)
    if not head or head in (PARQUET_MAGIC, ZIP_MAGIC):
        raise Declined("empty, Parquet or ZIP: the row reader reads or refuses it")
    binary = io.BufferedReader(Prefixed(head, stream), 1 << 16)
    if head[:2] == GZIP_MAGIC:
        binary = io.BufferedReader(bounded_decompressed(binary, file_name), 1 << 16)
    try:
        yield from _batches(binary, file_name, scope, left_out if left_out is not None else LeftOut())
    except (gzip.BadGzipFile, EOFError, zlib.error, UnicodeDecodeError, pa.ArrowInvalid) as exc:
        raise Declined(str(exc)) from None


def _batches(binary, file_name: str, scope: Scope | None, left_out: LeftOut):
    prefix = read_up_to(binary, 1 << 16)
    if prefix.startswith(b"\xef\xbb\xbf"):
        prefix = prefix[3:]
    first_line = prefix.split(b"\n", 1)[0]
    if b'"' in first_line or len(first_line) == len(prefix):
        raise Declined("a quoted or very long header")
    header = next(csv.reader([first_line.decode("utf-8").rstrip("\r")]))
    index = resolve_header(header, file_name)  # missing columns: the same ProviderError as the row reader
    if len(set(header)) != len(header):
        raise Declined("repeated column names")
    if any(name in index for name in OWN_TOKEN_COLUMNS):
        raise Declined("this product's own FOCUS export: the row reader takes its token classes from their columns")
    names = {canonical: header[position] for canonical, position in index.items()}
    source = _NulWatch(prefix, binary)
    reader = pcsv.open_csv(
        source,
        read_options=pcsv.ReadOptions(block_size=BLOCK_BYTES),
        parse_options=pcsv.ParseOptions(newlines_in_values=True),
        convert_options=pcsv.ConvertOptions(
            column_types={name: pa.string() for name in header},
            include_columns=sorted(set(names.values())),
            strings_can_be_null=False,
            quoted_strings_can_be_null=False,
        ),
    )
    memos = _Memos(scope)
    for batch in _gathered(reader):
        if source.nul:  # read by Arrow before any row of its blocks is yielded
            raise Declined("a NUL byte")  # the row reader refuses the line that holds it, and names it
        if scope is not None:
            batch = _kept(batch, names, memos, left_out)
        if batch.num_rows:
            yield _read(batch, names, memos)
    if source.nul:
        raise Declined("a NUL byte")


def _gathered(reader):
    """The reader's blocks, gathered into record batches of at least BATCH_ROWS rows (the last may have fewer)."""
    blocks, rows = [], 0
    for block in reader:
        if block.num_rows:
            blocks.append(block)
            rows += block.num_rows
        if rows >= BATCH_ROWS:
            yield pa.concat_batches(blocks) if len(blocks) > 1 else blocks[0]
            blocks, rows = [], 0
    if rows:
        yield pa.concat_batches(blocks) if len(blocks) > 1 else blocks[0]


class _NulWatch:
    """The file's bytes for Arrow's CSV reader (the sniffed prefix, then the stream), noting any NUL byte on the way.

    The row reader refuses a line holding a NUL byte anywhere (text_input.bounded_lines); one scan of each block
    read (memchr) costs nothing beside a search of every parsed column of every batch (~15 % of the reader)."""

    closed = False

    def __init__(self, prefix: bytes, stream):
        self._prefix, self._stream, self.nul = prefix, stream, False

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        if size < 0:
            chunk, self._prefix = self._prefix + self._stream.read(), b""
        elif self._prefix:
            chunk, self._prefix = self._prefix[:size], self._prefix[size:]
        else:
            chunk = self._stream.read(size)
        if b"\x00" in chunk:
            self.nul = True
        return chunk


def _kept(batch: pa.RecordBatch, names: dict[str, str], memos: "_Memos", left_out: LeftOut) -> pa.RecordBatch:
    """The rows the account's scope keeps; the others counted into `left_out`, cost summed exactly in columns."""
    columns = [batch.column(names[name]) if name in names else None for name in SCOPE_COLUMNS]
    if all(column is None for column in columns):
        columns[0] = pa.nulls(batch.num_rows, pa.string()).fill_null("")
    decision_of, decisions = memos.scope(columns)
    kept = pc.take(pa.array([decision.kept for decision in decisions], pa.bool_()), decision_of)
    if pc.all(kept).as_py():
        return batch
    dropped = pc.invert(kept)
    cost = _clean(batch.column(names["BilledCost"]).filter(dropped))
    if not pc.all(pc.match_substring_regex(cost, _COST)).as_py():
        raise Declined("a BilledCost the row reader must read")
    try:
        amounts = cost.cast(pa.decimal128(38, 18))  # exact, or ArrowInvalid when it would round
    except pa.ArrowInvalid:
        raise Declined("a left-out cost with more than 18 decimals") from None
    currency_of, currencies = memos.currency([batch.column(names["BillingCurrency"]).filter(dropped)])
    groups = (
        pa.table({"scope": decision_of.filter(dropped), "currency": currency_of, "cost": amounts})
        .group_by(["scope", "currency"])
        .aggregate([("cost", "sum"), ("cost", "count")])
    )
    for scope_index, currency_index, total, count in zip(*(column.to_pylist() for column in groups.columns)):
        decision = decisions[scope_index]
        left_out.add(decision.service, decision.reason, currencies[currency_index], count, total)
    return batch.filter(kept)


class _Memo:
    """`interpret(*cells)` of each distinct combination of cells, remembered across the file's batches (bounded).

    Columns the file lacks are given as None and read as "" (they cost nothing to join). With `clean`, cells
    are read as the row reader's cells are: a "null" marker is empty, and a padded cell declines the file.
    """

    LIMIT = 65536

    def __init__(self, interpret, *, clean: bool = True):
        self.interpret, self.clean, self.answers = interpret, clean, {}

    def __call__(self, columns: list[pa.Array | None]) -> tuple[pa.Array, list]:
        """Each row's index into the answers, and the answers (one per distinct combination in the batch)."""
        present = [i for i, column in enumerate(columns) if column is not None]
        if not present:
            raise Declined("none of the columns a row is interpreted by")
        parts = [columns[i] for i in present]
        joined = parts[0] if len(parts) == 1 else pc.binary_join_element_wise(*parts, SEPARATOR)
        encoded = pc.dictionary_encode(joined)
        answers = []
        for key in encoded.dictionary.to_pylist():
            try:
                answers.append(self.answers[key])
            except KeyError:
                given = key.split(SEPARATOR)
                if len(given) != len(present):
                    raise Declined("a cell holding the key separator") from None
                cells = [""] * len(columns)
                for i, cell in zip(present, given):
                    cells[i] = _cell(cell) if self.clean else cell
                answer = _call(self.interpret, *cells)
                if len(self.answers) >= self.LIMIT:
                    self.answers.clear()
                self.answers[key] = answer
                answers.append(answer)
        return encoded.indices, answers


def _cell(text: str) -> str:
    if text in NULLS:
        return ""
    if text != text.strip():
        raise Declined("a cell with spaces around it")
    return text


class _Memos:
    """One file's interpretations of what repeats, by focus/format.py's functions."""

    def __init__(self, scope: Scope | None = None):
        self.scope = _Memo(scope.decide if scope else None)
        self.meter = _Memo(lambda *cells: analyse(cells), clean=False)  # analyse reads raw cells, as in focus_file
        self.period = _Memo(charge_periods)
        self.currency = _Memo(currency_code)
        self.unit_plan = _Memo(_unit_plan)
        self.tags = _Memo(lambda *cells: dict(tag_set_items(cells[:-2], cells[-2], cells[-1])))


def _read(batch: pa.RecordBatch, names: dict[str, str], memos: _Memos) -> RowBatch:
    """Columns interpreted per distinct combination (memos) are read raw; the rest are cleaned here."""
    n = batch.num_rows
    blank = pa.nulls(n, pa.string()).fill_null("")
    raw = {canonical: batch.column(column) for canonical, column in names.items()}
    cleaned = {canonical: _clean(raw[canonical]) for canonical in _CLEANED if canonical in raw}

    def get(name: str) -> pa.Array:
        return cleaned.get(name, blank)

    def cells(*columns: str) -> list[pa.Array | None]:
        return [raw.get(name) for name in columns]

    meter_of, meters = memos.meter(_meter_cells(cells(*METER_COLUMNS)))

    def by_meter(values: list, kind=None) -> pa.Array:
        return pc.take(pa.array(values, kind or pa.string()), meter_of)

    period_of, periods = memos.period(
        cells("ChargePeriodStart", "ChargePeriodEnd", "BillingPeriodStart", "BillingPeriodEnd")
    )

    def by_period(part: int) -> pa.Array:
        return pc.take(pa.array([p[part] for p in periods], pa.timestamp("us", tz="UTC")), period_of)

    if not pc.all(pc.match_substring_regex(get("BilledCost"), _COST)).as_py():
        raise Declined("a BilledCost the row reader must read")
    currency_of, currencies = memos.currency(cells("BillingCurrency"))
    category = pc.utf8_lower(get("ChargeCategory"))  # "null" or padded: not a category, declined below
    if not pc.all(pc.is_in(category, pa.array(sorted(CHARGE_CATEGORIES)))).as_py():
        raise Declined("an unknown ChargeCategory")

    tokens, requests, direction = _quantities(
        get,
        raw,
        memos,
        by_meter([m.is_token_meter for m in meters], pa.bool_()),
        by_meter([m.direction for m in meters]),
    )
    meter_raw = by_meter([m.raw for m in meters])
    tag_of, tag_sets = memos.tags(
        [*cells("Tags", *TAG_COLUMNS, "ChargeClass"), meter_raw, _first(get("ResourceName"), get("ResourceId"))]
    )

    zero = pa.scalar(0, pa.int64())
    return RowBatch(
        period_start=by_period(0),
        period_end=by_period(1),
        billing_period_start=by_period(2),
        billing_period_end=by_period(3),
        model_raw=by_meter([m.model for m in meters]),
        input_tokens=pc.if_else(pc.equal(direction, INPUT), tokens, zero),
        cached_input_tokens=pc.if_else(pc.equal(direction, CACHE_READ), tokens, zero),
        cache_write_tokens=pc.if_else(pc.equal(direction, CACHE_WRITE), tokens, zero),
        output_tokens=pc.if_else(pc.equal(direction, OUTPUT), tokens, zero),
        requests=requests,
        cost=get("BilledCost"),
        currency=pc.take(pa.array(currencies, pa.string()), currency_of),
        provider_slug=by_meter([m.provider_slug for m in meters]),
        service_tier=by_meter([m.tier for m in meters]),
        project_ref=_first(get("SubAccountId"), get("x_ProjectId"), get("x_ProjectName")),
        api_key_ref=get("CredentialId"),
        user_ref=get("PrincipalId"),
        invoice_id=get("InvoiceId"),
        tag_set_of=tag_of,
        tag_sets=tag_sets,
        charge_category=category,
    )


def _unit_plan(consumed_unit: str, pricing_unit: str, is_token: str, has_consumed: str, has_pricing: str) -> tuple:
    """(quantity column 0 | 1 | None, kind, block): the column and unit token_quantity would count."""
    for column, (unit, present) in enumerate(((consumed_unit, has_consumed), (pricing_unit, has_pricing))):
        kind, block = unit_of(unit, is_token == "true")
        if present == "true" and kind is not None:
            if block != block.to_integral_value() or not 0 < block < 10**7:
                raise Declined(f"a unit block of {block}")
            return column, kind, int(block)
    return None, None, 0


def _quantities(
    get, raw: dict, memos: _Memos, token_meter: pa.Array, meter_direction: pa.Array
) -> tuple[pa.Array, pa.Array, pa.Array]:
    """(tokens, requests, direction) per row: token_quantity's choice of column and unit, then exact arithmetic."""
    consumed, pricing = get("ConsumedQuantity"), get("PricingQuantity")
    plan_of, plans = memos.unit_plan(
        [
            raw.get("ConsumedUnit"),
            raw.get("PricingUnit"),
            token_meter.cast(pa.string()),
            pc.not_equal(consumed, "").cast(pa.string()),
            pc.not_equal(pricing, "").cast(pa.string()),
        ]
    )
    column = pc.take(pa.array([p[0] for p in plans], pa.int8()), plan_of)
    kind = pc.take(pa.array([p[1] for p in plans], pa.string()), plan_of)
    block = pc.take(pa.array([p[2] for p in plans], pa.int64()), plan_of)
    text = pc.if_else(pc.equal(column, 1), pricing, pc.if_else(pc.equal(column, 0), consumed, pa.scalar("0")))
    if not pc.all(pc.match_substring_regex(text, _QUANTITY)).as_py():
        raise Declined("a quantity the row reader must read (exponent or very precise)")
    counted = pc.multiply(text.cast(_QUANTITY_TYPE), block.cast(pa.decimal128(19, 0)))
    # Half away from zero, as Decimal's ROUND_HALF_UP in the row reader (a refund's -2.5 tokens is -3 in both).
    counts = pc.round(counted, 0, round_mode="half_towards_infinity").cast(pa.int64())
    zero = pa.scalar(0, pa.int64())
    direction = pc.if_else(pc.equal(kind, "tokens"), meter_direction, pa.scalar(None, pa.string()))
    if pc.any(pc.and_(pc.equal(kind, "tokens"), pc.is_null(direction))).as_py():
        raise Declined("a token row with no direction (the row reader names it)")
    return (
        pc.if_else(pc.equal(kind, "tokens"), counts, zero).fill_null(0),
        pc.if_else(pc.equal(kind, "requests"), counts, zero).fill_null(0),
        direction.fill_null(""),
    )


# --- helpers ---


def _clean(column: pa.Array) -> pa.Array:
    """ "null" markers read as empty, as in the row reader; padded cells (which it strips) are declined."""
    if pc.any(pc.not_equal(pc.utf8_trim_whitespace(column), column)).as_py():
        raise Declined("a cell with spaces around it")
    return pc.if_else(pc.is_in(column, _NULL_MARKERS), pa.scalar(""), column)


def _first(*columns: pa.Array) -> pa.Array:
    """Per row, the first non-empty cell of `columns` (the row reader's `a or b or c`)."""
    result = columns[-1]
    for column in reversed(columns[:-1]):
        result = pc.if_else(pc.not_equal(column, ""), column, result)
    return result


_RESOURCE_NAME_AT = METER_COLUMNS.index("ResourceName")
_GUID = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


def _meter_cells(columns: list[pa.Array | None]) -> list[pa.Array | None]:
    """The meter key's cells, the resource name blanked where it holds no GUID: the analysis reads a resource name
    only for an Azure Marketplace `<model>-<GUID>` (focus_meters.meter_model), and per-resource files would
    otherwise analyse the same meter once per resource (5,000 profiles: ~16k analyses instead of ~900)."""
    name = columns[_RESOURCE_NAME_AT]
    if name is not None:
        columns = list(columns)
        columns[_RESOURCE_NAME_AT] = pc.if_else(pc.match_substring_regex(name, _GUID, ignore_case=True), name, "")
    return columns


def _call(function, *args):
    try:
        return function(*args)
    except (ValueError, TypeError, ArithmeticError) as exc:  # the row reader will name the line
        raise Declined(str(exc)) from None
