"""Encryption at rest for provider credentials (docs/architecture.md invariant 10).

Keys come from FINOPS_ENCRYPTION_KEY: one Fernet key, or several comma-separated for rotation
(the first encrypts, every key decrypts). Errors never include the secret or the ciphertext.
"""

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

HINT_LENGTH = 8


class CredentialError(Exception):
    """A stored secret cannot be decrypted with the configured keys."""


def generate_key() -> str:
    return Fernet.generate_key().decode()


def _fernet() -> MultiFernet:
    keys = settings.FINOPS_ENCRYPTION_KEYS
    if not keys:
        raise ImproperlyConfigured(
            "FINOPS_ENCRYPTION_KEY is not set: provider credentials cannot be stored. "
            "Generate one with `python manage.py generate_encryption_key`."
        )
    try:
        return MultiFernet([Fernet(key.encode()) for key in keys])
    except ValueError as exc:
        raise ImproperlyConfigured(
            "FINOPS_ENCRYPTION_KEY is not a valid Fernet key (32 url-safe base64 bytes)."
        ) from exc


def encrypt(secret: str) -> str:
    return _fernet().encrypt(secret.encode()).decode()


def decrypt(ciphertext: str) -> str:
    try:
        return _fernet().decrypt(ciphertext.encode()).decode()
    except InvalidToken:
        raise CredentialError(
            "Stored credentials cannot be decrypted with FINOPS_ENCRYPTION_KEY (was the key changed?)."
        ) from None


def rotated(ciphertext: str) -> str:
    """The same secret encrypted under the first (current) key; any configured key may have encrypted it."""
    try:
        return _fernet().rotate(ciphertext.encode()).decode()
    except InvalidToken:
        raise CredentialError("A stored secret cannot be decrypted with any key in FINOPS_ENCRYPTION_KEY.") from None


def under_current_key(ciphertext: str) -> bool:
    """Whether the first (current) key alone decrypts it: nothing to rotate."""
    try:
        Fernet(settings.FINOPS_ENCRYPTION_KEYS[0].encode()).decrypt(ciphertext.encode())
    except InvalidToken:
        return False
    return True


def hint(secret: str) -> str:
    """The part of a secret that may be shown: its first few characters, never more than a third of it."""
    return secret[: min(HINT_LENGTH, len(secret) // 3)]
