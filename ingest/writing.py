"""Writing a run's lines: price and attribute each row, COPY it in, replace the run's windows, roll up.

Streaming: rows are consumed one at a time and never held all in memory on Postgres (binary COPY straight
into the usage-line table in chunks, then one DELETE of what the new lines replace). SQLite (the demo) takes a
plain batch path. Everything happens in the caller's transaction, so a failure at any row writes nothing,
and the account's write lock (ingest/lease.py) keeps two runs of one account from interleaving.
"""

import dataclasses
import datetime as dt
import operator
import zoneinfo
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal

import numpy as np
import pyarrow as pa
from django.db import connection
from django.db.models import F, Q, Sum
from django.db.models.functions import TruncDate

from finops.core.modelids import normalise_model
from finops.core.text import control_character
from finops.models import Account, CostBasis, GatewayCacheHit, IngestRun, Provider, UsageLine
from finops.performance.measures import LINE_COLUMNS
from finops.prices.fx import FxConverter
from finops.prices.selectors import ContractDiscounts, PriceBook, Tokens, cost_from_price
from finops.spend.models.usage import signature_id, signature_ids, tag_set_id
from finops.spend.services.attribution import RuleMatcher
from finops.spend.services.rollups import rollup_rebuild
from ingest.connectors.base import GATEWAY_CACHE_HIT, UsageRow, tags_json

from .keys import new_keys_store, signature_table, signature_table_concat, signature_table_of

Window = tuple[dt.datetime, dt.datetime]

# UsageLine columns written by ingestion, in COPY order.
COLUMNS = (
    "account_id",
    "provider_id",
    "ingest_run_id",
    "period_start",
    "period_end",
    "model",
    "model_raw",
    "service_tier",
    "project_ref",
    "api_key_ref",
    "user_ref",
    "tag_set_id",
    "input_tokens",
    "cached_input_tokens",
    "cache_write_tokens",
    "output_tokens",
    "requests",
    "cost",
    "currency",
    "reporting_cost",
    "cost_basis",
    "charge_category",
    *LINE_COLUMNS,
    "billing_period_start",
    "signature_id",
    "invoice_id",
)
TIME_COLUMNS = tuple(COLUMNS.index(name) for name in ("period_start", "period_end", "billing_period_start"))
_TIMES = operator.itemgetter(*TIME_COLUMNS)
# Binary COPY type of each column.
_COPY_TYPE = {
    "timestamptz": ("period_start", "period_end", "billing_period_start"),
    "numeric": ("cost", "reporting_cost"),
    "int8": (
        "account_id",
        "provider_id",
        "ingest_run_id",
        "tag_set_id",
        "input_tokens",
        "cached_input_tokens",
        "cache_write_tokens",
        "output_tokens",
        "requests",
        "signature_id",
        *LINE_COLUMNS[:-2],
    ),
    "float8": ("summary_p99_ms",),
    "int8[]": ("latency",),
}
NO_PERFORMANCE = (None,) * len(LINE_COLUMNS)
COPY_TYPES = tuple(next((t for t, names in _COPY_TYPE.items() if name in names), "text") for name in COLUMNS)


MAX_AMOUNT = Decimal(10) ** 20  # NUMERIC(38, 18)
MAX_COUNT = 2**63 - 1  # bigint


class UnsafeModelName(ValueError):
    """A source's model name holds a control character; the caller names the row (or declines the batch)."""


class IngestError(Exception):
    """A run cannot complete; the message is shown to the user as it is."""


@dataclass
class WriteResult:
    read: int
    written: int
    replaced: int
    windows: list[Window]
    days: set[dt.date] = field(default_factory=set)  # the UTC days whose rollup was rebuilt (written or replaced)
    left_out: dict = field(default_factory=dict)  # a FOCUS import's rows left out (IngestRun.left_out)


def day_window(day: dt.date) -> Window:
    start = dt.datetime.combine(day, dt.time(), tzinfo=dt.UTC)
    return start, start + dt.timedelta(days=1)


def utc_days(start: dt.datetime, end: dt.datetime) -> set[dt.date]:
    """The UTC days the half-open period [start, end) touches."""
    day = start.astimezone(dt.UTC).date()
    last = (end - dt.timedelta(microseconds=1)).astimezone(dt.UTC).date()
    days = set()
    while day <= last:
        days.add(day)
        day += dt.timedelta(days=1)
    return days


