"""Channels (issue 25): the one write path for a Channel row (pages, the API, the Django admin and the cap services
call it), a cap's own channels kept in step with its recipients and webhook fields, what a cap, a contract or a
workload chose (`channels_chosen`), the default channels every organisation and team has, and "send a test message".

Who hears what nobody chose is rows, not code (finops/notify/recipients.py routes only through channels): the
organisation's default channels (ORGANISATION_DEFAULTS, made by migration 0037 and, for a new installation, by the
same migration on its empty database) and each team's default email channel to its leads (made when the team is;
TEAM_DEFAULT). An admin edits them on /alerts/channels/ like any channel.

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
# A role only a channel names: the owner address of the contract an event is about.
CHANNEL_ROLES = {"role:contract_owner": "the owner of the contract the alert is about (contract alerts)"}
CONTRACT_KINDS = (AlertKind.CONTRACT_NOTICE, AlertKind.CONTRACT_SHORTFALL, AlertKind.CONTRACT_OVERAGE)
# The organisation's default channels: name, addresses and roles, the alert kinds each takes. Together they tell the
# people the built-in rules told before channels: a source failing the admins (the platform team fixes it), a
# contract its owner and finance, anything else organisation-wide the admins and finance. A team's own events
# go to its leads first (TEAM_DEFAULT), as before.
ORGANISATION_DEFAULTS = (
    ("Admins: failing sources", ["role:admins"], [AlertKind.SOURCE_FAILING]),
    ("Contracts: owner and finance", ["role:contract_owner", "role:finance"], list(CONTRACT_KINDS)),
    (
        "Admins and finance",
        ["role:admins", "role:finance"],
        [k for k in AlertKind.values if k != AlertKind.SOURCE_FAILING and k not in CONTRACT_KINDS],
    ),
)
TEAM_DEFAULT = ("{team}: team leads", ["role:team_leads"])


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
    from finops.alerts.services.caps import _recipients  # one rule for addresses and roles, a cap's and a channel's

    try:
        return _recipients(value, extra_roles=CHANNEL_ROLES)
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


def channel_delete(*, channel: Channel, by) -> None:
    """A channel goes; what chose it chooses it no longer (their alerts fall to the defaults). A cap's own channels
    (its recipients and webhook) are the cap's fields: changed on the cap, not here."""
    if by is not None and not access.can_write_channel(by, channel):
        raise PermissionDenied("You may not delete this channel.")
    if channel.for_cap_id is not None:
        raise ValidationError({"channel": "It is a cap's recipients or webhook: change them on the cap."})
    channel.delete()


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


def organisation_default_channels_create() -> list[Channel]:
    """The organisation's default channels (ORGANISATION_DEFAULTS), unless it has default channels already; the
    ones made. A new installation's migration (0037) makes them; tests whose flush emptied the tables call it."""
    if Channel.objects.filter(team=None, is_default=True).exists():
        return []
    return [
        Channel.objects.create(
            name=name, kind=ChannelKind.EMAIL, addresses=list(addresses), kinds=kinds, is_default=True
        )
        for name, addresses, kinds in ORGANISATION_DEFAULTS
    ]


def team_default_channel_create(team: Team) -> Channel | None:
    """A new team's default channel: an email to its leads, for every kind of alert about the team that nobody
    chose a channel for (what the built-in rules did before channels). None when the team has a default already."""
    if Channel.objects.filter(team=team, is_default=True).exists():
        return None
    name, addresses = TEAM_DEFAULT
    return Channel.objects.create(
        name=name.format(team=team.name)[:120], kind=ChannelKind.EMAIL, team=team, addresses=addresses, is_default=True
    )


def team_created(sender, instance: Team, created: bool, raw: bool = False, **kwargs) -> None:
    """post_save of Team (connected in FinopsConfig.ready): every way a team is made (config, the Django admin, the
    demo) gives it its default channel."""
    if created and not raw:
        team_default_channel_create(instance)


def choosable_channels(user):
    """The channels `user` may choose for a cap, contract or workload: those they may edit (admins: all; a team
    lead: their teams'). `by=None` (config as code) may choose any."""
    if user is None:
        return Channel.objects.all()
    return access.writable_channels(user)


def channels_resolve(value, *, by, field: str = "channels") -> list[Channel]:
    """Channels named by id (the API, the forms) or by name (config files), each once; a located error naming
    what is unknown, ambiguous or not the writer's to choose (one they may not see reads as unknown)."""
    if value is None:
        return []
    if isinstance(value, (str, int)) or not hasattr(value, "__iter__"):
        raise ValidationError({field: "Give a list of channels (their ids or names)."})
    allowed = choosable_channels(by)
    found: list[Channel] = []
    for item in value:
        if isinstance(item, Channel):
            matches = [item] if allowed.filter(id=item.id).exists() else []
        elif isinstance(item, int) and not isinstance(item, bool):
            matches = list(allowed.filter(id=item))
        elif isinstance(item, str) and item.strip():
            matches = list(allowed.filter(name=item.strip()))
        else:
            raise ValidationError({field: f"{item!r} is not a channel id or name."})
        if not matches:
            raise ValidationError({field: f"No channel {item!r} you may choose (see /alerts/channels/)."})
        if len(matches) > 1:
            raise ValidationError({field: f"Several channels are named {item!r}; rename one, or name them by id."})
        if matches[0] not in found:
            found.append(matches[0])
    return found


def channels_choose(owner, channels: list[Channel]) -> None:
    """Set what a cap, contract or workload chose. A cap's own channels (its recipients and webhook fields) stay
    chosen: cap_channels_sync keeps those."""
    own = list(owner.own_channels.all()) if hasattr(owner, "own_channels") else []
    owner.channels.set([*own, *[c for c in channels if c not in own]])


def channels_chosen(owner) -> list[Channel]:
    """What a cap, contract or workload chose, without a cap's own channels (shown as its recipients and webhook)."""
    return [c for c in owner.channels.order_by("name", "id") if c.for_cap_id is None]
