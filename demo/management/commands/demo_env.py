import os
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand
from django.core.management.utils import get_random_secret_key

from finops.core.crypto import generate_key

TEMPLATE = """\
# Written by `manage.py demo_env` for the local demo: DEBUG on, SQLite (no DATABASE_URL),
# Celery tasks inline (no REDIS_URL), email printed to the console. Not for production (README, Configuration).
DEBUG=1
SECRET_KEY='{secret_key}'
FINOPS_ENCRYPTION_KEY={encryption_key}
# The demo's stand-in Slack (/demo/slack/ of the demo itself) on loopback, which the egress policy refuses unless
# allowed: exactly that host (docs/alerts.md).
FINOPS_DEMO_SLACK=1
FINOPS_EGRESS_ALLOWED_NETWORKS=127.0.0.1/32
"""


def _secret_key() -> str:
    # django-environ reads a value starting with `$` as a reference to another variable.
    key = get_random_secret_key()
    while key.startswith("$"):
        key = get_random_secret_key()
    return key


class Command(BaseCommand):
    help = "Write a .env for the local demo (DEBUG, fresh SECRET_KEY and FINOPS_ENCRYPTION_KEY), unless one exists."

    def add_arguments(self, parser):
        parser.add_argument("--path", type=Path, default=settings.BASE_DIR / ".env", help="Default: beside manage.py.")

    def handle(self, *args, path, **options):
        try:
            # O_EXCL: never overwrite a .env, even one written between a check and the write; 0600: it holds keys.
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            self.stdout.write(f"{path} exists; left as it is.")
            return
        with os.fdopen(fd, "w") as fh:
            fh.write(TEMPLATE.format(secret_key=_secret_key(), encryption_key=generate_key()))
        self.stdout.write(self.style.SUCCESS(f"Wrote {path} (DEBUG=1, new SECRET_KEY and FINOPS_ENCRYPTION_KEY)."))
