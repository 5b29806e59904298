"""The channels page (issue 25): the channels the reader may edit (admins: all; a team lead: their teams'), each
with its destination as scheme and host only, a "send a test message" button, and the form that makes, changes and
deletes one (finops.alerts.services.channels, the one write path). Finance and members have no channel page: a channel's
URL is a secret and its addresses are people's (404, as for what one may not see)."""

from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST, require_safe

from finops.alerts.forms.channels import ChannelForm
from finops.alerts.services.channels import channel_delete, channel_save, channel_shown, channel_test_send
from finops.core import access
from finops.models import AlertKind
from finops.notify.base import NotifyError
from finops.web.methods import require_form_methods


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


@require_form_methods
def channel_create(request):
    _writable_or_404(request.user)
    return _form(request, None)


@require_form_methods
def channel_edit(request, pk: int):
    channel = get_object_or_404(_writable_or_404(request.user), pk=pk)
    if channel.for_cap_id is not None:  # a cap's recipients or webhook: changed on the cap
        return redirect("cap-edit", channel.for_cap_id)
    return _form(request, channel)


@require_POST
def channel_remove(request, pk: int):
    channel = get_object_or_404(_writable_or_404(request.user), pk=pk)
    try:
        channel_delete(channel=channel, by=request.user)
    except PermissionDenied:
        raise Http404 from None
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    else:
        messages.success(request, f"Deleted the channel {channel.name}.")
    return redirect("channel-list")


def _form(request, channel):
    if request.method == "POST":
        form = ChannelForm(request.POST, user=request.user, channel=channel)
        if form.is_valid():
            try:
                saved = channel_save(by=request.user, channel=channel, **form.channel_fields())
            except PermissionDenied:
                form.add_error("team", "You may not write a channel for that owner.")
            except ValidationError as exc:
                for field, errors in exc.message_dict.items():
                    form.add_error(field if field in form.fields else None, errors)
            else:
                messages.success(request, f"Saved the channel {saved.name}.")
                return redirect("channel-list")
    else:
        form = ChannelForm(user=request.user, channel=channel)
    return render(request, "finops/channel_form.html", {"form": form, "channel": channel})
