"""FOCUS 1.0 / 1.2 / 1.3 Cost-and-Usage exports (CSV, CSV.gz, Parquet): one UsageRow per FOCUS row.

reference/provider-formats.md §3 (FOCUS), §4.4 (AWS "FOCUS with AWS columns"), §5.1 (Azure FOCUS export),
§5.2 (GCP) and §3.6 (AI token usage in FOCUS).

- The container is told by its first bytes, not its name: `PAR1` = Parquet (read batch by batch with
  `ParquetFile.iter_batches`), `1f 8b` = gzip (CSV inside), anything else = CSV. Rows are yielded one at a
  time, so memory stays flat however long the file is.
- Money: `BilledCost` (invoice basis, not amortised) as an exact Decimal in `BillingCurrency`; `mEn` scientific
  notation is accepted. Parquet doubles go through their shortest repr, never through float arithmetic.
- Periods: `ChargePeriodStart/End` (UTC, half-open); `BillingPeriodStart/End` go on the row so an import can
  replace whole billing periods (a restated month replaces the earlier one).
- Tokens: only when `ConsumedUnit` (else `PricingUnit`) says tokens: `Tokens` ×1, `1K tokens`/`1000 Tokens`/`1K`
  ×1,000, `1M tokens`/`1000000 Tokens`/`1M` ×1,000,000 (bare `1K`/`1M`/`Units`/`count` count only when the meter
  itself is a token meter). A fractional result is rounded half-up to a whole token (counts, not money).
  `Token-Hours` (cache storage) are not token counts: the row keeps its cost and no tokens. Bedrock Marketplace
  `Units` are taken as one token each; the reference marks that unit unverified (§4.3), so check it against
  BilledCost / unit price on a real export. A `Request(s)` unit fills `requests`.
- Direction (input / output / cache read / cache write), in this order: `SkuPriceDetails` (`TokenType`, or
  `TokenDirection` + `TokenCacheAction`, FOCUS AI draft), the AWS usage type (`x_UsageType` or `SkuMeter`:
  `*-input-tokens`, `*-output-tokens`, `*-cache-read-input-token-count`, `*-cache-write-input-token-count`,
  mantle and Marketplace `MP:` forms), then the meter words (`SkuMeter`, `x_SkuMeterName`, `x_SkuDescription`,
  `ChargeDescription`: Azure `Inp/Inpt/Outp/outpt/opt/cached Inp`, GCP `Text Input`/`Text Output`/`Input Text
  Caching`, `Input Tokens`/`Cache Read Input Tokens`, `model, input`). A token row whose direction cannot be
  told stops the file: guessing would misstate $/M tokens.
- Model, best effort (the raw meter string is kept in `tags["meter"]`): `SkuPriceDetails.ModelId`, `x_Model*`
  columns, the model part of a Bedrock usage type (`USW2-Claude4.6Sonnet-…` → `claude-sonnet-4-6`,
  `USE1-mistral.voxtral-small-24b-2507-mantle-…` → `mistral.voxtral-small-24b-2507`), a Marketplace
  `<Model> (Amazon Bedrock Edition)` service name, the meter with direction/deployment/unit words removed
  (`gpt-4o 1120 Inp glbl Tokens` → `gpt-4o-1120`, `Gemini 2.5 Flash GA Text Input - Predictions` →
  `gemini-2.5-flash`), an Azure Marketplace `<model>-<GUID>` resource name. A row with none of these is a line
  without a model ("no model": provisioned throughput, fees, fine-tuning storage, tax, credits), never a meter word
  or a resource id; its meter stays in `tags["meter"]`.
- Scope: an import reads only the rows its account's Scope keeps (focus/scope.py: a cloud account's LLM
  inference, of its own provider); the rest are counted, with their exact cost by service, into a LeftOut.
- Refunds and corrections: a negative ConsumedQuantity (FOCUS allows any decimal) is a negative token or request
  count, so a refund nets; Credit and Adjustment rows and ChargeClass "Correction" rows import as they are, dated
  by their ChargePeriod (the period they correct) and replaced with the BillingPeriod they are invoiced in.
- Provider: AWS (any of ServiceProviderName/ProviderName/HostProviderName/InvoiceIssuerName/PublisherName) →
  "aws-bedrock" when the row is Bedrock (service, service code or usage type), else "" (the account's provider);
  Microsoft/Azure → "azure-openai"; Google → "gcp-vertex"; a recognised API vendor name (OpenAI, Anthropic, Groq …)
  → its slug; otherwise "".
- Refs and tags: project_ref = SubAccountId (else x_ProjectId / x_ProjectName); api_key_ref / user_ref =
  CredentialId / PrincipalId when present (post-1.3 draft columns). tags = the Tags JSON (valueless → "true")
  plus x_Operation, x_ServiceCode, x_ResourceGroupName, x_CostCenter, x_InvoiceSectionName, `meter`, `resource`
  (ResourceName or ResourceId: a Bedrock application inference profile, an Azure OpenAI resource) and
  `charge_class` for corrections; every other x_ column is ignored.
- Tolerant where real exports are: nulls in "Mandatory" columns AWS and Microsoft document (InvoiceIssuerName,
  PublisherName, PricingUnit, SkuId …), unknown `x_` columns ignored, any column order, snake_case or lower-case
  header variants (Athena / BigQuery), Azure 1.0 times without seconds, Azure's brace-less Tags. Strict where a
  wrong guess would mislead: missing BilledCost/BillingCurrency/ChargePeriodStart/ChargePeriodEnd/ChargeCategory
  columns, an empty cost, a bad date, an unknown ChargeCategory.
- Speed: ~20 µs a row. Meter analysis, periods, units and tags repeat across rows and go through bounded LRU
  caches, so they cost once per distinct value and memory stays flat.
"""

