"""The Celery app. Queues: ingest, rollup, notify (docs/architecture.md, scale-out path).

With no REDIS_URL the settings make every task run inline, so the demo needs no broker.
The beat schedule lives in settings (CELERY_BEAT_SCHEDULE), each entry with `expires` just under its period.
"""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "finops.settings")

app = Celery("finops")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
