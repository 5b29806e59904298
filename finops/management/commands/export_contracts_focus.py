from django.core.management.base import BaseCommand

from finops.contracts.focus_export import write_focus_csv
from finops.models import Contract


class Command(BaseCommand):
    help = (
        "Write every contract's commitment periods as a FOCUS 1.3 Contract Commitment CSV (docs/contracts.md): "
        "to stdout, or to --out FILE."
    )

    def add_arguments(self, parser):
        parser.add_argument("--out", metavar="FILE", help="Write here instead of stdout.")

    def handle(self, *args, out=None, **options):
        contracts = Contract.objects.prefetch_related("past_terms").order_by("id")
        if out:
            with open(out, "w", newline="", encoding="utf-8") as stream:
                count = write_focus_csv(contracts, stream)
            self.stderr.write(f"{count} commitment rows written to {out}")
        else:
            write_focus_csv(contracts, self.stdout)
