"""Who is told about an event (issue 25): only channels say. The channels its cap, contract or workload chose, else
its team's default channels, else the organisation's default channels, each only for the alert kinds it takes
(`event_channels`). No recipient is written here: who hears what nobody chose is the default channels' rows
(finops/alerts/services/channels.py, ORGANISATION_DEFAULTS and TEAM_DEFAULT), which an admin edits like any channel.

An email channel names addresses and roles, expanded for the event: `role:team_leads` the leads of the event's
team (the cap's owning team; an event about no team: the admins), `role:finance`, `role:admins`,
`role:contract_owner` (the owner address of the contract the event is about). A webhook, Slack or Teams channel is
one target named by its scheme and host. Anyone who chose to hear of a kind (ALSO_TO_SUBSCRIBERS, AlertSubscription:
finance hearing of a failing source) is told whatever the channels. An event no channel reaches goes to the admins
(never to nobody). Users who muted the kind (AlertMute) are kept,
marked muted, so a `skipped` Notification says they were not told and why; an address that is a muted user's email
counts as them.
"""

from django.db.models import Q

from finops.models import AlertEvent, AlertKind, AlertMute, Channel, ChannelKind, Membership, User

from .base import Target

# Kinds that go to whoever the channels say and to anyone else who asks for them (finance hearing of a failing
# source).
ALSO_TO_SUBSCRIBERS = (AlertKind.SOURCE_FAILING,)


def _active(users):
    return users.filter(is_active=True).exclude(email="")


def _admins():
    return _active(User.objects.filter(Q(role=User.Role.ADMIN) | Q(is_superuser=True)))


def _finance():
    return _active(User.objects.filter(role=User.Role.FINANCE))


def _team_leads(team):
    return _active(User.objects.filter(memberships__team=team, memberships__role=Membership.Role.LEAD))


def _emails(users) -> list[str]:
    return list(users.order_by("username").values_list("email", flat=True))


def _role_addresses(role: str, event: AlertEvent | None, channel: Channel) -> list[str]:
    """A role's addresses for an event; without an event (a test message) for the channel's own team."""
    if role == "team_leads":
        if event is None:
            team = channel.team
        else:
            team = event.cap.owning_team if event.cap_id else event.team
        return _emails(_team_leads(team)) if team is not None else _emails(_admins())
    if role == "finance":
        return _emails(_finance())
    if role == "admins":
        return _emails(_admins())
    if role == "contract_owner":
        return [event.contract.owner] if event is not None and event.contract_id and event.contract.owner else []
    return []  # an unknown role names nobody (channel validation refuses them)


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
    """An email channel's addresses, in its order, roles expanded for the event, each once (case-insensitively)."""
    addresses: list[str] = []
    for entry in channel.addresses or []:
        entry = str(entry).strip()
        if entry.startswith("role:"):
            addresses += _role_addresses(entry[5:], event, channel)
        elif entry:
            addresses.append(entry)
    return _unique(addresses)


def event_channels(event: AlertEvent) -> list[Channel]:
    """The channels an event goes to: those its cap, contract or workload chose, else its team's defaults, else the
    organisation's defaults; each only if it takes the event's kind."""
    chooser = event.cap if event.cap_id else event.contract if event.contract_id else None
    if chooser is None and event.workload_id:
        chooser = event.workload
    chosen = [c for c in chooser.channels.order_by("id")] if chooser is not None else []
    chosen = [c for c in chosen if c.takes(event.kind)]
    if not chosen and event.team_id:
        defaults = Channel.objects.filter(team_id=event.team_id, is_default=True).select_related("team")
        chosen = [c for c in defaults.order_by("id") if c.takes(event.kind)]
    if not chosen:
        defaults = Channel.objects.filter(team=None, is_default=True).order_by("id")
        chosen = [c for c in defaults if c.takes(event.kind)]
    return chosen


def channel_targets(channel: Channel, event: AlertEvent | None, muted: set[str] = frozenset()) -> list[Target]:
    if channel.kind == ChannelKind.EMAIL:
        return [Target(channel.kind, a, a.lower() in muted, channel) for a in channel_addresses(channel, event)]
    return [Target(channel.kind, channel.url_label, False, channel)]


def event_targets(event: AlertEvent) -> list[Target]:
    muted = muted_addresses(event.kind)
    targets: list[Target] = []
    for channel in event_channels(event):
        targets += channel_targets(channel, event, muted)
    if event.kind in ALSO_TO_SUBSCRIBERS:  # who asked for this kind hears of it whatever the channels
        subscribers = _active(User.objects.filter(alert_subscriptions__kind=event.kind)).order_by("username")
        targets += [
            Target(ChannelKind.EMAIL, a, a.lower() in muted) for a in subscribers.values_list("email", flat=True)
        ]
    if not targets:
        # No channel reaches anyone (an owner-less contract in an organisation without finance users; default
        # channels an admin emptied): the admins are told rather than nobody, so no alert is lost unseen.
        targets = [Target(ChannelKind.EMAIL, a, a.lower() in muted) for a in _emails(_admins())]
    once, unique = set(), []
    for target in targets:  # an address named by two channels is told once
        if target.told_key not in once:
            once.add(target.told_key)
            unique.append(target)
    return unique


def event_addresses(event: AlertEvent) -> list[str]:
    """The email addresses an event reaches (muted ones included), in its channels' order: what pages and tests
    read of its routing."""
    return [t.recipient for t in event_targets(event) if t.channel == ChannelKind.EMAIL]
