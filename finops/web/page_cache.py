"""Pages served from a cache of their HTML, never stale (issue 23: throughput at 32 sessions).

The rule (docs/performance.md, "Page cache"): an entry is keyed on

- the **data version** (finops/web/data_version.py), which Postgres moves at the commit of any write to any table
  a page could read — spend, rollups, configuration, rules, prices, outcomes, evals, users, roles, memberships —
  so a page computed before a write is never served after it;
- the **viewer**: one user's entries are never another's. What a person may see (finops.core.access) follows from
  their role and teams, which are rows (a change moves the version); the page also carries their name and display
  time zone. Sharing entries between users of the same scope would need those out of the cached HTML: not done;
- the URL (path and query), the host, the UTC day (pages read "today": month to date, the default period,
  freshness), the active display time zone, the database's name and the code (a deploy changes templates).

Only signed-in GETs answering 200 with HTML are stored; downloads (`csv=`, `xlsx=`), requests with flash messages
waiting (they are shown once, by the page that renders them) and requests inside a transaction (whose own uncommitted
writes a stored page would carry under a version another commit may reach) are computed, never cached. The CSRF
token in the HTML is replaced by a placeholder when stored and by the requesting session's token when served. A cache
that fails (Redis down) is skipped with a warning: the page is computed, as without a cache. Entries expire after
PAGE_CACHE_SECONDS anyway (settings), so that a database restored from a backup (whose version goes back) cannot
serve pages of the later state for long (after a restore, clear the cache: Redis `FLUSHDB` on its database).
"""

import datetime as dt
import functools
import hashlib
import logging
import re
from pathlib import Path

from django.conf import settings
from django.core.cache import caches
from django.db import connection
from django.http import HttpResponse
from django.middleware.csrf import get_token
from django.utils import timezone

from . import data_version

log = logging.getLogger(__name__)

CSRF_INPUT = re.compile(rb'(name="csrfmiddlewaretoken" value=")[^"]*(")')
PLACEHOLDER = b"\x00csrf\x00"
HEADER = "X-Page-Cache"


@functools.cache
def code_version() -> str:
    """A digest of the code, templates and static files (their contents: a deploy may keep sizes and times): a
    deploy starts a new cache. Read once per process (~6 MB)."""
    base = Path(settings.BASE_DIR)
    digest = hashlib.sha256()
    for folder, suffixes in (("finops", (".py",)), ("templates", (".html",)), ("static", None)):
        for path in sorted((base / folder).rglob("*")):
            if path.is_file() and (suffixes is None or path.suffix in suffixes):
                digest.update(str(path.relative_to(base)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def _messages_waiting(request) -> bool:
    if request.COOKIES.get(getattr(settings, "MESSAGE_COOKIE_NAME", "messages")):
        return True
    session = getattr(request, "session", None)
    return bool(session is not None and session.get("_messages"))


def cacheable(request) -> bool:
    return (
        getattr(settings, "PAGE_CACHE_SECONDS", 0) > 0
        and request.method == "GET"
        and request.user.is_authenticated
        and not connection.in_atomic_block
        and not {"csv", "xlsx"} & set(request.GET)
        and not _messages_waiting(request)
    )


def settings_version() -> str:
    """The product's own settings (FINOPS_*: the reporting currency, the display time zone, …) as they are now: a
    restart with another value starts a new cache."""
    values = sorted(
        (name, repr(getattr(settings, name)))
        for name in dir(settings)
        if name.startswith("FINOPS_") and "KEY" not in name  # no secret goes into a key, even hashed
    )
    return hashlib.sha256(repr(values).encode()).hexdigest()[:16]


def page_key(request, version: str) -> str:
    parts = (
        code_version(),
        settings_version(),
        connection.settings_dict["NAME"],
        version,
        str(request.user.pk),
        request.get_host(),
        request.get_full_path(),
        dt.datetime.now(dt.UTC).date().isoformat(),
        timezone.get_current_timezone_name(),
    )
    return "page:" + hashlib.sha256("\x1f".join(parts).encode()).hexdigest()


def _cache_get(key: str):
    try:
        return caches["pages"].get(key)
    except Exception:  # noqa: BLE001 — Redis down or answering garbage: compute the page, never fail it
        log.warning("page cache: reading %s failed; computing the page", key, exc_info=True)
        return None


def _cache_set(key: str, value) -> None:
    try:
        caches["pages"].set(key, value, settings.PAGE_CACHE_SECONDS)
    except Exception:  # noqa: BLE001 — as above: the page was computed and is answered all the same
        log.warning("page cache: storing %s failed", key, exc_info=True)


def cached_page(view):
    """Serve the view's page from the cache when it may be (module docstring), else compute it and store it."""

    @functools.wraps(view)
    def wrapper(request, *args, **kwargs):
        if not cacheable(request) or (version := data_version.current()) is None:
            return view(request, *args, **kwargs)
        key = page_key(request, version)
        found = _cache_get(key)
        if found is not None:
            content, content_type = found
            response = HttpResponse(
                content.replace(PLACEHOLDER, get_token(request).encode()), content_type=content_type
            )
            response[HEADER] = "hit"
            return response
        response = view(request, *args, **kwargs)
        content_type = response.get("Content-Type", "")
        if (
            response.status_code == 200
            and not response.streaming
            and content_type.startswith("text/html")
            and not response.has_header("Content-Disposition")
        ):
            _cache_set(key, (CSRF_INPUT.sub(rb"\g<1>" + PLACEHOLDER + rb"\g<2>", response.content), content_type))
            response[HEADER] = "miss"
        return response

    return wrapper
