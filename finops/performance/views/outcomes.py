"""Outcome counts uploaded as CSV on a workload page (issue 12), through the same service as the API and
`import_outcomes`."""

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from finops.core import access
from finops.performance.services.outcomes import OutcomesInvalid, outcomes_import_csv


@require_POST
def workload_outcomes_upload(request, slug):
    """Another team's workload answers 404; one the user sees but may not write (finance) 403."""
    workload = access.get_visible_workload_or_404(request.user, slug)
    if not access.can_write_outcomes(request.user, workload):
        raise PermissionDenied("You may not write this workload's outcome counts.")
    upload = request.FILES.get("file")
    if upload is None:
        messages.error(request, "Outcomes upload refused: choose a CSV file.")
        return redirect("workload-detail", slug=workload.slug)
    try:
        result = outcomes_import_csv(
            by=request.user, stream=upload, workload=workload.slug, source_default=request.POST.get("source", "")
        )
    except OutcomesInvalid as exc:
        messages.error(request, f"Outcomes upload refused, nothing applied: {'; '.join(exc.errors)}")
    else:
        messages.success(
            request,
            f"{upload.name}: {result.rows} outcome counts recorded ({result.created} new, "
            f"{result.replaced} replaced, {result.unchanged} unchanged).",
        )
    return redirect("workload-detail", slug=workload.slug)
