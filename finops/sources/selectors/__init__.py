"""Reads of sources: one status per account (working, fresh), the freshness rows of the overview."""