def merge_windows(windows: Iterable[Window]) -> list[Window]:
    merged: list[list[dt.datetime]] = []
    for start, end in sorted(windows):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(start, end) for start, end in merged]


class LinePreparer:
    """Row -> column values: provider, normalised model, cost basis, reporting-currency cost, tag set, and the
    line's signature, which a new signature gets with the workload and team of the first matching attribution
    rule (attribution happens before the line is stored)."""

    def __init__(self, account: Account, run: IngestRun):
        self.account, self.run = account, run
        # Everything a row may need is loaded now: once the COPY starts, the connection answers nothing else.
        self.providers = {p.slug: p for p in Provider.objects.all()}
        self.account_provider = next(p for p in self.providers.values() if p.id == account.provider_id)
        self.price_books = PriceBook.all_providers()
        self.discounts = ContractDiscounts.for_account(account)
        self.fx = FxConverter()
        self.rules = RuleMatcher()
        self.account_id, self.run_id = account.id, run.id
        self.tag_sets: dict[int, dict] = {}  # the tag sets this run's lines use, by id (the writer stores them)
        self.tag_texts: dict[int, str] = {}  # and their canonical text, encoded once (the store stages it)
        self._tag_ids: dict[str, int] = {}
        self.signatures: dict[int, tuple] = {}  # likewise the signatures, attributed (keys.SIGNATURE_COLUMNS rows)
        self._signature_ids: dict[tuple, int] = {}
        # The ids of signatures already handed to the writer (take_new): a line of one again, once its key has left
        # the cache above, is not attributed and staged a second time. Staged again, it made every later store run
        # the collision check (an ANALYZE and a join of the batch: ~0.6 s of a 200k-line scattered log).
        self._taken_signatures: set[int] = set()
        # New signatures found in bulk (signatures_in_bulk), as keys.signature_table columns, and how many.
        self.signature_columns: list = []
        self.signature_count = 0
        # Rows repeat a few models and periods: normalising and finding the UTC day are done once per value.
        self._models: dict[str, str] = {}
        self._days: dict[dt.datetime, dt.date] = {}

    CACHE_LIMIT = 8192  # entries per cache; emptied when full, so memory stays flat

    def prepare(self, row: UsageRow) -> tuple:
        self._check_fits(row)
        provider = self.providers.get(row.provider_slug) if row.provider_slug else self.account_provider
        if provider is None:
            raise IngestError(f"{row.source_ref}: unknown provider {row.provider_slug!r} (add it first)")
        try:
            model = self.normalised_model(row.model_raw)
        except UnsafeModelName as exc:
            raise IngestError(f"{row.source_ref}: {exc}") from None
        try:  # equal instants have the same UTC day, whatever their zone
            day = self._days[row.period_start]
        except KeyError:
            day = row.period_start.astimezone(dt.UTC).date()
            if len(self._days) >= self.CACHE_LIMIT:
                self._days.clear()
            self._days[row.period_start] = day
        cost, currency, basis = row.cost, row.currency, CostBasis.BILLED
        if cost is None:
            price = self.price_books[provider.id].price_on(model, day)
            if price is None:
                basis = CostBasis.UNPRICED
            else:
                tokens = Tokens(row.input_tokens, row.cached_input_tokens, row.cache_write_tokens, row.output_tokens)
                cost = cost_from_price(price, tokens, batch=row.service_tier.lower() == "batch")
                cost = self.discounts.discounted(cost, provider.id, day)  # a contract's discount off list (issue 11)
                currency, basis = price.currency, CostBasis.ESTIMATED
        reporting_cost = None if cost is None else self.fx.to_reporting(cost, currency, day)
        tags_id = self.tag_set_of(row.tags, where=row.source_ref)
        signature = self.signature_of(
            (
                self.account_id,
                provider.id,
                row.project_ref,
                row.api_key_ref,
                row.user_ref,
                model,
                row.model_raw,
                tags_id,
            ),
            row.tags,
        )
        return (
            self.account_id,
            provider.id,
            self.run_id,
            row.period_start,
            row.period_end,
            model,
            row.model_raw,
            row.service_tier,
            row.project_ref,
            row.api_key_ref,
            row.user_ref,
            tags_id,
            row.input_tokens,
            row.cached_input_tokens,
            row.cache_write_tokens,
            row.output_tokens,
            row.requests,
            cost,
            currency,
            reporting_cost,
            basis,
            row.charge_category,
            *(NO_PERFORMANCE if row.latency is None else row.latency.line_columns()),
            row.billing_period_start,
            signature,
            row.invoice_id,
        )

    def cache_hit(self, row: UsageRow) -> GatewayCacheHit:
        """A gateway cache hit (GATEWAY_CACHE_HIT): attributed by the signature a usage line would have had, and
        priced at list (no contract discount: an estimate of what the cache saved, not of a bill)."""
        values = dict(zip(COLUMNS, self.prepare(dataclasses.replace(row, cost=None))))
        day = _day_of(row.period_start)
        price = self.price_books[values["provider_id"]].price_on(values["model"], day)
        list_cost = None
        if price is not None:
            tokens = Tokens(row.input_tokens, row.cached_input_tokens, row.cache_write_tokens, row.output_tokens)
            list_cost = self.fx.to_reporting(cost_from_price(price, tokens), price.currency, day)
        return GatewayCacheHit(
            account_id=self.account_id,
            provider_id=values["provider_id"],
            ingest_run_id=self.run_id,
            period_start=row.period_start,
            period_end=row.period_end,
            model=values["model"],
            signature_id=values["signature_id"],
            input_tokens=row.input_tokens,
            cached_input_tokens=row.cached_input_tokens,
            cache_write_tokens=row.cache_write_tokens,
            output_tokens=row.output_tokens,
            requests=row.requests,
            list_cost=list_cost,
        )

    def normalised_model(self, model_raw: str) -> str:
        """The model id lines store; UnsafeModelName when the source's name holds a control character (a model's
        name reaches emails, CSV files and page titles: a line break there forges a line)."""
        try:
            return self._models[model_raw]
        except (KeyError, TypeError):
            if isinstance(model_raw, str) and (found := control_character(model_raw)):
                raise UnsafeModelName(
                    f"the model {model_raw!r} contains {found}; a model name may not hold "
                    "control characters (line breaks, tabs, NUL, the C0 and C1 ranges)"
                ) from None
            model = normalise_model(model_raw)
            if len(self._models) >= self.CACHE_LIMIT:
                self._models.clear()
            self._models[model_raw] = model
            return model

    def tag_set_of(self, tags: dict, *, where: str = "") -> int:
        """The id of the tag set; a set new to this run is kept in `tag_sets` for the writer to store."""
        text = tags_json(tags)
        try:
            return self._tag_ids[text]
        except KeyError:
            if "\\u0000" in text:  # JSON's escape of a NUL, which Postgres' jsonb refuses
                raise IngestError(f"{where or 'a line'}: a tag holds a NUL byte") from None
            identity = tag_set_id(text)
            if len(self._tag_ids) >= self.CACHE_LIMIT:
                self._tag_ids.clear()
            self._tag_ids[text] = identity
            if identity not in self.tag_sets:
                self.tag_sets[identity], self.tag_texts[identity] = tags, text
            return identity

    def signature_of(self, key: tuple, tags: dict) -> int:
        """The id of the line signature `key` (LineSignature.KEY order); a signature new to this run is
        attributed by the rules and kept in `signatures` for the writer to store."""
        try:
            return self._signature_ids[key]
        except KeyError:
            identity = signature_id(*key)
            if len(self._signature_ids) >= self.CACHE_LIMIT:
                self._signature_ids.clear()
            self._signature_ids[key] = identity
            if identity not in self.signatures and identity not in self._taken_signatures:
                account_id, provider_id, project, api_key, user, model, model_raw, tags_id = key
                workload_id, team_id = self.rules.match(
                    account_id=account_id,
                    provider_id=provider_id,
                    project=project,
                    api_key=api_key,
                    user=user,
                    model=model,
                    model_raw=model_raw,
                    tag_set_id=tags_id,
                    tags=tags,
                )
                # A plain row (keys.SIGNATURE_COLUMNS order), not a model instance: a file of scattered keys has
                # a signature per line, and building a LineSignature cost more than the rest of the line.
                self.signatures[identity] = (identity, *key, workload_id, team_id)
            return identity

    def signatures_in_bulk(self, *, provider_ids, api_keys, users, models, model_raws, tag_set_ids, tags) -> np.ndarray:
        """signature_of for many keys of no project (a gateway log's lines), one value of each column a key: their ids
        digested in bulk (signature_ids); those new to this run attributed (when there are rules) and kept as
        columns (`signature_columns`) for the writer to store. A key given twice is kept once."""
        ids = signature_ids(self.account_id, provider_ids, "", api_keys, users, models, model_raws, tag_set_ids)
        taken, pending = self._taken_signatures, self.signatures
        listed = ids.tolist()
        fresh = [i for i, identity in enumerate(listed) if identity not in taken and identity not in pending]
        if fresh:
            fresh = np.array(fresh, dtype=np.int64)
            fresh = fresh[np.unique(ids[fresh], return_index=True)[1]]  # one of each, ordered by id
            at = fresh.tolist()
            workloads = teams = None
            if self.rules.rules:  # none: every new signature unattributed (nulls)
                answers = [
                    self.rules.match(
                        account_id=self.account_id,
                        provider_id=int(provider_ids[i]),
                        project="",
                        api_key=api_keys[i],
                        user=users[i],
                        model=models[i],
                        model_raw=model_raws[i],
                        tag_set_id=int(tag_set_ids[i]),
                        tags=tags[i],
                    )
                    for i in at
                ]
                workloads, teams = ([answer[k] for answer in answers] for k in (0, 1))
            picked = lambda values: [values[i] for i in at]  # noqa: E731
            self.signature_columns.append(
                signature_table(
                    ids[fresh],
                    self.account_id,
                    np.asarray(provider_ids)[fresh],
                    "",
                    picked(api_keys),
                    picked(users),
                    picked(models),
                    picked(model_raws),
                    np.asarray(tag_set_ids)[fresh],
                    workloads,
                    teams,
                )
            )
            self.signature_count += len(at)
            taken.update(ids[fresh].tolist())  # handed over: never staged again by this run (memory: take_new)
        return ids

    # New tag sets and signatures are stored this many at a time (and whatever is left at the end). Lines have no
    # database foreign key to them, so they only have to be there by the rollup and the commit; storing them
    # before every COPY chunk cost ~10 ms a chunk (1M lines: ~2 s), as a file reveals its few thousand
    # signatures a handful per chunk.
    KEYS_AT_ONCE = 4096
    TAKEN_LIMIT = 1 << 18  # signature ids remembered as handed over (~15 MB)

    def take_new(
        self, *, all_of_them: bool = False
    ) -> tuple[dict[int, dict], "dict[int, tuple] | pa.Table", dict[int, str]]:
        """The tag sets and signatures first seen and not yet taken, for the writer to store (between COPYs: a
        COPY holds the connection): once KEYS_AT_ONCE of them are waiting, or `all_of_them` (before the rollup).
        new_keys_store's arguments: the sets, the signatures (a table when some were found in bulk), the sets' texts."""
        if not all_of_them and len(self.tag_sets) + len(self.signatures) + self.signature_count < self.KEYS_AT_ONCE:
            return {}, {}, {}
        signatures = self.signatures
        if self.signature_columns:  # the bulk ones (signatures_in_bulk), with any found one by one
            signatures = signature_table_concat([*self.signature_columns, signature_table_of(signatures)])
        new = self.tag_sets, signatures, self.tag_texts
        if len(self._taken_signatures) + len(self.signatures) > self.TAKEN_LIMIT:
            self._taken_signatures.clear()  # memory stays flat; a signature seen again is only staged again
        self._taken_signatures.update(self.signatures)
        self.tag_sets, self.signatures, self.signature_columns, self.signature_count = {}, {}, [], 0
        self.tag_texts = {}
        return new

    @staticmethod
    def _check_fits(row: UsageRow) -> None:
        """Refuse, naming the line, values the columns cannot hold (rather than a database error mid-COPY)."""
        if "\x00" in row.model_raw + row.project_ref + row.api_key_ref + row.user_ref + row.service_tier:
            named = next(
                name
                for name in ("model_raw", "project_ref", "api_key_ref", "user_ref", "service_tier")
                if "\x00" in getattr(row, name)
            )
            raise IngestError(
                f"{row.source_ref or 'a line'}: {named.removesuffix('_raw').removesuffix('_ref')} holds a NUL byte"
            )
        if row.cost is not None and abs(row.cost) >= MAX_AMOUNT:
            raise IngestError(f"{row.source_ref or 'a line'}: cost {row.cost} is beyond what can be stored (10^20)")
        if (
            row.input_tokens > MAX_COUNT
            or row.cached_input_tokens > MAX_COUNT
            or row.cache_write_tokens > MAX_COUNT
            or row.output_tokens > MAX_COUNT
            or row.requests > MAX_COUNT
        ):
            for name in ("input_tokens", "cached_input_tokens", "cache_write_tokens", "output_tokens", "requests"):
                if getattr(row, name) > MAX_COUNT:
                    raise IngestError(
                        f"{row.source_ref or 'a line'}: {name} {getattr(row, name)} is beyond what can be stored"
                    )


