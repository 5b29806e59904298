"""The channels page (issue 25): the channels the reader may edit (admins: all; a team lead: their teams'), each
with its destination as scheme and host only, and a "send a test message" button. Finance and members have no
channel page: a channel's URL is a secret and its addresses are people's (404, as for what one may not see)."""

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST, require_safe

from finops.core import access
from finops.models import AlertKind
from finops.notify.base import NotifyError
from finops.services.channels import channel_shown, channel_test_send


def _writable_or_404(user):
    if not (access.is_admin(user) or access.lead_teams(user).exists()):
        raise Http404
    return access.writable_channels(user).select_related("team")


@require_safe
def channel_list(request):
    channels = _writable_or_404(request.user)
    labels = dict(AlertKind.choices)
    rows = [
        {
            "channel": c,
            "shown": channel_shown(request.user, c),
            "kinds": ", ".join(labels.get(k, k) for k in c.kinds) or "every kind",
        }
        for c in channels
    ]
    return render(request, "finops/channel_list.html", {"rows": rows})


@require_POST
def channel_test(request, pk: int):
    channel = get_object_or_404(_writable_or_404(request.user), pk=pk)
    try:
        told = channel_test_send(channel=channel, by=request.user)
    except PermissionDenied:
        raise Http404 from None
    except NotifyError as exc:
        messages.error(request, f"The test message to {channel.name} failed: {exc}")
    else:
        messages.success(request, f"Test message sent to {channel.name}: {', '.join(told)}.")
    return redirect("channel-list")
