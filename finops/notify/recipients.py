"""Who is told about an event (issue 25): the channels its cap or contract chose, else its team's default channels,
else the organisation's default channels, each only for the alert kinds it takes (`event_channels`). An email
channel names addresses and roles; a webhook, Slack or Teams channel is one target named by its scheme and host.

When no channel at all applies (an organisation that set none up), the built-in default recipients below answer:

A cap's `recipients` are addresses and roles: `role:team_leads` (the leads of the cap's owning team; an
organisation, provider or account cap has none, so its admins), `role:finance`, `role:admins`. Events without a
cap (spikes, unpriced usage) go to the team's leads when they concern a team, else to admins and finance. A source
failing or silent is the platform team's to fix: it goes to the admins only (issue 24: finance was emailed about a
refused upload), plus anyone who chose to get that kind (ALSO_TO_SUBSCRIBERS, AlertSubscription). A contract's events
go to its owner (an address, if set) and finance; to admins when that is nobody. A cap's webhook is one more
recipient. Users who muted the kind (AlertMute) are kept, marked muted, so a
`skipped` Notification says they were not told and why; an address that is a muted user's email counts as them.
"""

from django.db.models import Q

from finops.models import AlertEvent, AlertKind, AlertMute, Channel, ChannelKind, Membership, User

from .base import Target

# Kinds that go to a role by default and to anyone else who asks for them (finance hearing of a failing source).
ALSO_TO_SUBSCRIBERS = (AlertKind.SOURCE_FAILING,)


def _active(users):
    return users.filter(is_active=True).exclude(email="")


def _admins():
    return _active(User.objects.filter(Q(role=User.Role.ADMIN) | Q(is_superuser=True)))


def _finance():
    return _active(User.objects.filter(role=User.Role.FINANCE))


def _team_leads(team):
    return _active(User.objects.filter(memberships__team=team, memberships__role=Membership.Role.LEAD))


def _role_users(role: str, event: AlertEvent):
    if role == "team_leads":
        team = event.cap.owning_team if event.cap_id else event.team
        return _team_leads(team) if team is not None else _admins()
    if role == "finance":
        return _finance()
    if role == "admins":
        return _admins()
    return User.objects.none()  # an unknown role names nobody (cap validation refuses them)


def event_addresses(event: AlertEvent) -> list[str]:
    """Email addresses, in the cap's order, each once (case-insensitively)."""
    addresses: list[str] = []
    if event.cap_id:
        for entry in event.cap.recipients or []:
            entry = str(entry).strip()
            if entry.startswith("role:"):
                addresses += list(_role_users(entry[5:], event).order_by("username").values_list("email", flat=True))
            elif entry:
                addresses.append(entry)
    elif event.contract_id:
        addresses += [event.contract.owner] if event.contract.owner else []
        addresses += list(_finance().order_by("username").values_list("email", flat=True))
        addresses = addresses or list(_admins().order_by("username").values_list("email", flat=True))
    elif event.team_id:
        addresses += list(_team_leads(event.team).order_by("username").values_list("email", flat=True))
    elif event.kind == AlertKind.SOURCE_FAILING:
        addresses += list(_admins().order_by("username").values_list("email", flat=True))
    else:
        addresses += list(_admins().order_by("username").values_list("email", flat=True))
        addresses += list(_finance().order_by("username").values_list("email", flat=True))
    if event.kind in ALSO_TO_SUBSCRIBERS:
        addresses += list(
            _active(User.objects.filter(alert_subscriptions__kind=event.kind))
            .order_by("username")
            .values_list("email", flat=True)
        )
    return _unique(addresses)


def muted_addresses(kind: str) -> set[str]:
    return {
        email.lower()
        for email in AlertMute.objects.filter(kind=kind, user__is_active=True)
        .exclude(user__email="")
        .values_list("user__email", flat=True)
    }


def _unique(addresses: list[str]) -> list[str]:
    seen, unique = set(), []
    for address in addresses:
        if address.lower() not in seen:
            seen.add(address.lower())
            unique.append(address)
    return unique


def channel_addresses(channel: Channel, event: AlertEvent | None) -> list[str]:
    """An email channel's addresses, roles expanded for the event (`role:team_leads`: the event's team, else the
    channel's team, else the admins); without an event (a test message) for the channel's own team."""
    addresses: list[str] = []
    for entry in channel.addresses or []:
        entry = str(entry).strip()
        if entry.startswith("role:"):
            role = entry[5:]
            if event is not None:
                users = _role_users(role, event)
            elif role == "team_leads":
                users = _team_leads(channel.team) if channel.team_id else _admins()
            else:
                users = {"finance": _finance, "admins": _admins}.get(role, User.objects.none)()
            addresses += list(users.order_by("username").values_list("email", flat=True))
        elif entry:
            addresses.append(entry)
    return _unique(addresses)


def event_channels(event: AlertEvent) -> list[Channel]:
    """The channels an event goes to: those its cap or contract chose, else its team's defaults, else the
    organisation's defaults; each only if it takes the event's kind."""
    chosen: list[Channel] = []
    if event.cap_id:
        chosen = list(event.cap.channels.order_by("id"))
    elif event.contract_id:
        chosen = list(event.contract.channels.order_by("id"))
    chosen = [c for c in chosen if c.takes(event.kind)]
    if not chosen and event.team_id:
        chosen = [c for c in Channel.objects.filter(team_id=event.team_id, is_default=True) if c.takes(event.kind)]
    if not chosen:
        chosen = [c for c in Channel.objects.filter(team=None, is_default=True) if c.takes(event.kind)]
    return chosen


def channel_targets(channel: Channel, event: AlertEvent | None, muted: set[str] = frozenset()) -> list[Target]:
    if channel.kind == ChannelKind.EMAIL:
        return [Target(channel.kind, a, a.lower() in muted, channel) for a in channel_addresses(channel, event)]
    return [Target(channel.kind, channel.url_label, False, channel)]


def event_targets(event: AlertEvent) -> list[Target]:
    muted = muted_addresses(event.kind)
    channels = event_channels(event)
    targets: list[Target] = []
    for channel in channels:
        targets += channel_targets(channel, event, muted)
    if not channels:  # nobody set up a channel for it: the built-in default recipients
        targets = [Target(ChannelKind.EMAIL, a, a.lower() in muted) for a in event_addresses(event)]
    elif event.kind in ALSO_TO_SUBSCRIBERS:  # who asked for this kind hears of it whatever the channels
        subscribers = _active(User.objects.filter(alert_subscriptions__kind=event.kind)).order_by("username")
        targets += [
            Target(ChannelKind.EMAIL, a, a.lower() in muted) for a in subscribers.values_list("email", flat=True)
        ]
    once, unique = set(), []
    for target in targets:  # an address named by two channels is told once
        if target.told_key not in once:
            once.add(target.told_key)
            unique.append(target)
    return unique