class BatchWriter:
    """SQLite: lines held in memory (demo-sized)."""

    def __init__(self, preparer: LinePreparer):
        self.preparer = preparer
        self.lines: list[UsageLine] = []

    def add(self, values: tuple) -> None:
        self.lines.append(UsageLine(**dict(zip(COLUMNS, values))))

    def replace(self, stale) -> tuple[int, int]:
        replaced = stale.delete()[0]
        new_keys_store(*self.preparer.take_new(all_of_them=True))
        UsageLine.objects.bulk_create(self.lines, batch_size=5000)
        return len(self.lines), replaced


class CopyWriter:
    """Postgres: binary COPY straight into the usage-line table, in chunks; then the replaced lines are deleted.

    Rows are copied in chunks: while a COPY is open the connection answers nothing else, and preparing
    a row (or the connector producing it) may need a query, as does storing the chunk's new tag sets.
    Memory stays bounded by the chunk. Binary COPY spares formatting every value as text here and parsing
    it again in Postgres.
    """

    CHUNK = 20_000

    def __init__(self, preparer: LinePreparer):
        self.preparer = preparer
        self.cursor = connection.cursor()
        self.copy_sql = f"COPY {UsageLine._meta.db_table} ({', '.join(COLUMNS)}) FROM STDIN (FORMAT BINARY)"
        self.buffer: list[tuple] = []
        self.count = 0
        # A naive datetime means the connection's time zone, as Postgres reads one in a text COPY.
        self.naive_zone = zoneinfo.ZoneInfo(connection.timezone_name)

    def add(self, values: tuple) -> None:
        self.count += 1
        start, end, billing_start = _TIMES(values)
        if start.tzinfo is None or end.tzinfo is None or (billing_start is not None and billing_start.tzinfo is None):
            values = tuple(
                v.replace(tzinfo=self.naive_zone) if i in TIME_COLUMNS and v is not None and v.tzinfo is None else v
                for i, v in enumerate(values)
            )
        self.buffer.append(values)
        if len(self.buffer) >= self.CHUNK:
            self.flush()

    def flush(self) -> None:
        new_keys_store(*self.preparer.take_new())
        if self.buffer:
            with self.cursor.cursor.copy(self.copy_sql) as copy:
                copy.set_types(COPY_TYPES)
                write = copy.write_row
                for row in self.buffer:
                    write(row)
            self.buffer = []

    def replace(self, stale) -> tuple[int, int]:
        self.flush()
        new_keys_store(*self.preparer.take_new(all_of_them=True))
        return self.count, stale.delete()[0]  # nothing cascades from usage lines: Django issues one DELETE


