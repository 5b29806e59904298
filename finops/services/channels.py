"""Channels (issue 25): the one write path for a Channel row (pages, the Django admin and the cap services call it),
a cap's own channels kept in step with its recipients and webhook fields, and "send a test message".

Saving checks what a send checks again: the URL's host against the egress policy (finops/core/egress.py; DNS may change
between save and send, so the transport checks at every send too), names without control characters (they reach
emails, Slack and Teams messages). The URL and the webhook secret are stored encrypted and never read back here.
"""

from django.core.exceptions import PermissionDenied, ValidationError
from django.core.validators import URLValidator
from django.db import transaction

from finops.core import access, crypto, egress
from finops.core.text import name_check
from finops.models import AlertKind, Cap, Channel, ChannelKind, Team

URL_KINDS = (ChannelKind.WEBHOOK, ChannelKind.SLACK, ChannelKind.TEAMS)


def channel_url_check(url) -> str:
    url = (url or "").strip() if isinstance(url, str) or url is None else None
    if not url:
        raise ValidationError({"url": "Give the channel's URL."})
    try:
        URLValidator(schemes=["http", "https"], message="Must be an http(s) URL.")(url)
        egress.url_check(url)
    except ValidationError as exc:
        raise ValidationError({"url": exc.messages}) from None
    except egress.EgressRefused as exc:
        raise ValidationError({"url": f"Refused: {exc}."}) from None
    return url


def _addresses(value) -> list[str]:
    from .caps import _recipients  # one rule for addresses and roles, a cap's and a channel's

    try:
        return _recipients(value)
    except ValidationError as exc:
        raise ValidationError({"addresses": exc.messages}) from None


def _kinds(value) -> list[str]:
    kinds = list(value or [])
    unknown = [k for k in kinds if k not in AlertKind.values]
    if unknown:
        raise ValidationError({"kinds": f"Unknown alert kinds: {', '.join(map(str, unknown))}."})
    return kinds


@transaction.atomic
def channel_save(
    *,
    by,
    channel: Channel | None = None,
    name: str,
    kind: str,
    team: Team | None = None,
    addresses=None,
    url: str | None = None,
    secret: str | None = None,
    kinds=None,
    is_default: bool = False,
) -> Channel:
    """Create (channel None) or change a channel. `url`/`secret` None keep the stored ones (write-only fields)."""
    channel = channel or Channel()
    if by is not None and not (
        access.is_admin(by) or (team is not None and access.lead_teams(by).filter(id=team.id).exists())
    ):
        raise PermissionDenied("You may not change this channel.")
    if channel.pk and by is not None and not access.can_write_channel(by, channel):
        raise PermissionDenied("You may not change this channel.")
    if kind not in ChannelKind.values:
        raise ValidationError(
            {"kind": f"Unknown channel kind {kind!r}; the kinds are {', '.join(ChannelKind.values)}."}
        )
    name = (name or "").strip()
    if not name:
        raise ValidationError({"name": "Give the channel a name."})
    try:
        name_check(name)
    except ValidationError as exc:
        raise ValidationError({"name": exc.messages}) from None
    channel.name, channel.kind, channel.team = name[:120], kind, team
    channel.kinds, channel.is_default = _kinds(kinds), bool(is_default)
    if kind == ChannelKind.EMAIL:
        channel.addresses = _addresses(addresses)
        channel.url_ciphertext = channel.url_label = channel.secret_ciphertext = ""
    else:
        channel.addresses = []
        if url is not None or not channel.url_ciphertext:
            url = channel_url_check(url)
            channel.url_ciphertext, channel.url_label = crypto.encrypt(url), egress.url_label(url)
        if kind == ChannelKind.WEBHOOK:
            if secret:
                channel.secret_ciphertext = crypto.encrypt(secret)
            if not channel.secret_ciphertext:
                raise ValidationError({"secret": "A webhook needs a signing secret (receivers verify the signature)."})
        else:
            channel.secret_ciphertext = ""
    channel.save()
    return channel


def channel_shown(user, channel: Channel) -> str:
    """What `user` may see of a channel's destination: scheme and host to those who may edit it, else nothing."""
    if not access.can_write_channel(user, channel):
        return ""
    return channel.url_label if channel.is_http else ", ".join(channel.addresses)


def channel_test_send(*, channel: Channel, by) -> list[str]:
    """Send a test message through the channel now; the recipients told. Raises NotifyError when it fails."""
    if by is not None and not access.can_write_channel(by, channel):
        raise PermissionDenied("You may not test this channel.")
    from finops.notify.deliver import channel_test

    return channel_test(channel)


def cap_channels_sync(cap: Cap) -> None:
    """Keep a cap's own channels (the cap form's recipients and webhook) in step with its fields: an email channel
    for its recipients, a webhook channel for its webhook, each chosen by the cap. The migration that moved caps to
    channels (0034) made the same rows."""
    team = cap.owning_team
    own = {c.kind: c for c in Channel.objects.filter(for_cap=cap)}
    wanted = {
        ChannelKind.EMAIL: bool(cap.recipients),
        ChannelKind.WEBHOOK: bool(cap.webhook_url),
    }
    for kind, needed in wanted.items():
        channel = own.get(kind)
        if not needed:
            if channel is not None:
                channel.delete()
            continue
        channel = channel or Channel(for_cap=cap, kind=kind)
        channel.name, channel.team = f"{cap.name}: {ChannelKind(kind).label.split(' ')[0].lower()}"[:120], team
        if kind == ChannelKind.EMAIL:
            channel.addresses = list(cap.recipients)
        else:
            if not channel.url_ciphertext or crypto.decrypt(channel.url_ciphertext) != cap.webhook_url:
                channel.url_ciphertext = crypto.encrypt(cap.webhook_url)
            channel.url_label = egress.url_label(cap.webhook_url)
            channel.secret_ciphertext = cap.webhook_secret_ciphertext
        channel.save()
        channel.caps.add(cap)
