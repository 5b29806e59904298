"""Writes of unit economics and performance: outcome counts, eval scores, reported metrics, and what their
intakes share."""
