"""Commands with Redis (the cache and the Celery broker) unreachable end with one line and a non-zero exit, not a
traceback (issue 26). manage.py wraps every command in `one_line_when_services_down`. Imports nothing of Django's:
manage.py enters it before Django is set up."""

import sys
from contextlib import contextmanager

SERVICES = "Redis (REDIS_URL: the cache and the task queue)"


def _is_services_down(exc: BaseException) -> bool:
    try:
        import redis.exceptions
        from kombu.exceptions import OperationalError
    except ImportError:  # pragma: no cover - both are dependencies
        return False
    return isinstance(exc, redis.exceptions.ConnectionError | redis.exceptions.TimeoutError | OperationalError)


@contextmanager
def one_line_when_services_down(command: str):
    try:
        yield
    except Exception as exc:
        if not _is_services_down(exc):
            raise
        reason = " ".join(str(exc).split()) or type(exc).__name__
        sys.stderr.write(
            f"{command}: {SERVICES} cannot be reached ({reason}); nothing was queued. "
            "Start it, or check REDIS_URL, and run the command again.\n"
        )
        sys.exit(1)
