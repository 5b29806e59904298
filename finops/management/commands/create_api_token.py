from django.core.management.base import BaseCommand, CommandError

from finops.models import ApiToken, User
from finops.org.services.api_tokens import MAX_DAYS, MIN_DAYS, ApiTokenInvalid, api_token_create
from finops.org.services.audit import audit_source


class Command(BaseCommand):
    help = (
        "Create an API token for USER and print it once; only a hash of it is stored. Read-only unless "
        "--scope write. People can also make their own on the API tokens page."
    )

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument(
            "--days",
            type=int,
            help=f"Days until it expires, {MIN_DAYS} to {MAX_DAYS} (default: API_TOKEN_TTL_DAYS, 365).",
        )
        parser.add_argument(
            "--scope",
            choices=ApiToken.Scope.values,
            default=ApiToken.Scope.READ,
            help="read (the default): GET only; write: whatever USER's role may do.",
        )
        parser.add_argument("--name", default="", help="Where the token is used (default: 'command line').")
        parser.add_argument("--description", default="")

    def handle(self, *args, username, days, scope, name, description, **options):
        from django.conf import settings

        if days is not None and not MIN_DAYS <= days <= MAX_DAYS:
            raise CommandError(f"--days must be between {MIN_DAYS} and {MAX_DAYS} (got {days}).")
        user = User.objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user named {username!r}.")
        days = days if days is not None else settings.REST_KNOX["TOKEN_TTL"].days
        try:
            with audit_source("cli"):
                token, secret = api_token_create(
                    user=user, name=name or "command line", description=description, scope=scope, days=days
                )
        except ApiTokenInvalid as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(secret)
        self.stderr.write(
            f"{token.get_scope_display()} API token {token.prefix}… for {username}, expires "
            f"{token.expires_at:%Y-%m-%d}, shown once. Send it as: Authorization: Token <token>"
        )
