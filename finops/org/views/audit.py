"""The audit log page (admins only; anyone else gets 404): every change to accounts, rules, caps, contracts,
offerings, users and API tokens, newest first, filtered in the URL, 50 a page; `?csv=audit` downloads every entry
the filters match, with the page's columns and the full before/after (finops.reports.audit_tables)."""

import datetime as dt

from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import render
from django.views.decorators.http import require_safe

from finops.core import access
from finops.models import AuditEntry
from finops.org.selectors.audit import AuditFilters, audit_actors, audit_entries, audit_row, audit_rows
from finops.reports.audit_tables import AUDIT_LOG
from finops.web.tables import csv_response

PER_PAGE = 50


def _day(value: str) -> dt.date | None:
    """A filter day, or None when empty or unreadable (a bad day filters nothing rather than failing)."""
    try:
        day = dt.date.fromisoformat(value) if value else None
    except ValueError:
        return None
    return day if day is not None and 2000 <= day.year <= 2099 else None


def filters_from(query) -> AuditFilters:
    entity_type = query.get("entity", "")
    action = query.get("action", "")
    return AuditFilters(
        entity_type=entity_type if entity_type in AuditEntry.Entity.values else "",
        action=action if action in AuditEntry.Action.values else "",
        actor=query.get("actor", "")[:150],
        search=query.get("q", "").strip()[:100],
        start=_day(query.get("start", "")),
        end=_day(query.get("end", "")),
    )


@require_safe
def audit_log(request):
    if not access.can_see_audit_log(request.user):
        raise Http404("No such page.")
    filters = filters_from(request.GET)
    entries = audit_entries(filters)
    if request.GET.get("csv") == AUDIT_LOG.name:
        stem = f"{filters.start or 'all'}-{filters.end or 'now'}"
        # Every matching entry, read in chunks and written as it is read: the log grows without bound.
        return csv_response(f"audit-log-{stem}", AUDIT_LOG, (audit_row(e) for e in entries.iterator(chunk_size=2000)))
    page = Paginator(entries, PER_PAGE).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    return render(
        request,
        "finops/audit_log.html",
        {
            "page": page,
            "rows": audit_rows(page.object_list),
            "table": AUDIT_LOG,
            "filters": filters,
            "entities": AuditEntry.Entity.choices,
            "actions": AuditEntry.Action.choices,
            "actors": audit_actors(),
            "filtered": any(request.GET.get(k) for k in ("entity", "action", "actor", "q", "start", "end")),
            "csv_query": (query.urlencode() + "&" if query else "") + f"csv={AUDIT_LOG.name}",
        },
    )
