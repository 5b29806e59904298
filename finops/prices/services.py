"""List prices: loading the seed catalog (reading prices and costing lines: finops.prices.selectors)."""

import csv
import datetime as dt
from decimal import Decimal
from pathlib import Path

from django.db import transaction

from finops.models import ModelPrice, Provider

CATALOG_PATH = Path(__file__).resolve().parent.parent / "data" / "price_catalog.csv"
PRICE_FIELDS = (
    "input_per_mtok",
    "output_per_mtok",
    "cached_input_per_mtok",
    "cache_write_per_mtok",
    "batch_input_per_mtok",
    "batch_output_per_mtok",
)
# Catalog list prices (and config prices given without a date) apply from this day on.
CATALOG_EFFECTIVE_FROM = dt.date(2024, 1, 1)


@transaction.atomic
def price_catalog_load(*, path: Path = CATALOG_PATH, provider_model=Provider, price_model=ModelPrice) -> int:
    """Load the seed catalog; idempotent. Catalog rows never overwrite a price set by config or by hand.

    Set-based (one read, one insert, one update): it runs in a migration, on every `apply_config` and after every
    test that empties the database, so it costs three queries rather than three per catalog row."""
    providers = {p.slug: p for p in provider_model.objects.all()}
    with path.open(newline="") as fh:
        rows = [row for row in csv.DictReader(fh) if row["provider"] in providers]
    existing = {
        (price.provider_id, price.model, price.effective_from): price
        for price in price_model.objects.filter(
            provider__in=[providers[row["provider"]] for row in rows], model__in={row["model"] for row in rows}
        )
    }
    created, updated, loaded = [], [], 0
    for row in rows:
        provider = providers[row["provider"]]
        effective_from = dt.date.fromisoformat(row["effective_from"])
        values = {
            **{field: Decimal(row[field]) if row[field] else None for field in PRICE_FIELDS},
            "source": "catalog",
            "source_ref": row["source_ref"],
            "currency": "USD",
        }
        price = existing.get((provider.id, row["model"], effective_from))
        if price is None:
            created.append(price_model(provider=provider, model=row["model"], effective_from=effective_from, **values))
        elif price.source == "catalog":
            loaded += 1
            if any(getattr(price, field) != value for field, value in values.items()):
                for field, value in values.items():
                    setattr(price, field, value)
                updated.append(price)
    price_model.objects.bulk_create(created)
    # Only the rows whose values differ are written: a catalog already loaded (every test's reseed, a second
    # `apply_config`) is then a read, where one bulk UPDATE of every row (a CASE per field and row) cost ~0.15 s of
    # CPU for nothing. The count is still every catalog row created or matched, as before.
    price_model.objects.bulk_update(updated, [*PRICE_FIELDS, "source", "source_ref", "currency"])
    return len(created) + loaded