def _stale(account: Account, run: IngestRun, windows: list[Window], billing_starts: set[dt.datetime]):
    """The account's lines a write replaces: those starting in `windows`, and those of the billing periods,
    but for the run's own lines (already written when this is asked).

    A FOCUS line charged in one month may be billed in the next; replacing by billing period catches it.
    A line of another billing period is that period's export to restate, even when charged in `windows`:
    replacing it here would lose it (June's late line charged 31 May, deleted by re-importing May).
    """
    if not windows and not billing_starts:
        return UsageLine.objects.none()
    in_scope = Q()
    for start, end in windows:
        in_scope |= Q(period_start__gte=start, period_start__lt=end)
    if billing_starts:
        mine = Q(billing_period_start__in=billing_starts)
        in_scope = mine | (in_scope & (Q(billing_period_start__isnull=True) | mine)) if windows else mine
    return UsageLine.objects.filter(in_scope, account=account).exclude(ingest_run=run)


def _day_of(moment: dt.datetime) -> dt.date:
    return moment.astimezone(dt.UTC).date()


def hour_window(moment: dt.datetime) -> Window:
    start = moment.astimezone(dt.UTC).replace(minute=0, second=0, microsecond=0)
    return start, start + dt.timedelta(hours=1)


def write_rows(
    *,
    account: Account,
    run: IngestRun,
    rows: Iterable[UsageRow],
    window: Window | None = None,
    granularity: str = "day",
) -> WriteResult:
    """Replace the account's lines in what the rows cover (or in `window`, for an API pull), then roll up.

    Must run inside a transaction. What a file covers: the billing periods its rows name (a restated
    FOCUS month replaces the month), else the UTC days — or hours, for hourly gateway logs — they start in.
    """
    preparer = LinePreparer(account, run)
    writer = CopyWriter(preparer) if connection.vendor == "postgresql" else BatchWriter(preparer)
    read, slots, periods, cache_hits = 0, set(), set(), []
    starts: set[dt.datetime] = set()  # every period a row starts in: its day needs rolling up, window or not
    blank_rows: dict[dt.date, str] = {}  # day -> the first row of nothing (no token, request or cost) on it
    days_with_usage: set[dt.date] = set()
    window_of = hour_window if granularity == "hour" else (lambda moment: day_window(_day_of(moment)))
    slot_of = _cached(window_of)  # rows share a few hundred periods: each one's window is found once
    for row in rows:
        read += 1
        if window is not None:
            if not window[0] <= row.period_start < window[1]:
                raise IngestError(
                    f"{row.source_ref or 'a line'}: period {row.period_start.isoformat()} lies outside the window read"
                )
        elif row.billing_period_start is not None and row.billing_period_end is not None:
            periods.add((row.billing_period_start, row.billing_period_end))
        else:
            slots.add(slot_of(row.period_start))
        starts.add(row.period_start)
        if row.charge_category == GATEWAY_CACHE_HIT:  # served by the gateway's cache: no provider usage
            cache_hits.append(preparer.cache_hit(row))
            continue
        if (
            row.input_tokens
            or row.cached_input_tokens
            or row.cache_write_tokens
            or row.output_tokens
            or row.requests
            or row.cost
        ):
            days_with_usage.add(_day_of(row.period_start))
        else:
            blank_rows.setdefault(_day_of(row.period_start), row.source_ref or "a row")
        writer.add(preparer.prepare(row))
    if window is None:  # a file: never let a day of blank rows replace a day of tokens
        refuse_blank_days(
            {day: ref for day, ref in blank_rows.items() if day not in days_with_usage},
            account=account,
            run=run,
            periods=periods,
            slots=slots,
        )
    return replace_and_roll_up(
        account=account,
        run=run,
        writer=writer,
        read=read,
        windows=[window] if window is not None else None,
        periods=periods,
        slots=slots,
        starts=starts,
        cache_hits=cache_hits,
    )


