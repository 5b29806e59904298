from django.core.management.base import BaseCommand, CommandError

from finops.performance.services.outcomes import CSV_COLUMNS, OutcomesInvalid, outcomes_import_csv


class Command(BaseCommand):
    help = (
        f"Record outcome counts from a CSV ({CSV_COLUMNS}, header line required) as one batch: all or nothing; "
        "a count for a workload, day and source already stored is replaced (docs/outcomes.md)."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", metavar="FILE.csv")
        parser.add_argument("--source", default="", help="The source of rows whose source column is blank or absent.")

    def handle(self, *args, file, source, **options):
        try:
            with open(file, newline="", encoding="utf-8-sig") as stream:
                # The operator runs this command: trusted like config as code, any workload (by=None).
                result = outcomes_import_csv(by=None, stream=stream, source_default=source)
        except OSError as exc:
            raise CommandError(f"{file}: {exc.strerror}") from None
        except OutcomesInvalid as exc:
            raise CommandError(f"{file} rejected, nothing applied:\n" + "\n".join(exc.errors)) from None
        self.stdout.write(
            f"{file}: {result.rows} rows: {result.created} created, {result.replaced} replaced, "
            f"{result.unchanged} unchanged."
        )
