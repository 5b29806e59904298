"""Conversion into the reporting currency with dated rates; a missing rate is an error, never 1:1."""

import datetime as dt
from decimal import Decimal

from django.conf import settings

from finops.models import FxRate


class MissingFxRate(Exception):
    def __init__(self, currency: str, day: dt.date):
        super().__init__(
            f"No FX rate for {currency} on or before {day.isoformat()}: add one "
            f"(config `fx_rates:` or the admin) so {currency} amounts convert to {settings.FINOPS_REPORTING_CURRENCY}."
        )
        self.currency = currency
        self.day = day


class FxConverter:
    """Rates hold from their day until the next rate of the same currency."""

    def __init__(self):
        """Loads every rate at once: ingestion converts while a COPY holds the database connection."""
        self.reporting_currency = settings.FINOPS_REPORTING_CURRENCY
        self._rates: dict[str, list[tuple[dt.date, Decimal]]] = {}
        for currency, day, rate in FxRate.objects.order_by("currency", "-day").values_list("currency", "day", "rate"):
            self._rates.setdefault(currency, []).append((day, rate))

    def _rates_for(self, currency: str) -> list[tuple[dt.date, Decimal]]:
        return self._rates.get(currency, [])

    def to_reporting(self, amount: Decimal, currency: str, day: dt.date) -> Decimal:
        if currency == self.reporting_currency:
            return amount
        for rate_day, rate in self._rates_for(currency):
            if rate_day <= day:
                return amount * rate
        raise MissingFxRate(currency, day)
