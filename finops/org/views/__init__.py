"""The organisation's pages: the audit log, API tokens."""