def _cached(function, limit: int = 8192):
    """`function` of one argument, remembered for up to `limit` distinct arguments at a time (memory stays flat)."""
    known: dict = {}

    def cached(argument):
        try:
            return known[argument]
        except KeyError:
            if len(known) >= limit:
                known.clear()
            value = known[argument] = function(argument)
            return value

    return cached


def refuse_blank_days(
    blank_days: dict[dt.date, str], *, account: Account, run: IngestRun, periods: set[Window], slots: set[Window]
) -> None:
    """IngestError when a file would replace a day of stored tokens with rows of nothing (no token, no request, no
    cost): the mark of rows a reader failed to read, never what a provider means (a day without usage is a day
    without rows). Readers refuse such rows themselves (a short row, an unclosed quote, an empty token cell);
    this is the write path's own guard, for every reader. Asked before anything is replaced, so the run fails
    inside its transaction and the stored day, its lines and its rollups stay as they were."""
    if not blank_days:
        return
    stale = _stale(account, run, merge_windows([*periods, *slots]), {start for start, _ in periods})
    stored = dict(
        stale.annotate(day=TruncDate("period_start", tzinfo=dt.UTC))
        .filter(day__in=blank_days)
        .values("day")
        .annotate(
            tokens=Sum(F("input_tokens") + F("cached_input_tokens") + F("cache_write_tokens") + F("output_tokens"))
        )
        .order_by()
        .values_list("day", "tokens")
    )
    for day in sorted(blank_days):
        if stored.get(day):
            raise IngestError(
                f"{blank_days[day]}: a row with no tokens, requests or cost would replace {stored[day]:,} "
                "stored tokens "
                f"of {day.isoformat()}; nothing was imported (a row that could not be read is not a zero: check the "
                "file's columns on that line)"
            )


