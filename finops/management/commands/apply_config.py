from django.core.management.base import BaseCommand, CommandError

from finops.config import ConfigInvalid, config_apply


class Command(BaseCommand):
    help = "Create or update teams, workloads, accounts, prices, FX rates and users from a YAML file (idempotent)."

    def add_arguments(self, parser):
        parser.add_argument("file", help="Path to the YAML config (format: docs/config.md).")

    def handle(self, *args, file, **options):
        try:
            result = config_apply(path=file)
        except ConfigInvalid as exc:
            raise CommandError(
                f"{file} was not applied; nothing changed:\n" + "\n".join(f"  {e}" for e in exc.errors)
            ) from None
        self.stdout.write(("Applied: " if result.changed else "No changes: ") + result.summary())
