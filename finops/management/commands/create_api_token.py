import datetime as dt

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from knox.models import AuthToken

from finops.models import User

MAX_DAYS = 3650  # ten years: a token that never expires is a leaked token that never expires


class Command(BaseCommand):
    help = "Create an API token for USER and print it once; only a hash of it is stored."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--days", type=int, help=f"Days until it expires, 1 to {MAX_DAYS} (default: API_TOKEN_TTL_DAYS, 365).")

    def handle(self, *args, username, days, **options):
        if days is not None and not 1 <= days <= MAX_DAYS:
            raise CommandError(f"--days must be between 1 and {MAX_DAYS} (got {days}).")
        user = User.objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user named {username!r}.")
        expiry = dt.timedelta(days=days) if days is not None else settings.REST_KNOX["TOKEN_TTL"]
        _, token = AuthToken.objects.create(user=user, expiry=expiry)
        self.stdout.write(token)
        self.stderr.write(f"API token for {username}, shown once. Send it as: Authorization: Token <token>")
