"""Key rotation for the secrets encrypted at rest (finops.core.crypto): provider keys and webhook signing secrets.

FINOPS_ENCRYPTION_KEY holds a list: the first key encrypts, every key decrypts (MultiFernet). Rotation is
therefore: put the new key first and keep the old one after it (everything keeps working: old secrets decrypt
with the old key, new ones are written with the new key), then run encryption_key_rotate (`manage.py
rotate_encryption_key`) to re-encrypt every stored secret under the new key, then drop the old key.

The re-encryption is one transaction over every row, each locked (SELECT … FOR UPDATE) so a concurrent edit waits:
interrupted, it changes nothing; rerun, it does it all. Rows already under the current key are left alone, so a
rerun after a completed rotation changes nothing. A secret no configured key can decrypt stops the rotation
(nothing changed) and is named, so the operator can set it again. Steps for operators: docs/security.md.
"""

from collections.abc import Callable
from dataclasses import dataclass, field

from django.db import transaction

from finops.core import crypto
from finops.models import Account, AuditEntry, Cap, Channel

from .audit import audit_record

# Every encrypted column: (model, field, the field that names a row in messages). tests/test_key_rotation.py fails
# when a model gains a *_ciphertext field that is not listed here.
ENCRYPTED_FIELDS = (
    (Account, "credentials_ciphertext", "name"),
    (Cap, "webhook_secret_ciphertext", "name"),
    (Channel, "url_ciphertext", "name"),
    (Channel, "secret_ciphertext", "name"),
)


class RotationFailed(Exception):
    """Secrets no configured key decrypts; nothing was changed."""


@dataclass
class RotationResult:
    rotated: dict[str, int] = field(default_factory=dict)  # "Account.credentials_ciphertext": rows re-encrypted
    current: int = 0  # rows already under the current key

    @property
    def total(self) -> int:
        return sum(self.rotated.values())


def encryption_key_rotate(
    *, by=None, after_row: Callable[[int], None] | None = None, dry_run: bool = False
) -> RotationResult:
    """Re-encrypt every stored secret under the first key of FINOPS_ENCRYPTION_KEY. `after_row(n)` is called after
    each re-encrypted row (n so far, inside the transaction): the tests interrupt a rotation half-way with it.
    `dry_run` counts what would be re-encrypted and changes nothing."""
    result = RotationResult()
    with transaction.atomic():
        unreadable = []
        for model, name, label in ENCRYPTED_FIELDS:
            key = f"{model.__name__}.{name}"
            result.rotated[key] = 0
            for row in model.objects.select_for_update().exclude(**{name: ""}).only("pk", name, label).order_by("pk"):
                ciphertext = getattr(row, name)
                if crypto.under_current_key(ciphertext):
                    result.current += 1
                    continue
                try:
                    new = crypto.rotated(ciphertext)
                except crypto.CredentialError:
                    unreadable.append(f"{model._meta.verbose_name} {getattr(row, label)!r}")
                    continue
                if not dry_run:
                    model.objects.filter(pk=row.pk).update(**{name: new})
                result.rotated[key] += 1
                if after_row is not None:
                    after_row(result.total)
        if unreadable:
            raise RotationFailed(
                "No key in FINOPS_ENCRYPTION_KEY decrypts the secret of: "
                + ", ".join(unreadable)
                + ". Add the key they were encrypted with (after the current one) and rerun, or set those secrets "
                "again. Nothing was changed."
            )
        if result.total and not dry_run:
            audit_record(
                entity_type=AuditEntry.Entity.ENCRYPTION_KEY,
                action=AuditEntry.Action.ROTATED,
                label="FINOPS_ENCRYPTION_KEY",
                by=by,
                after={"re-encrypted": dict(result.rotated)},
            )
    return result
