import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "finops.settings")
application = get_wsgi_application()

# Each gunicorn worker imports this module once: the pages' code is loaded before the first request and the
# start-up objects are kept out of the full garbage collections (finops/web/startup.py, docs/performance.md).
from finops.web.startup import settle  # noqa: E402 — after Django is set up

settle()