import csv
import dataclasses
import datetime as dt
import decimal
import gzip
import io
import json
import operator
import shutil
import tempfile
import zlib
from decimal import Decimal

from ingest.connectors.base import ProviderError, UsageRow, csv_lines
from ingest.connectors.focus.batches import focus_csv_batches
from ingest.connectors.focus.format import (
    CHARGE_CATEGORIES,
    GZIP_MAGIC,
    METER_COLUMNS,
    NULLS,
    PARQUET_MAGIC,
    ZIP_MAGIC,
    Cells,
    Meter,
    Prefixed,
    analyse,
    own_token_classes,
    read_up_to,
    resolve_header,
)
from ingest.connectors.focus.meters import CACHE_READ, CACHE_WRITE, INPUT, OUTPUT, token_quantity
from ingest.connectors.focus.scope import SCOPE_COLUMNS, LeftOut, Scope
from ingest.connectors.focus.values import TAG_CELLS, charge_periods, currency_code, tag_set_items
from ingest.connectors.parsing import parse_decimal
from ingest.connectors.text_input import bounded_decompressed, bounded_lines, utf8_text

PARQUET_BATCH = 8192


class FocusFile:
    kind = "focus_file"

    scoped = True  # the import gives an account's Scope and a LeftOut (focus/scope.py)

    def parse_batches(self, stream, *, file_name: str, scope: Scope | None = None, left_out: LeftOut | None = None):
        """The CSV fast path (focus/batches.py): RowBatches, or BatchDeclined for what only `parse` reads exactly."""

        return focus_csv_batches(stream, file_name=file_name, scope=scope, left_out=left_out)

    def parse(self, stream, *, file_name: str, scope: Scope | None = None, left_out: LeftOut | None = None):
        """UsageRows of the rows `scope` keeps (None: every row); the rest are counted into `left_out`."""
        if left_out is not None:
            left_out.clear()  # a declined batch read may have counted some already
        yield from self._parse(stream, file_name, _Filter(scope, left_out or LeftOut()) if scope else None)

    def _parse(self, stream, file_name: str, keep):
        head = read_up_to(stream, 4)
        if not head:
            raise ProviderError(f"{file_name}: the file is empty")
        if head == PARQUET_MAGIC:
            yield from _parquet_rows(stream, head, file_name, keep)
            return
        if head == ZIP_MAGIC:
            raise ProviderError(f"{file_name}: a ZIP archive; unzip it and import the CSV or Parquet file inside")
        binary = io.BufferedReader(Prefixed(head, stream), 1 << 16)
        if head[:2] == GZIP_MAGIC:
            binary = io.BufferedReader(bounded_decompressed(binary, file_name), 1 << 16)
        text = utf8_text(binary)
        try:
            yield from _csv_rows(bounded_lines(text, file_name), file_name, keep)
        except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
            problem = exc or "unexpected end"
            raise ProviderError(f"{file_name}: the gzip data is damaged or truncated ({problem})") from None
        except UnicodeDecodeError as exc:
            raise ProviderError(f"{file_name}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None


# --- containers ---


def _csv_rows(lines, file_name: str, keep):
    reader = csv.reader(lines)
    try:
        header = next(reader, None)
    except csv.Error as exc:
        raise ProviderError(f"{file_name} line 1: {exc}") from None
    if not header:
        raise ProviderError(f"{file_name}: the file is empty (no header line)")
    plan = _Plan(resolve_header(header, file_name))
    width = len(header)
    for where, values in csv_lines(reader, file_name):
        if not values or values == [""]:
            continue
        if len(values) != width:  # short: its last cells would read as empty (a row of zeros), or a quote left open
            raise ProviderError(
                f"{where}: {len(values)} fields but the header has {width} columns"
                + (
                    " (a short row: fields left out, or a quote opened on this row and never closed)"
                    if len(values) < width
                    else ""
                )
            )
        row = _focus_row(values, plan, where, keep)
        if row is not None:
            yield row


def _parquet_rows(stream, head: bytes, file_name: str, keep):
    import pyarrow as pa
    import pyarrow.parquet as pq

    spooled = None
    try:
        if _seekable_at_start(stream, len(head)):
            stream.seek(0)
            source = stream
        else:
            # The Parquet footer is at the end: copy to disk (not memory) when the stream cannot seek.
            spooled = tempfile.TemporaryFile()
            spooled.write(head)
            shutil.copyfileobj(stream, spooled, 1 << 20)
            spooled.seek(0)
            source = spooled
        try:
            parquet = pq.ParquetFile(source)
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise ProviderError(f"{file_name}: not a readable Parquet file ({exc})") from None
        header = parquet.schema_arrow.names
        index = resolve_header(header, file_name)
        names = [header[position] for position in sorted(set(index.values()))]
        plan = _Plan({canonical: names.index(header[position]) for canonical, position in index.items()})
        n = 0
        try:
            for batch in parquet.iter_batches(batch_size=PARQUET_BATCH, columns=names):
                columns = [[_cell(v) for v in batch.column(j).to_pylist()] for j in range(batch.num_columns)]
                for values in zip(*columns):
                    n += 1
                    row = _focus_row(list(values), plan, f"{file_name} row {n}", keep)
                    if row is not None:
                        yield row
        except pa.ArrowException as exc:
            raise ProviderError(f"{file_name} after row {n}: the Parquet data cannot be read ({exc})") from None
    finally:
        if spooled is not None:
            spooled.close()


def _seekable_at_start(stream, consumed: int) -> bool:
    try:
        return bool(stream.seekable()) and stream.tell() == consumed
    except (AttributeError, OSError, ValueError):
        return False


def _cell(value) -> str:
    """A Parquet value as the text a CSV export would hold, so both containers share one row parser."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if value != value:
            return ""  # NaN: how pandas-written Parquet spells null
        return repr(value)  # shortest round-trip text: what the producer wrote, not a binary expansion
    if isinstance(value, dt.datetime):
        return (value if value.tzinfo else value.replace(tzinfo=dt.UTC)).isoformat()
    if isinstance(value, list) and all(isinstance(item, tuple) and len(item) == 2 for item in value):
        return json.dumps({str(k): v for k, v in value}, default=str)  # map<string,string> (AWS Tags)
    if isinstance(value, (dict, list)):
        return json.dumps(value, default=str)
    return str(value)  # int, Decimal, date


# --- one row ---


class _Plan:
    """Where each column this parser reads sits in a row of one file (a missing column reads the padding "")."""

    def __init__(self, index: dict[str, int]):
        self.width = max(index.values()) + 1
        self.names = tuple(index)
        self.cells = operator.itemgetter(*(index[name] for name in self.names))
        self.meter = operator.itemgetter(*(index.get(name, -1) for name in METER_COLUMNS))
        self.scope = operator.itemgetter(*(index.get(name, -1) for name in SCOPE_COLUMNS))


class _Filter:
    """An account's Scope over rows: a row left out is counted (with its exact cost) instead of read."""

    def __init__(self, scope: Scope, left_out: LeftOut):
        self.scope, self.left_out = scope, left_out

    def keeps(self, cells: tuple, get: Cells, where: str) -> bool:
        decision = self.scope.decide(*cells)
        if decision.kept:
            return True
        try:
            cost = parse_decimal(get["BilledCost"]) if get["BilledCost"] else Decimal(0)
            currency = currency_code(get["BillingCurrency"])
        except (ValueError, decimal.InvalidOperation) as exc:
            raise ProviderError(f"{where}: {exc}") from None
        self.left_out.add(decision.service, decision.reason, currency, 1, cost)
        return False


def _focus_row(values: list, plan: _Plan, where: str, keep: _Filter | None = None) -> UsageRow | None:
    if len(values) < plan.width:
        values = values + [""] * (plan.width - len(values))
    values.append("")  # position -1: the value of every column the file does not have
    read = plan.cells(values)
    # Most rows need no cleaning: no null marker, no space or tab at either end of a cell (one scan of the row
    # tells; a false alarm only takes the slow path). An empty cell then reads as "" whether stored or not.
    joined = "\x00" + "\x00".join(read) + "\x00"
    if "\x00 " in joined or " \x00" in joined or "\t" in joined or "ull\x00" in joined or "ULL\x00" in joined:
        cells = Cells()
        for name, value in zip(plan.names, read):
            if value and value not in NULLS:
                if value[0] in " \t" or value[-1] in " \t":
                    value = value.strip()
                if value:
                    cells[name] = value
    else:
        cells = Cells(zip(plan.names, read))
    if keep is not None and not keep.keeps(plan.scope(values), cells, where):
        return None
    try:
        meter = analyse(plan.meter(values))
        return _row(cells, meter, where)
    except (ValueError, TypeError, decimal.InvalidOperation) as exc:
        raise ProviderError(f"{where}: {exc}") from None


def _row(get: Cells, meter: "Meter", where: str) -> UsageRow:
    start, end, billing_start, billing_end = charge_periods(
        get["ChargePeriodStart"], get["ChargePeriodEnd"], get["BillingPeriodStart"], get["BillingPeriodEnd"]
    )
    if not get["BilledCost"]:
        raise ValueError("BilledCost is empty")
    cost = parse_decimal(get["BilledCost"])
    currency = currency_code(get["BillingCurrency"])
    category = get["ChargeCategory"].lower()
    if category not in CHARGE_CATEGORIES:
        raise ValueError(
            f"ChargeCategory {get['ChargeCategory']!r} is not one of Usage, Purchase, Tax, Credit, Adjustment"
        )

    requests = tokens = 0
    quantity, kind = token_quantity(get, meter.is_token_meter)
    classes = own_token_classes(get, quantity, where) if kind == "tokens" else None
    if kind == "tokens" and classes is None:
        if meter.direction is None:
            raise ValueError(
                "the quantity is in tokens but the token direction (input, output, cache read, cache write) cannot "
                "be told from SkuPriceDetails, SkuMeter, the usage type or ChargeDescription "
                f"({meter.raw or 'no meter'!r})"
            )
        tokens = quantity
    elif kind == "requests":
        requests = quantity
    direction = meter.direction

    tags = dict(tag_set_items(TAG_CELLS(get), meter.raw, get["ResourceName"] or get["ResourceId"]))

    model = meter.model  # a row naming no model is a line without one ("no model"), never its meter word
    # Positional, in ROW_FIELDS order: half the cost of keywords (~1.8 µs a row).
    return UsageRow(
        start,
        end,
        model,
        *(
            classes
            or (
                tokens if direction == INPUT else 0,
                tokens if direction == CACHE_READ else 0,
                tokens if direction == CACHE_WRITE else 0,
                tokens if direction == OUTPUT else 0,
            )
        ),
        requests,
        cost,
        currency,
        meter.provider_slug,
        meter.tier,
        get["SubAccountId"] or get["x_ProjectId"] or get["x_ProjectName"],
        get["CredentialId"],
        get["PrincipalId"],
        tags,
        category,
        where,
        billing_start,
        billing_end,
        invoice_id=get["InvoiceId"],
    )


ROW_FIELDS = (
    "period_start",
    "period_end",
    "model_raw",
    "input_tokens",
    "cached_input_tokens",
    "cache_write_tokens",
    "output_tokens",
    "requests",
    "cost",
    "currency",
    "provider_slug",
    "service_tier",
    "project_ref",
    "api_key_ref",
    "user_ref",
    "tags",
    "charge_category",
    "source_ref",
    "billing_period_start",
    "billing_period_end",
)
if tuple(f.name for f in dataclasses.fields(UsageRow))[: len(ROW_FIELDS)] != ROW_FIELDS:
    raise ImportError("UsageRow's fields moved: update ROW_FIELDS and the positional UsageRow(...) in _row")
