"""Attribution rules pages: list (with what each claims), create, edit with preview, reorder, delete, audit trail.

Finance and admins read; admins change. Members answer 404: rules span teams.
"""

from django.contrib import messages
from django.http import Http404, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST, require_safe

from finops.core import access
from finops.models import AttributionRule, AuditEntry, ReattributionJob
from finops.org.selectors.audit import entity_history
from finops.spend.forms import RuleForm
from finops.spend.selectors.rules import PREVIEW_DAYS, rule_preview, rules_with_claims, unattributed_cost
from finops.spend.services import rules as rule_service
from finops.web.methods import require_form_methods


def _require_read(user):
    if not access.can_see_rules(user):
        raise Http404("No such page.")


def _require_admin(user):
    """Creating, changing, moving, deleting rules: admins; finance reads rules, so it is refused (403)."""
    access.require_change(user, sees=access.can_see_rules, changes=access.can_manage_configuration)


def _job_message(request, job):
    if job is not None:
        messages.info(request, f"Re-attributing history in the background (job {job.id}); progress is shown below.")


@require_safe
def rule_list(request):
    _require_read(request.user)
    job = ReattributionJob.objects.first()
    context = {
        "rows": rules_with_claims(),
        "unattributed": unattributed_cost(),
        "days": PREVIEW_DAYS,
        "job": rule_service.reattribution_progress(job) if job else None,
        "can_manage": access.can_manage_configuration(request.user),
    }
    return render(request, "finops/rule_list.html", context)


@require_form_methods
def rule_edit(request, pk=None):
    """Create (pk None) or edit. The Preview button shows what the rule would claim without saving it."""
    _require_read(request.user)
    if pk is None:
        _require_admin(request.user)  # an existing rule reads as a page; a new one is only a form
    rule = get_object_or_404(AttributionRule, pk=pk) if pk else AttributionRule()
    can_manage = access.can_manage_configuration(request.user)
    preview = None
    if request.method == "POST":
        _require_admin(request.user)
        form = RuleForm(request.POST, instance=rule)
        if form.is_valid():
            fields = form.rule_fields()
            if "preview" in request.POST:
                candidate = AttributionRule(id=rule.id, **fields)
                preview = rule_preview(candidate=candidate)
            elif rule.pk:
                rule.refresh_from_db()
                rule, job = rule_service.rule_update(rule=rule, by=request.user, **fields)
                _job_message(request, job)
                return redirect("rule-list")
            else:
                rule, job = rule_service.rule_create(by=request.user, **fields)
                _job_message(request, job)
                return redirect("rule-list")
    else:
        if not pk:
            last = AttributionRule.objects.order_by("-priority").values_list("priority", flat=True).first()
            rule.priority = (last or 0) + 10
        form = RuleForm(instance=rule, initial=None if pk else RuleForm.initial_from_query(request.GET))
    if not can_manage:
        for field in form.fields.values():
            field.disabled = True
    changes = entity_history(AuditEntry.Entity.RULE, rule.pk) if rule.pk else []
    return render(
        request,
        "finops/rule_form.html",
        {"form": form, "rule": rule, "preview": preview, "changes": changes, "can_manage": can_manage},
    )


@require_POST
def rule_delete(request, pk):
    _require_admin(request.user)
    rule = get_object_or_404(AttributionRule, pk=pk)
    job = rule_service.rule_delete(rule=rule, by=request.user)
    messages.success(request, f"Rule {rule} deleted; its lines are re-attributed.")
    _job_message(request, job)
    return redirect("rule-list")


@require_POST
def rule_move(request, pk, direction):
    _require_admin(request.user)
    rule = get_object_or_404(AttributionRule, pk=pk)
    job = rule_service.rule_move(rule=rule, direction=-1 if direction == "up" else 1, by=request.user)
    _job_message(request, job)
    return redirect("rule-list")


@require_safe
def job_status(request, pk):
    _require_read(request.user)
    return JsonResponse(rule_service.reattribution_progress(get_object_or_404(ReattributionJob, pk=pk)))
