"""Reads of the audit log: the admins' page and its CSV (same filters, same rows), and one entity's history."""

import datetime as dt
import json
from dataclasses import dataclass

from django.db.models import QuerySet

from finops.models import AuditEntry


@dataclass(frozen=True)
class AuditFilters:
    entity_type: str = ""
    action: str = ""
    actor: str = ""  # a username or a source ("config", "cli"), exactly as shown
    search: str = ""  # part of the entity's name
    start: dt.date | None = None  # UTC days, half-open [start, end)
    end: dt.date | None = None


def audit_entries(filters: AuditFilters) -> QuerySet[AuditEntry]:
    entries = AuditEntry.objects.all()
    if filters.entity_type:
        entries = entries.filter(entity_type=filters.entity_type)
    if filters.action:
        entries = entries.filter(action=filters.action)
    if filters.actor:
        entries = entries.filter(actor_label=filters.actor)
    if filters.search:
        entries = entries.filter(entity_label__icontains=filters.search)
    if filters.start:
        entries = entries.filter(at__gte=dt.datetime.combine(filters.start, dt.time(), dt.UTC))
    if filters.end:
        entries = entries.filter(at__lt=dt.datetime.combine(filters.end, dt.time(), dt.UTC))
    return entries.order_by("-at", "-id")


def audit_actors() -> list[str]:
    """Everyone (and every source) that has changed something, for the filter's choices."""
    return sorted(AuditEntry.objects.values_list("actor_label", flat=True).distinct())


def entity_history(entity_type: str, entity_id, *, limit: int = 50) -> list[AuditEntry]:
    return list(
        AuditEntry.objects.filter(entity_type=entity_type, entity_id=str(entity_id)).order_by("-at", "-id")[:limit]
    )


def _short(value) -> str:
    if value is None or value == "":
        return "—"
    if isinstance(value, (list, dict)):
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    return str(value)


def change_summary(entry: AuditEntry) -> str:
    """ "field: old → new; …" for an update; the fields set for a creation; what was there for a deletion."""
    before, after = entry.before or {}, entry.after or {}
    if entry.before is None:
        return "; ".join(f"{k}: {_short(v)}" for k, v in sorted(after.items()) if v not in (None, "", [], {}))
    if entry.after is None:
        return "; ".join(f"{k}: {_short(v)}" for k, v in sorted(before.items()) if v not in (None, "", [], {}))
    return "; ".join(f"{k}: {_short(before.get(k))} → {_short(after.get(k))}" for k in entry.changed)


def audit_row(e: AuditEntry) -> dict:
    """One row of finops.reports.audit_tables.AUDIT_LOG (the page and the CSV)."""
    return {
        "at": e.at.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S"),
        "actor": e.actor_label,
        "source": e.source,
        "verb": e.get_action_display(),
        "entity_type": e.get_entity_type_display(),
        "entity": e.entity_label,
        "entity_id": e.entity_id,
        "changes": change_summary(e),
        "before": _short(e.before) if e.before is not None else "",
        "after": _short(e.after) if e.after is not None else "",
    }


def audit_rows(entries) -> list[dict]:
    return [audit_row(e) for e in entries]
