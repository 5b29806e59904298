"""The Alerts page: every event the user may see (finops.alerts.selectors.alerts decides which), newest first, filtered
by kind, team and state in the URL, each with its send attempts; the mute toggle for the user's emails, and the
subscription to kinds their role does not get (failing sources, for someone other than an admin)."""

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST, require_safe

from finops.alerts.selectors.alerts import AlertFilters, alert_events, muted_kinds
from finops.alerts.services.alerts import AlertMuteInvalid, alert_mute_set, alert_subscription_set
from finops.core import access
from finops.models import AlertEvent, AlertKind, AlertSubscription
from finops.notify.recipients import ALSO_TO_SUBSCRIBERS

PER_PAGE = 50
# The filter's short names (the model's labels explain more, shown as the badge's title).
STATE_FILTER_LABELS = {
    "pending": "Pending",
    "sending": "Sending",
    "sent": "Sent",
    "failed": "Failed (retrying)",
    "gave_up": "Gave up",
    "superseded": "Superseded",
}


@require_safe
def alert_list(request):
    teams = access.visible_teams(request.user)
    filters = AlertFilters.from_query(request.GET, teams)
    page = Paginator(alert_events(request.user, filters), PER_PAGE).get_page(request.GET.get("page"))
    # A webhook's scheme and host (and a delivery error naming it) are for those who may edit its cap only.
    editable = access.writable_cap_ids(request.user, [event.cap for event in page.object_list if event.cap_id])
    channels = set(access.writable_channels(request.user).values_list("id", flat=True))
    for event in page.object_list:
        event.shows_webhook = event.cap_id in editable
        for n in event.notifications.all():  # prefetched: the flag stays on the rows the template reads
            # An HTTP channel's scheme and host (webhook, Slack, Teams) only for who may edit that channel (or,
            # for a row from before channels, the cap); an email notification names the address as before.
            n.shows_receiver = n.channel == "email" or (n.via_id in channels if n.via_id else event.shows_webhook)
    query = filters.as_query()
    muted = muted_kinds(request.user)
    states = [(value, STATE_FILTER_LABELS.get(value, label)) for value, label in AlertEvent.State.choices]
    context = {
        "page": page,
        "filters": filters,
        "query": query,
        "filtered": bool(query),
        "kinds": AlertKind.choices,
        "states": states,
        "teams": teams,
        "muted": muted,
        "mute_rows": [{"kind": value, "label": label, "muted": value in muted} for value, label in AlertKind.choices],
        "sees_org_wide": access.sees_everything(request.user),
        "subscription_rows": _subscription_rows(request.user),
    }
    return render(request, "finops/alert_list.html", context)


def _subscription_rows(user) -> list[dict]:
    """The kinds this user may ask for: those of ALSO_TO_SUBSCRIBERS their role does not get (admins get them)."""
    if access.is_admin(user) or not access.sees_everything(user):
        return []
    mine = set(AlertSubscription.objects.filter(user=user).values_list("kind", flat=True))
    return [{"kind": kind, "label": AlertKind(kind).label, "subscribed": kind in mine} for kind in ALSO_TO_SUBSCRIBERS]


@require_POST
def alert_mute(request):
    """Mute or unmute a kind (`muted`), or, with `subscribed`, ask for or stop a kind one's role does not get."""
    kind = request.POST.get("kind", "")
    if "subscribed" in request.POST:
        return _subscription_set(request, kind, request.POST.get("subscribed") == "1")
    muted = request.POST.get("muted") == "1"
    try:
        alert_mute_set(user=request.user, kind=kind, muted=muted)
    except AlertMuteInvalid as exc:
        return HttpResponseBadRequest(str(exc))
    label = AlertKind(kind).label
    if muted:
        messages.success(
            request, f"Muted: {label}. You will get no emails of this kind; the alerts are still listed here."
        )
    else:
        messages.success(request, f"Unmuted: {label}. You will get these emails again.")
    target = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        target = reverse("alert-list")
    return redirect(target)


def _subscription_set(request, kind: str, subscribed: bool):
    try:
        alert_subscription_set(user=request.user, kind=kind, subscribed=subscribed)
    except AlertMuteInvalid as exc:
        return HttpResponseBadRequest(str(exc))
    label = AlertKind(kind).label
    messages.success(
        request,
        f"{label}: "
        + ("you will be emailed these alerts too." if subscribed else "you will not be emailed these alerts."),
    )
    target = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        target = reverse("alert-list")
    return redirect(target)
