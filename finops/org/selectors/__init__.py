"""Reads of the organisation: the audit log."""
