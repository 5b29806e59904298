"""The Reports page (issue 14): the monthly TCO report of a month, live or as published, with its downloads.

- `/reports/` → the last full month's report.
- `/reports/<YYYY-MM>/` a closed month that was published: its latest published version, rendered from the snapshot
  (issue 23: what was published is what the month's page shows, read in milliseconds instead of recomputing the
  month's report, 1.2 s at 10M lines); `?live=1` the report as the data stands now, with the restatement diff
  against the latest version when the figures have changed since (the hourly job publishes a restatement of a
  month already emailed by itself: finops.notify.report_restated). The current month, and a month never
  published, are always live. `?version=N` the snapshot published as version N.
- `/reports/<YYYY-MM>/report.<pdf|csv|xlsx>` the same report (the same `?version=`) as a file.
- POST `/reports/<YYYY-MM>/publish` stores the live report as the month's next version.
Admins and finance only (finops.core.access.can_see_reports); anyone else gets 404, as for contracts.
"""

from django.contrib import messages
from django.http import Http404, HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST, require_safe

from finops.core import access
from finops.core.months import next_month
from finops.models import ReportSnapshot
from finops.reports import tco_formats
from finops.reports.restatement import RESTATEMENT, diff
from finops.reports.selectors.subscriptions import month_recipients
from finops.reports.selectors.tco_report import MonthError, TcoReport, report_month, restated_sources, tco_report
from finops.reports.services.reports import report_publish
from finops.reports.tco_pdf import report_headline, report_pdf, report_sections, snapshot_pdf
from finops.reports.tco_tables import SECTIONS, TITLES
from finops.web.period import today_utc
from finops.web.tables import XLSX_TYPE, csv_requested

FILE_TYPES = {"csv": "text/csv; charset=utf-8", "xlsx": XLSX_TYPE, "pdf": "application/pdf"}


def _require_visible(user) -> None:
    if not access.can_see_reports(user):
        raise Http404("No such page.")


def _month(text: str | None):
    return report_month(text, today=today_utc())


def _snapshot(request, month) -> ReportSnapshot | None:
    version = request.GET.get("version")
    if not version:
        return None
    if not version.isdigit():
        raise Http404("No such version.")
    return get_object_or_404(ReportSnapshot, month=month, version=int(version))


def _report(request, month, latest: ReportSnapshot | None = None) -> tuple[TcoReport, ReportSnapshot | None]:
    """The report a URL asks for: a version's snapshot; else, for a closed month with `latest` published and no
    `?live=1`, that latest snapshot; else the live report."""
    snapshot = _snapshot(request, month)
    if snapshot is None and latest is not None and not request.GET.get("live") and next_month(month) <= today_utc():
        snapshot = latest
    if snapshot is not None:
        return TcoReport.from_json(snapshot.figures), snapshot
    return tco_report(request.user, month, today=today_utc()), None


@require_safe
def report_index(request):
    _require_visible(request.user)
    return redirect("report-month", month=f"{_month(None):%Y-%m}")


@require_safe
def report_page(request, month: str):
    """A month that cannot be reported (not begun, malformed) sends the reader to the last full month, saying why."""
    _require_visible(request.user)
    try:
        if request.GET.get("month"):  # the picker's form: go to that month's URL
            return redirect("report-month", month=f"{_month(request.GET['month']):%Y-%m}")
        the_month = _month(month)
    except MonthError as error:
        messages.error(request, str(error))
        return redirect("report-index")
    versions = list(ReportSnapshot.objects.filter(month=the_month).select_related("published_by"))
    latest = versions[0] if versions else None
    report, snapshot = _report(request, the_month, latest)
    changes, sources = None, []
    if snapshot is None and latest is not None:
        changes = diff(TcoReport.from_json(latest.figures), report)
        sources = restated_sources(latest, report) if changes else []
    tables = {t.name: (t, report.rows(t.name)) for s in SECTIONS for t in s.tables}
    csv = csv_requested(request, "tco-report", tables, stem=report.key)
    if csv is not None:
        return csv
    query = f"?version={snapshot.version}" if snapshot else ""
    total_change = _total_change(changes)
    return render(
        request,
        "finops/report.html",
        {
            "recipients": month_recipients(the_month),
            "total_change": total_change,
            "report": report,
            "snapshot": snapshot,
            "versions": versions,
            "latest": latest,
            "changes": changes,
            "restated_sources": sources,
            "restatement_spec": RESTATEMENT,
            "sections": report_sections(report),
            "titles": TITLES,
            "headline": report_headline(report),
            "downloads": {kind: reverse("report-file", args=[report.key, kind]) + query for kind in FILE_TYPES},
            "can_publish": access.can_publish_reports(request.user) and snapshot is None,
            "month_value": report.key,
            "max_month": f"{today_utc():%Y-%m}",
        },
    )


def _total_change(changes) -> dict | None:
    """The restatement's change of the month's total (the summary's Spend), for the notice at the top."""
    return next((c for c in changes or [] if c["table"] == TITLES["summary"] and c["figure"] == "Spend"), None)


@require_safe
def report_file(request, month: str, kind: str):
    _require_visible(request.user)
    if kind not in FILE_TYPES:
        raise Http404("No such format.")
    try:
        the_month = _month(month)
    except MonthError as error:
        return HttpResponseBadRequest(str(error), content_type="text/plain; charset=utf-8")
    report, snapshot = _report(request, the_month)
    stem = f"tco-report-{report.key}" + (f"-v{snapshot.version}" if snapshot else "")
    response = HttpResponse(content_type=FILE_TYPES[kind])
    if kind == "csv":
        tco_formats.write_csv(report, response)
    elif kind == "xlsx":
        response.write(tco_formats.xlsx(report))
    else:
        response.write(snapshot_pdf(snapshot) if snapshot else report_pdf(report))
    response["Content-Disposition"] = f'attachment; filename="{stem}.{kind}"'
    return response


@require_POST
def report_publish_view(request, month: str):
    if not access.can_publish_reports(request.user):
        raise Http404("No such page.")
    try:
        the_month = _month(month)
    except MonthError as error:
        messages.error(request, str(error))
        return redirect("report-index")
    report = tco_report(request.user, the_month, today=today_utc())
    snapshot = report_publish(report=report, by=request.user)
    label = "provisional: some sources have not settled yet" if snapshot.provisional else "final"
    messages.success(request, f"Published {report.label} as version {snapshot.version} ({label}).")
    return redirect(reverse("report-month", args=[report.key]) + f"?version={snapshot.version}")
