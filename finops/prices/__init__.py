"""Prices, one domain in one folder (issue 27): list prices and dated FX rates (models.py), reading a price and
costing a line (selectors.py), loading the seed catalog (services.py), conversion into the reporting currency
(fx.py), the ISO 4217 currency codes (iso4217.py)."""
