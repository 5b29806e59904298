"""Each offering's figures for the what-if (issue 13), with where each comes from: the catalog's price in force (an
offering's entered prices where the catalog has none), a contract's discount, and performance measured from the
company's gateway logs over the last 30 days (else the offering's entered figures). Read once per change of what it
reads (cached_catalogue). The reads of a workload's usage, the savings and a what-if are in finops.whatif.selectors.
"""

import datetime as dt
import hashlib
import json
from dataclasses import dataclass, field
from decimal import Decimal

from django.core.cache import cache
from django.db.models import Count, Max, Q

from finops.core import display
from finops.models import (
    DailyPerformance,
    ModelFamily,
    MonthlyPerformance,
    Offering,
)
from finops.performance.selectors import performance as performance_selector
from finops.prices.selectors import ContractDiscounts, PriceBook
from finops.whatif.calculator import Figure, OfferingFigures
from finops.whatif.families import FamilyMap, lineage
from finops.whatif.inputs import fingerprint

WINDOW_DAYS = 30
THOUSAND = Decimal(1000)


def window(today: dt.date) -> tuple[dt.date, dt.date]:
    return today - dt.timedelta(days=WINDOW_DAYS), today


def family_map() -> FamilyMap:
    """Aliases of the ModelFamily rows, then the offerings' models (docstring of finops.whatif.families)."""
    aliases = dict(Offering.objects.values_list("model", "family"))
    for family in ModelFamily.objects.all():
        aliases.update({alias: family.slug for alias in family.aliases})
    return FamilyMap(aliases)


@dataclass
class Catalogue:
    """Every offering's figures, read once (a page or a savings ranking evaluates many profiles against them)."""

    offerings: list[OfferingFigures]
    ids: dict[tuple[str, str], int] = field(default_factory=dict)  # (provider slug, model) -> offering id

    def of_family(self, family: str | None) -> list[OfferingFigures]:
        return [o for o in self.offerings if family is None or o.family == family]

    def families(self) -> list[str]:
        return sorted({o.family for o in self.offerings})


MEASURED_CACHE_SECONDS = 600


@dataclass(frozen=True)
class Measured:
    """What the what-if reads of a (provider, model)'s merged Performance over the window."""

    tokens_per_s: Decimal | None
    basis: str
    requests: int
    ttft_median_ms: float | None
    ttft_count: int
    ttft_p99_ms: float | None = None


def measured_performance(offerings: list[Offering], start: dt.date, end: dt.date) -> dict[tuple[int, str], Measured]:
    """Per offered (provider id, model): the figures read from performance_by over [start, end) (merged
    distributions, finops.performance.measures). Cached for MEASURED_CACHE_SECONDS under a key holding the window, the
    pairs and a fingerprint of the window's rollup rows (their count and largest id: any rebuild of a day inserts
    new rows), so an import shows at once; the cache spares re-merging a month of an organisation's gateway
    traffic on every what-if (docs/whatif.md, bench)."""
    pairs = sorted({(o.provider_id, o.model) for o in offerings})
    if not pairs:
        return {}
    fingerprint = DailyPerformance.objects.filter(day__gte=start, day__lt=end).aggregate(n=Count("id"), top=Max("id"))
    digest = hashlib.sha256(
        json.dumps(
            [
                start.isoformat(),
                end.isoformat(),
                pairs,
                fingerprint["n"],
                fingerprint["top"],
                MonthlyPerformance.objects.aggregate(top=Max("id"))["top"],
            ]
        ).encode()
    ).hexdigest()
    key = f"whatif:measured:v3:{digest}"
    found = cache.get(key)
    if found is not None:
        return found
    offered = Q()
    for provider_id, model in pairs:
        offered |= Q(provider_id=provider_id, model=model)
    merged = performance_selector.performance_by(None, start, end, keys=("provider_id", "model"), rows_where=offered)
    found = {}
    for pair, performance in merged.items():
        tokens_per_s, basis = performance.output_tokens_per_s
        found[pair] = Measured(
            tokens_per_s,
            basis,
            performance.requests,
            performance.ttft_p_ms(0.5),
            performance.ttft.count,
            performance.ttft_p_ms(0.99),
        )
    cache.set(key, found, MEASURED_CACHE_SECONDS)
    return found


def offered_families() -> list[str]:
    return sorted(set(Offering.objects.values_list("family", flat=True)))


