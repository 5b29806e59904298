"""The list prices and FX rates the demo generator bills with: the seed catalog with config.yaml on top.

They are read from the same files the product loads (finops/data/price_catalog.csv and the demo config), so
billed amounts in the generated files agree with what the product would estimate for the same tokens.
"""

import csv
import datetime as dt
from dataclasses import dataclass
from decimal import Decimal

from finops.core.modelids import normalise_model
from finops.prices.selectors import Tokens, cost_from_price
from finops.prices.services import CATALOG_EFFECTIVE_FROM, CATALOG_PATH, PRICE_FIELDS


@dataclass(frozen=True)
class ListPrice:
    """The fields of a ModelPrice that cost_from_price reads, so billed amounts use the product's own formula."""

    effective_from: dt.date
    input_per_mtok: Decimal
    output_per_mtok: Decimal
    cached_input_per_mtok: Decimal | None = None
    cache_write_per_mtok: Decimal | None = None
    batch_input_per_mtok: Decimal | None = None
    batch_output_per_mtok: Decimal | None = None


class PriceList:
    """The seed catalog with config.yaml's prices on top, looked up by (provider, model, day)."""

    def __init__(self, config: dict):
        entries: dict[tuple[str, str, dt.date], ListPrice] = {}
        with CATALOG_PATH.open(newline="") as fh:
            for row in csv.DictReader(fh):
                prices = {f: Decimal(row[f]) if row[f] else None for f in PRICE_FIELDS}
                day = dt.date.fromisoformat(row["effective_from"])
                entries[(row["provider"], row["model"], day)] = ListPrice(day, **prices)
        for entry in config.get("prices", []):
            day = dt.date.fromisoformat(str(entry.get("effective_from") or CATALOG_EFFECTIVE_FROM))
            prices = {f: Decimal(str(entry[f])) if entry.get(f) is not None else None for f in PRICE_FIELDS}
            entries[(entry["provider"], normalise_model(entry["model"]), day)] = ListPrice(day, **prices)
        self._by_model: dict[tuple[str, str], list[ListPrice]] = {}
        for (provider, model, _), price in sorted(entries.items(), key=lambda item: item[0][2], reverse=True):
            self._by_model.setdefault((provider, model), []).append(price)

    def price_on(self, provider: str, model: str, day: dt.date) -> ListPrice | None:
        """The price of `model` (any spelling: it is normalised as the product does) on `day`, or None."""
        prices = self._by_model.get((provider, normalise_model(model)), ())
        return next((price for price in prices if price.effective_from <= day), None)

    def list_cost(self, provider: str, model: str, day: dt.date, tokens: Tokens) -> Decimal:
        """Tokens at list price in USD, unrounded; LookupError when the model has no price (the demo bills it)."""
        price = self.price_on(provider, model, day)
        if price is None:
            raise LookupError(f"the demo bills {provider}/{model} but it has no list price on {day}")
        return cost_from_price(price, tokens)


class FxRates:
    """1 unit of a currency = rate USD, from the rate's day until the next one (as finops.prices.fx)."""

    def __init__(self, config: dict):
        self._rates: dict[str, list[tuple[dt.date, Decimal]]] = {}
        for entry in config.get("fx_rates", []):
            day = dt.date.fromisoformat(str(entry["day"]))
            self._rates.setdefault(entry["currency"].upper(), []).append((day, Decimal(str(entry["rate"]))))
        for rates in self._rates.values():
            rates.sort(reverse=True)

    def rate_on(self, currency: str, day: dt.date) -> Decimal:
        for rate_day, rate in self._rates.get(currency, ()):
            if rate_day <= day:
                return rate
        raise LookupError(f"config.yaml has no {currency} rate on or before {day}")
