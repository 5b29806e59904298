"""The FOCUS 1.2 usage export of a month, downloaded from the Reports page (issue 14, docs/focus-export.md).

Admins and finance only: a member gets 404 (finops.core.access.can_see_reports), as on every page that spans teams.
The file is streamed as it is read (finops.spend.selectors.usage_focus), so a month of millions of lines never sits in
memory; a month not yet begun, or not a month, answers 400 with the reason.
"""

from django.http import Http404, HttpResponseBadRequest, StreamingHttpResponse
from django.views.decorators.http import require_GET

from finops.core import access
from finops.core.months import MonthError
from finops.reports import usage_focus
from finops.spend.selectors.usage_focus import export_month, month_lines
from finops.web.period import today_utc


def focus_csv_response(month) -> StreamingHttpResponse:
    """The month's FOCUS CSV as a streamed download (the page and the API answer with this same response)."""
    response = StreamingHttpResponse(usage_focus.csv_chunks(month_lines(month)), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{usage_focus.file_name(month.strftime("%Y-%m"))}"'
    return response


@require_GET
def focus_export(request, month: str):
    if not access.can_see_reports(request.user):
        raise Http404("No such page.")
    try:
        first_day = export_month(month, today=today_utc())
    except MonthError as error:
        return HttpResponseBadRequest(str(error), content_type="text/plain; charset=utf-8")
    return focus_csv_response(first_day)