def catalogue(today: dt.date, families: set[str] | None = None) -> Catalogue:
    """Every offering's figures (those of `families` only, when given)."""
    start, end = window(today)
    books = PriceBook.all_providers()
    discounts = ContractDiscounts.everywhere()
    rows = Offering.objects.select_related("provider").order_by("family", "provider__slug", "model", "tier")
    offerings = list(rows if families is None else rows.filter(family__in=families))
    measured = measured_performance(offerings, start, end)
    period = f"measured {start.isoformat()} – {(end - dt.timedelta(days=1)).isoformat()}"
    names = dict(ModelFamily.objects.exclude(name="").values_list("slug", "name"))
    figures, ids = [], {}
    for offering in offerings:
        price = books.get(offering.provider_id, PriceBook([])).price_on(offering.model, today)
        prices = _tier_prices(offering, price)
        found = measured.get((offering.provider_id, offering.model))
        speed, ttft = _performance(offering, found, period)
        p99 = Figure(None)
        if found is not None and found.ttft_p99_ms is not None and offering.tier != Offering.Tier.BATCH:
            p99 = Figure(Decimal(str(found.ttft_p99_ms)) / THOUSAND, f"{period} (p99, {found.ttft_count:,} requests)")
        figures.append(
            OfferingFigures(
                provider=offering.provider.slug,
                provider_name=offering.provider.name,
                model=offering.model,
                family=offering.family,
                **prices,
                output_tokens_per_s=speed,
                ttft_seconds=ttft,
                context_window=offering.context_window,
                discount_pct=discounts.discount_pct(offering.provider_id, today),
                tier=offering.tier,
                ttft_p99_seconds=p99,
                requests_per_minute=offering.requests_per_minute,
                tokens_per_minute=offering.tokens_per_minute,
                family_name=names.get(offering.family) or display.model_name(offering.family),
                model_name=names.get(offering.family) or display.model_name(offering.model),
                lineage=lineage(offering.family),
            )
        )
        ids[(offering.provider.slug, offering.model, offering.tier)] = offering.id
    return Catalogue(figures, ids)


CATALOGUE_CACHE_SECONDS = 6 * 3600  # the key changes with every input (whatif_inputs); this bounds what is kept


def cached_catalogue(today: dt.date, families: set[str] | None = None) -> Catalogue:
    """catalogue(today, families), computed once per change of what it reads (finops.whatif.inputs): a
    what-if then reads one fingerprint instead of the prices, offerings and measured performance (issue 28)."""
    wanted = "*" if families is None else ",".join(sorted(families))
    key = f"whatif:catalogue:v1:{hashlib.sha256(wanted.encode()).hexdigest()}:{fingerprint(today)}"
    found = cache.get(key)
    if found is None:
        found = catalogue(today, families)
        cache.set(key, found, CATALOGUE_CACHE_SECONDS)
    return found


PRICE_NAMES = ("input_per_mtok", "cached_input_per_mtok", "cache_write_per_mtok", "output_per_mtok")


def _tier_prices(offering: Offering, price) -> dict[str, Figure]:
    """Catalog beats entered. The batch tier reads the catalog's batch columns; the batch discount applies to cache
    reads and writes too (as Anthropic and OpenAI bill them). Flex and priority have no catalog columns: their
    prices are the offering's own (finops/data/offerings.csv)."""
    if price is None or offering.tier not in (Offering.Tier.STANDARD, Offering.Tier.BATCH):
        return _entered_prices(offering)
    source = f"catalog from {price.effective_from.isoformat()}"
    values = {name: getattr(price, name) for name in PRICE_NAMES}
    if offering.tier == Offering.Tier.BATCH:
        if price.batch_input_per_mtok is None or price.batch_output_per_mtok is None:
            return _entered_prices(offering)
        source = f"catalog batch from {price.effective_from.isoformat()}"
        ratio = price.batch_input_per_mtok / price.input_per_mtok if price.input_per_mtok else Decimal(1)
        values = {
            "input_per_mtok": price.batch_input_per_mtok,
            "output_per_mtok": price.batch_output_per_mtok,
            "cached_input_per_mtok": None
            if price.cached_input_per_mtok is None
            else price.cached_input_per_mtok * ratio,
            "cache_write_per_mtok": None if price.cache_write_per_mtok is None else price.cache_write_per_mtok * ratio,
        }
    return {
        **{name: Figure(value, source if value is not None else "") for name, value in values.items()},
        "blended_per_mtok": Figure(None),
    }


def _entered_prices(offering: Offering) -> dict[str, Figure]:
    return {
        name: Figure(getattr(offering, name), "entered" if getattr(offering, name) is not None else "")
        for name in (*PRICE_NAMES, "blended_per_mtok")
    }


def _performance(offering: Offering, measured: Measured | None, period: str) -> tuple[Figure, Figure]:
    """Measured beats entered, figure by figure."""
    speed = Figure(offering.output_tokens_per_s, "entered" if offering.output_tokens_per_s is not None else "")
    ttft = Figure(offering.ttft_seconds, "entered" if offering.ttft_seconds is not None else "")
    if measured is not None:
        if measured.tokens_per_s:
            speed = Figure(measured.tokens_per_s, f"{period} ({measured.basis}, {measured.requests:,} requests)")
        if measured.ttft_median_ms is not None:
            ttft = Figure(
                Decimal(str(measured.ttft_median_ms)) / THOUSAND, f"{period} (median, {measured.ttft_count:,} requests)"
            )
    return speed, ttft
