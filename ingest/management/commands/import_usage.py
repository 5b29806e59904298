from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from finops.models import Account, ConnectorKind, IngestRun, Provider
from finops.org.services.audit import audit_source
from finops.sources.services.accounts import AccountInvalid, account_create
from ingest.services import usage_file_import


class Command(BaseCommand):
    help = (
        "Import usage export files into an account; each file replaces the days it covers for that account. "
        "Prints read / written / replaced / rejected per file; exits non-zero, writing nothing of that file, on "
        "a bad one."
    )

    def add_arguments(self, parser):
        parser.add_argument("files", nargs="+", metavar="FILE")
        parser.add_argument("--account", required=True, help="Account name.")
        parser.add_argument("--connector", choices=ConnectorKind.values, help="Create the account with this connector.")
        parser.add_argument("--provider", help="Create the account for this provider slug.")

    def handle(self, *args, files, account, connector, provider, **options):
        target = self._account(account, connector, provider)
        failed = 0
        for file in files:
            path = Path(file)
            if not path.is_file():
                raise CommandError(f"{file}: no such file")
            with path.open("rb") as stream:
                run = usage_file_import(
                    account=target, stream=stream, file_name=path.name, trigger=IngestRun.Trigger.COMMAND
                )
            counts = (
                f"read {run.lines_read}, written {run.lines_written}, replaced {run.lines_replaced}, "
                f"rejected {run.lines_rejected}"
            )
            if run.status == IngestRun.Status.SUCCEEDED:
                self.stdout.write(f"{path.name}: {counts}" + (f"; {run.left_out_summary}" if run.left_out else ""))
            else:
                failed += 1
                self.stderr.write(f"{path.name}: FAILED, nothing written: {run.error}")
        if failed:
            raise CommandError(f"{failed} of {len(files)} file(s) failed")

    def _account(self, name, connector, provider_slug) -> Account:
        account = Account.objects.filter(name=name).first()
        if account is not None:
            return account
        if not (connector and provider_slug):
            raise CommandError(f"No account named {name!r}; pass --connector and --provider to create it.")
        provider = Provider.objects.filter(slug=provider_slug).first()
        if provider is None:
            raise CommandError(f"Unknown provider {provider_slug!r}.")
        with audit_source("cli"):  # the account write path, audited like the pages' (finops.sources.services.accounts)
            try:
                return account_create(name=name, provider=provider, connector=connector)
            except AccountInvalid as exc:
                raise CommandError(str(exc)) from None
