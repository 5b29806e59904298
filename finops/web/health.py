"""Health endpoints for load balancers and monitoring (issue 16).

- `/health/`: liveness, 200 while the database answers (what a load balancer polls every few seconds).
- `/healthz`: readiness with details: the database, the broker (Redis; "inline" when tasks run in-process), and
  the age of the last successful sync of every enabled API account. 503 when the database or the broker does not
  answer, or when an enabled API account has not synced successfully for FINOPS_HEALTH_MAX_SYNC_AGE_HOURS (24 by
  default: its scheduled pulls run hourly, so a day without one is an outage, not a blip). File accounts are
  filled by people uploading exports and have no schedule to miss. Accounts are named by id for anonymous callers
  (monitoring does not sign in); a signed-in admin or finance user sees their names.
"""

import datetime as dt

from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.db import connection
from django.http import JsonResponse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from finops.core import access
from finops.models import Account
from finops.sources.models import API_CONNECTORS


@login_not_required
@never_cache
@require_safe
def health(request):
    """For load balancers and compose healthchecks: 200 when the database answers."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except Exception as exc:  # noqa: BLE001 - any database failure means unhealthy
        return JsonResponse({"status": "error", "database": type(exc).__name__}, status=503)
    return JsonResponse({"status": "ok", "database": "ok"})


@login_not_required
@never_cache
@require_safe
def healthz(request):
    checks = {"database": _database(), "broker": _broker()}
    syncs, stale = _syncs(named=access.sees_everything(request.user)) if checks["database"] == "ok" else ([], 0)
    healthy = all(value in ("ok", "inline") for value in checks.values()) and not stale
    body = {
        "status": "ok" if healthy else "error",
        **checks,
        "stale_accounts": stale,
        "syncs": syncs,
        "max_sync_age_hours": settings.FINOPS_HEALTH_MAX_SYNC_AGE_HOURS,
    }
    return JsonResponse(body, status=200 if healthy else 503)


def _database() -> str:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except Exception as exc:  # noqa: BLE001 - any database failure means unhealthy
        return f"error: {type(exc).__name__}"
    return "ok"


def _broker() -> str:
    if not settings.REDIS_URL:
        return "inline"  # no broker: tasks run in the process that queues them (the demo)
    import redis

    try:
        redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=2, socket_timeout=2).ping()
    except redis.RedisError as exc:
        return f"error: {type(exc).__name__}"
    return "ok"


def _syncs(*, named: bool) -> tuple[list[dict], int]:
    now = timezone.now()
    limit = dt.timedelta(hours=settings.FINOPS_HEALTH_MAX_SYNC_AGE_HOURS)
    found, stale = [], 0
    accounts = Account.objects.filter(enabled=True, connector__in=[c.value for c in API_CONNECTORS]).order_by("id")
    for account_id, name, last_success, created in accounts.values_list("id", "name", "last_success_at", "created_at"):
        since = last_success or created  # never synced: as old as the account
        age = now - since
        late = age > limit
        stale += late
        found.append(
            {
                "account": name if named else account_id,
                "last_success_at": last_success.isoformat() if last_success else None,
                "age_hours": round(age.total_seconds() / 3600, 1),
                "stale": late,
            }
        )
    return found, stale
