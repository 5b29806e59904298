"""Reading prices: a line's cost from its tokens and a list price, a provider's contract discounts, and the price book
that finds the price in force for a provider, model and day (docs/architecture.md invariant 5). The seed catalog and
price writes are in finops.prices.services."""

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal

from finops.models import ModelPrice, Provider

MTOK = Decimal(1_000_000)


@dataclass(frozen=True)
class Tokens:
    input: int = 0
    cached_input: int = 0
    cache_write: int = 0
    output: int = 0


def class_rates(price: ModelPrice, *, batch: bool = False) -> dict[str, Decimal]:
    """$/M tokens of each token class (Tokens' field names). A class with no price of its own is charged at the
    plain input/output rate; the batch rates apply to batch-tier usage where the catalog has them."""
    input_rate = (price.batch_input_per_mtok if batch else None) or price.input_per_mtok
    output_rate = (price.batch_output_per_mtok if batch else None) or price.output_per_mtok
    return {
        "input": input_rate,
        "cached_input": price.cached_input_per_mtok if price.cached_input_per_mtok is not None else input_rate,
        "cache_write": price.cache_write_per_mtok if price.cache_write_per_mtok is not None else input_rate,
        "output": output_rate,
    }


def cost_from_price(price: ModelPrice, tokens: Tokens, *, batch: bool = False) -> Decimal:
    """Σ tokens × $/M / 10⁶, each class at its rate (class_rates)."""
    return _cost(class_rates(price, batch=batch), tokens.input, tokens.cached_input, tokens.cache_write, tokens.output)


def costs_from_price(price: ModelPrice, input_, cached_input, cache_write, output, *, batch: bool = False) -> list:
    """cost_from_price of many lines at one price: the token classes as sequences of ints, one entry a line (the
    gateway column writer prices each hourly line of a model and day; the rates are found once)."""
    rates = class_rates(price, batch=batch)
    return [_cost(rates, *tokens) for tokens in zip(input_, cached_input, cache_write, output)]


def _cost(rates: dict[str, Decimal], input_: int, cached_input: int, cache_write: int, output: int) -> Decimal:
    total = (
        input_ * rates["input"]
        + cached_input * rates["cached_input"]
        + cache_write * rates["cache_write"]
        + output * rates["output"]
    )
    return total / MTOK


class ContractDiscounts:
    """The negotiated discounts off list (Contract.discount_pct) that apply to one account's ESTIMATED costs.

    A contract covers a line when the line's provider is the contract's and the contract names the line's account
    or names none; on the days of its current term and of its archived terms (a term records no discount of its
    own: the contract's applies). Two contracts covering one day: the larger discount. Billed costs are the
    provider's amounts and are never discounted; the row writer and the gateway column writer estimate, and ask
    here (the FOCUS column writer takes billed lines only). Loaded before a run writes (a COPY holds the
    connection), so like a price the discount is fixed at import: a contract added or changed later applies when
    the window is imported again.
    """

    def __init__(self, spans: dict[int, list[tuple[dt.date, dt.date, Decimal]]]):
        self._spans = spans  # provider id -> [(start, end, discount %)], half-open UTC days

    @classmethod
    def for_account(cls, account) -> "ContractDiscounts":
        """The discounts of contracts covering `account` (those naming it, and those naming no account)."""
        from django.db.models import Q

        return cls._of(Q(accounts=account) | Q(accounts=None))

    @classmethod
    def everywhere(cls) -> "ContractDiscounts":
        """Every contract with a discount, whichever accounts it names: what the company has negotiated with each
        provider (the what-if prices a workload as if it ran there, under the company's terms)."""
        from django.db.models import Q

        return cls._of(Q())

    @classmethod
    def _of(cls, which) -> "ContractDiscounts":
        from finops.models import Contract, ContractTerm

        contracts = {c.id: c for c in Contract.objects.filter(which, discount_pct__gt=0)}
        spans: dict[int, list] = {}
        for contract in contracts.values():
            spans.setdefault(contract.provider_id, []).append((contract.start, contract.end, contract.discount_pct))
        for term in ContractTerm.objects.filter(contract_id__in=contracts):
            contract = contracts[term.contract_id]
            spans[contract.provider_id].append((term.start, term.end, contract.discount_pct))
        return cls(spans)

    def discounted(self, cost: Decimal, provider_id: int, day: dt.date) -> Decimal:
        """An estimated cost of a line of `provider_id` on `day`, less the discount of a contract covering it."""
        pct = self.discount_pct(provider_id, day)
        return cost * (1 - pct / 100) if pct else cost

    def discount_pct(self, provider_id: int, day: dt.date) -> Decimal:
        """The largest discount of a contract covering `provider_id` on `day` (0 when none does)."""
        spans = self._spans.get(provider_id)
        if not spans:  # most providers have no contract: asked once per imported line
            return _NO_DISCOUNT
        return max((pct for start, end, pct in spans if start <= day < end), default=_NO_DISCOUNT)


_NO_DISCOUNT = Decimal(0)


class PriceBook:
    """Prices of one provider looked up by (model, day). Built before a run writes anything: a Postgres
    COPY holds the connection, so nothing may be queried while rows stream in."""

    def __init__(self, prices: list[ModelPrice]):
        self._by_model: dict[str, list[ModelPrice]] = {}
        for price in sorted(prices, key=lambda p: (p.model, p.effective_from), reverse=True):
            self._by_model.setdefault(price.model, []).append(price)

    @classmethod
    def for_provider(cls, provider: Provider) -> "PriceBook":
        return cls(list(ModelPrice.objects.filter(provider=provider)))

    @classmethod
    def all_providers(cls, provider_ids: Iterable[int] | None = None) -> dict[int, "PriceBook"]:
        """provider id -> its book, in one query (a provider with no prices gets an empty book). `provider_ids`: the
        providers' ids where the caller has read them already (an import's LinePreparer), saving their query."""
        if provider_ids is None:
            provider_ids = Provider.objects.values_list("id", flat=True)
        by_provider: dict[int, list[ModelPrice]] = {pid: [] for pid in provider_ids}
        for price in ModelPrice.objects.all():
            by_provider.setdefault(price.provider_id, []).append(price)
        return {pid: cls(prices) for pid, prices in by_provider.items()}

    def price_on(self, model: str, day: dt.date) -> ModelPrice | None:
        """The latest price that started on or before `day` and has not ended by it."""
        for price in self._by_model.get(model, ()):
            if price.effective_from <= day and (price.effective_to is None or day < price.effective_to):
                return price
        return None
