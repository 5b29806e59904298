"""Preparing a run's lines: each source row priced (the provider's price book, the contract discount, the FX rate
into the reporting currency) and attributed (its tag set and line signature, a new signature getting the workload
and team of the first matching rule) before it is stored. The writers (ingest/writing.py, ingest/columnar.py,
ingest/columnar_gateway.py) call it; it writes nothing itself but hands the new keys over (take_new).
"""

import dataclasses
import datetime as dt

import numpy as np
import pyarrow as pa

from finops.core.modelids import normalise_model
from finops.core.text import control_character
from finops.models import Account, CostBasis, GatewayCacheHit, IngestRun, Provider
from finops.prices.fx import FxConverter
from finops.prices.selectors import ContractDiscounts, PriceBook, Tokens, cost_from_price
from finops.spend.models.usage import signature_id, signature_ids, tag_set_id
from finops.spend.services.attribution import RuleMatcher
from ingest.connectors.base import UsageRow, tags_json

from .keys import signature_table, signature_table_concat, signature_table_of
from .lines import COLUMNS, MAX_AMOUNT, MAX_COUNT, NO_PERFORMANCE, IngestError, UnsafeModelName, day_of


class LinePreparer:
    """Row -> column values: provider, normalised model, cost basis, reporting-currency cost, tag set, and the
    line's signature, which a new signature gets with the workload and team of the first matching attribution
    rule (attribution happens before the line is stored)."""

    def __init__(self, account: Account, run: IngestRun):
        self.account, self.run = account, run
        # Everything a row may need is loaded now: once the COPY starts, the connection answers nothing else.
        self.providers = {p.slug: p for p in Provider.objects.all()}
        self.account_provider = next(p for p in self.providers.values() if p.id == account.provider_id)
        self.price_books = PriceBook.all_providers(provider_ids=[p.id for p in self.providers.values()])
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
        day = day_of(row.period_start)
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

    def tag_set_of(self, tags: dict, *, where: str = "", text: str | None = None) -> int:
        """The id of the tag set; a set new to this run is kept in `tag_sets` for the writer to store. `text`: its
        canonical text (`tags_text(tags)`) where the caller has it."""
        if text is None:
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
