"""Writes on provider accounts. Secrets go in encrypted and only ever come back out to a connector."""

from finops import crypto
from finops.models import Account


def account_set_credentials(*, account: Account, secret: str) -> None:
    account.credentials_ciphertext = crypto.encrypt(secret) if secret else ""
    account.credentials_hint = crypto.hint(secret) if secret else ""
    account.save(update_fields=["credentials_ciphertext", "credentials_hint", "updated_at"])


def account_credentials_matches(*, account: Account, secret: str) -> bool:
    """Whether the stored secret is `secret` (config apply skips a rewrite when nothing changed)."""
    if not account.credentials_ciphertext:
        return not secret
    return crypto.decrypt(account.credentials_ciphertext) == secret


def account_credentials(*, account: Account) -> str:
    """The plain secret, for a connector's request header only: never log or render it."""
    if not account.credentials_ciphertext:
        return ""
    return crypto.decrypt(account.credentials_ciphertext)
