from django.core.management.base import BaseCommand

from finops.core.crypto import generate_key


class Command(BaseCommand):
    help = "Print a new Fernet key for FINOPS_ENCRYPTION_KEY."

    def handle(self, *args, **options):
        self.stdout.write(generate_key())
