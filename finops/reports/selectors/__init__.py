"""Reads of the monthly report: the report itself, its sections, the subscriptions."""