@dataclass
class Replaced:
    """Lines of a file deleted before its first COPY (`replace_ahead`): what they covered, how many, their UTC days."""

    windows: list[Window]
    billing_starts: set[dt.datetime]
    count: int
    days: set[dt.date]


def replace_ahead(*, account: Account, run: IngestRun, periods: set[Window], slots: set[Window]) -> Replaced | None:
    """Delete, before any of the run's lines is stored, what a file's first batch shows it replaces (its billing
    `periods`, and the `slots` of its rows without one); None, deleting nothing, when the batch names no billing
    period. After the COPY the same DELETE, and the query of the replaced lines' days, read every line the run
    has just written too (the usage-line table's only index on period is a BRIN: a range holding new lines is
    read whole), 0.25–0.8 s per 1M new lines each (load 4–11), after everything else. Deleted first they read only
    the old lines.

    Only with a billing period: what a file replaces can then only grow with its later batches (their billing
    periods add lines billed in them, their windows add lines without a billing period), so nothing deleted here
    is outside what the whole file replaces. A batch without one would replace every line of its days, which a
    later batch naming a billing period narrows to that period's (`_stale`)."""
    if not periods:
        return None
    windows, billing_starts = merge_windows([*periods, *slots]), {start for start, _ in periods}
    stale = _stale(account, run, windows, billing_starts)
    days = _days_of(stale)
    return Replaced(windows, billing_starts, stale.delete()[0], days)


