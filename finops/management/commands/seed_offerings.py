from django.core.management.base import BaseCommand

from finops.whatif.services import SEED_PATH, offerings_seed


class Command(BaseCommand):
    help = (
        "Create the seed offerings (finops/data/offerings.csv: the models people buy on every cloud that sells them, "
        "each tier) the install does not have yet; never overwrites one set by config or by hand (docs/whatif.md)."
    )

    def handle(self, *args, **options):
        created = offerings_seed()
        self.stdout.write(f"{created} offerings created from {SEED_PATH.name}")
