from django.core.management.base import BaseCommand

from finops.config import config_export


class Command(BaseCommand):
    help = "Print the current configuration in the format apply_config reads (secrets are never printed)."

    def handle(self, *args, **options):
        self.stdout.write(config_export(), ending="")
