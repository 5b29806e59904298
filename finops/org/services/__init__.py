"""Writes of the organisation: users and memberships, API tokens, the audit log, the rotation of the key that
encrypts secrets at rest."""