def _days_of(lines) -> set[dt.date]:
    """The UTC days `lines` start on."""
    return set(
        lines.annotate(day=TruncDate("period_start", tzinfo=dt.UTC)).values_list("day", flat=True).order_by().distinct()
    )


def replace_and_roll_up(
    *,
    account: Account,
    run: IngestRun,
    writer,
    read: int,
    windows: list[Window] | None,
    periods: set[Window],
    slots: set[Window],
    starts: set[dt.datetime],
    cache_hits: list[GatewayCacheHit] = (),
    ahead: Replaced | None = None,
) -> WriteResult:
    """After the new lines are in: delete the lines they replace, roll up every day touched, say what happened.

    `windows`: what an API pull read; None for a file, which covers its billing `periods`, else its `slots`.
    `starts`: every period a new line starts in (its day needs rolling up, window or not).
    `cache_hits`: the gateway cache hits read (GatewayCacheHit), which replace the account's in the same windows.
    `ahead`: what `replace_ahead` deleted before the lines were written; when it covered what the file replaces,
    nothing is deleted (nor read) here.
    """
    if windows is None:
        windows = merge_windows([*periods, *slots])
    billing_starts = {start for start, _ in periods}
    if ahead is not None and ahead.windows == windows and ahead.billing_starts == billing_starts:
        stale, old_days = None, set()
    else:
        stale = _stale(account, run, windows, billing_starts)
        # rollup_rebuild rebuilds exactly the days given: every day of a line written or replaced, not just the
        # first and last (a FOCUS month's late lines fall on days outside its window, not always adjacent).
        old_days = _days_of(stale)
    written, replaced = writer.replace(stale)
    if ahead is not None:
        replaced, old_days = replaced + ahead.count, old_days | ahead.days
    _cache_hits_replace(account, run, windows, cache_hits)
    touched = set().union(*(utc_days(*w) for w in windows)) if windows else set()
    touched |= {_day_of(m) for m in starts} | old_days
    rollup_rebuild(days=touched, account_ids=[account.id])
    return WriteResult(read=read, written=written, replaced=replaced, windows=windows, days=touched)


def _cache_hits_replace(account: Account, run: IngestRun, windows: list[Window], cache_hits) -> None:
    """The account's gateway cache hits in `windows` are replaced by the run's, as its usage lines are (after the
    writer stored the run's new signatures)."""
    if windows:
        in_scope = Q()
        for start, end in windows:
            in_scope |= Q(period_start__gte=start, period_start__lt=end)
        GatewayCacheHit.objects.filter(in_scope, account=account).exclude(ingest_run=run).delete()
    GatewayCacheHit.objects.bulk_create(cache_hits, batch_size=5000)
