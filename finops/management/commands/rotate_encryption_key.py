from django.core.management.base import BaseCommand, CommandError

from finops.org.services.audit import audit_source
from finops.org.services.encryption import RotationFailed, encryption_key_rotate


class Command(BaseCommand):
    help = (
        "Re-encrypt every stored secret (provider keys, webhook signing secrets) under the first key of "
        "FINOPS_ENCRYPTION_KEY, in one transaction. Safe to rerun. Steps: docs/security.md, 'Rotating the "
        "encryption key'."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true", help="Count what would be re-encrypted; change nothing.")

    def handle(self, *args, dry_run, **options):
        try:
            with audit_source("cli"):
                result = encryption_key_rotate(dry_run=dry_run)
        except RotationFailed as exc:
            raise CommandError(str(exc)) from None
        verb = "would be re-encrypted" if dry_run else "re-encrypted"
        for name, count in result.rotated.items():
            self.stdout.write(f"{name}: {count} {verb}")
        self.stdout.write(f"{result.current} already under the current key.")
        if not dry_run:
            self.stdout.write(
                "Every secret is now under the current key: the other keys may be removed from FINOPS_ENCRYPTION_KEY."
            )
