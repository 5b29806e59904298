"""Writes on attribution rules from the UI and the API: each is audited and queues a re-attribution job."""

from django.core.cache import cache
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from finops import tasks  # services import tasks; tasks import services inside their bodies
from finops.alerts.services.spend_changes import spend_changed
from finops.core.text import storable
from finops.models import AttributionRule, AuditEntry, ReattributionJob
from finops.org.services.audit import audit_record

from .attribution import Reattribution, history_reattribute
from .rollups import rollups_vacuum

FIELDS = ("workload", "priority", "account", "provider", "project", "api_key", "user", "model", "tags")


def rule_snapshot(rule: AttributionRule) -> dict:
    return {"workload": rule.workload.slug, "priority": rule.priority, "match": rule.conditions()}


def rule_tags_problem(tags: dict) -> str | None:
    """Why a rule's tag match cannot be stored, or None (the form, the API and config all ask this): keys must be
    non-empty and free of `__` (the ORM's lookup separator) and of what Postgres cannot store (NUL, which jsonb
    refuses, and a lone surrogate, which UTF-8 cannot encode: finops.core.text)."""
    bad = [key for key in tags if not key or "__" in key or not storable(str(key))]
    if bad:
        return f"tag keys must be non-empty, without '__' and without NUL characters: {bad}"
    if any(not storable(str(value)) for value in tags.values()):
        return "tag values cannot contain NUL characters"
    return None


def _audit(rule, action, before, by, source) -> None:
    audit_record(
        entity_type=AuditEntry.Entity.RULE,
        action=action,
        label=str(rule),
        entity_id=rule.pk,
        by=by,
        before=before,
        after=None if action == AuditEntry.Action.DELETED else rule_snapshot(rule),
        source=source,
    )


def reattribution_request(*, reason: str, by=None) -> ReattributionJob:
    job = ReattributionJob.objects.create(reason=reason[:255], requested_by=by)
    tasks.reattribute.delay_on_commit(job.id)
    return job


# `reattribute=False`: the caller re-attributes once after several changes, in its own transaction (config
# apply: a whole rule set, one re-attribution, one "spend changed" signal for the apply).


@transaction.atomic
def rule_create(
    *, by, source: str | None = None, reattribute: bool = True, **fields
) -> tuple[AttributionRule, ReattributionJob | None]:
    rule = AttributionRule.objects.create(**{k: v for k, v in fields.items() if k in FIELDS})
    _audit(rule, AuditEntry.Action.CREATED, None, by, source)
    return rule, reattribution_request(reason=f"rule {rule} created", by=by) if reattribute else None


@transaction.atomic
def rule_update(
    *, rule: AttributionRule, by, source: str | None = None, reattribute: bool = True, **fields
) -> tuple[AttributionRule, ReattributionJob | None]:
    before = rule_snapshot(rule)
    for key, value in fields.items():
        if key in FIELDS:
            setattr(rule, key, value)
    rule.save()
    if rule_snapshot(rule) == before:
        return rule, None
    _audit(rule, AuditEntry.Action.UPDATED, before, by, source)
    return rule, reattribution_request(reason=f"rule {rule} changed", by=by) if reattribute else None


@transaction.atomic
def rule_delete(
    *, rule: AttributionRule, by, source: str | None = None, reattribute: bool = True
) -> ReattributionJob | None:
    _audit(rule, AuditEntry.Action.DELETED, rule_snapshot(rule), by, source)
    label = str(rule)
    rule.delete()
    return reattribution_request(reason=f"rule {label} deleted", by=by) if reattribute else None


@transaction.atomic
def rule_move(*, rule: AttributionRule, direction: int, by, source: str | None = None) -> ReattributionJob | None:
    """Swap priorities with the neighbour above (-1) or below (+1) in the evaluation order."""
    ordered = list(AttributionRule.objects.order_by("priority", "id"))
    index = ordered.index(rule) + direction
    if not 0 <= index < len(ordered):
        return None
    other = ordered[index]
    rule_p, other_p = rule.priority, other.priority
    if rule_p == other_p:  # equal priorities are ordered by age: make the order explicit first
        other_p = rule_p + direction
        AttributionRule.objects.filter(priority__gte=max(rule_p, other_p)).exclude(id__in=[rule.id, other.id]).update(
            priority=F("priority") + 1
        )
    before_rule, before_other = rule_snapshot(rule), rule_snapshot(other)
    rule.priority, other.priority = other_p, rule_p
    rule.save(update_fields=["priority", "updated_at"])
    other.save(update_fields=["priority", "updated_at"])
    _audit(rule, AuditEntry.Action.UPDATED, before_rule, by, source)
    _audit(other, AuditEntry.Action.UPDATED, before_other, by, source)
    return reattribution_request(reason=f"rule {rule} moved {'up' if direction < 0 else 'down'}", by=by)


def reattribution_signal(result: Reattribution, *, reason: str) -> None:
    """Spend changed on the days whose lines moved, for the workloads that lost or gained them and their teams
    (inside the re-attribution's transaction: sent when it commits)."""
    spend_changed(days=result.days, reason=reason, workload_ids=result.workloads, team_ids=result.teams)


def _progress_key(job_id: int) -> str:
    return f"finops:reattribution:{job_id}:progress"


def reattribution_progress(job: ReattributionJob) -> dict:
    """What the rules page shows while a job runs. Progress travels through the cache because the job's
    own writes stay invisible until its single transaction commits."""
    done, total = cache.get(_progress_key(job.id), (job.days_done, job.days_total))
    if job.status == ReattributionJob.Status.SUCCEEDED:
        done = total = max(total, 1)
    return {
        "id": job.id,
        "status": job.status,
        "done": done,
        "total": total,
        "percent": int(100 * done / total) if total else 0,
        "lines_changed": job.lines_changed,
        "error": job.error,
    }


def reattribution_run(*, job_id: int) -> ReattributionJob:
    """The job's work: re-attribute history, reporting progress as the rollup is rebuilt."""
    job = ReattributionJob.objects.get(id=job_id)
    if job.status == ReattributionJob.Status.SUCCEEDED:
        return job
    ReattributionJob.objects.filter(id=job.id).update(status=ReattributionJob.Status.RUNNING, started_at=timezone.now())
    try:
        with transaction.atomic():
            result = history_reattribute(
                progress=lambda done, total: cache.set(_progress_key(job.id), (done, total), 3600)
            )
            reattribution_signal(result, reason="reattribution")
    except Exception as exc:  # noqa: BLE001 - shown on the job; the re-attribution rolled back as a whole
        ReattributionJob.objects.filter(id=job.id).update(
            status=ReattributionJob.Status.FAILED, error=str(exc), finished_at=timezone.now()
        )
        raise
    ReattributionJob.objects.filter(id=job.id).update(
        status=ReattributionJob.Status.SUCCEEDED,
        finished_at=timezone.now(),
        lines_changed=result.lines,
        days_total=len(result.days),
        days_done=len(result.days),
    )
    cache.delete(_progress_key(job.id))
    rollups_vacuum()  # committed: the rewritten rollup rows' dead versions go now, not when autovacuum comes
    job.refresh_from_db()
    return job
