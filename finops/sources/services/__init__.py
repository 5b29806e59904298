"""Writes of sources: accounts (secrets in, encrypted) and the seeded providers."""
