"""The Alerts page: every event the user may see (finops.selectors.alerts decides which), newest first, filtered
by kind, team and state in the URL, each with its send attempts; and the mute toggle for the user's emails."""

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST, require_safe

from finops import access
from finops.models import AlertEvent, AlertKind
from finops.selectors.alerts import AlertFilters, alert_events, muted_kinds
from finops.services.alerts import AlertMuteInvalid, alert_mute_set

PER_PAGE = 50
# The filter's short names (the model's labels explain more, shown as the badge's title).
STATE_FILTER_LABELS = {"pending": "Pending", "sending": "Sending", "sent": "Sent", "failed": "Failed (retrying)",
                       "gave_up": "Gave up", "superseded": "Superseded"}


@require_safe
def alert_list(request):
    teams = access.visible_teams(request.user)
    filters = AlertFilters.from_query(request.GET, teams)
    page = Paginator(alert_events(request.user, filters), PER_PAGE).get_page(request.GET.get("page"))
    # A webhook's scheme and host (and a delivery error naming it) are for those who may edit its cap only.
    editable = access.writable_cap_ids(request.user, [event.cap for event in page.object_list if event.cap_id])
    for event in page.object_list:
        event.shows_webhook = event.cap_id in editable
    query = filters.as_query()
    muted = muted_kinds(request.user)
    states = [(value, STATE_FILTER_LABELS.get(value, label)) for value, label in AlertEvent.State.choices]
    context = {
        "page": page, "filters": filters, "query": query, "filtered": bool(query),
        "kinds": AlertKind.choices, "states": states, "teams": teams, "muted": muted,
        "mute_rows": [{"kind": value, "label": label, "muted": value in muted} for value, label in AlertKind.choices],
        "sees_org_wide": access.sees_everything(request.user),
    }
    return render(request, "finops/alert_list.html", context)


@require_POST
def alert_mute(request):
    kind = request.POST.get("kind", "")
    muted = request.POST.get("muted") == "1"
    try:
        alert_mute_set(user=request.user, kind=kind, muted=muted)
    except AlertMuteInvalid as exc:
        return HttpResponseBadRequest(str(exc))
    label = AlertKind(kind).label
    if muted:
        messages.success(request, f"Muted: {label}. You will get no emails of this kind; the alerts are still listed here.")
    else:
        messages.success(request, f"Unmuted: {label}. You will get these emails again.")
    target = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
        target = reverse("alert-list")
    return redirect(target)
