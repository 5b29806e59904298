"""Who is told about an event, per channel.

A cap's `recipients` are addresses and roles: `role:team_leads` (the leads of the cap's owning team; an
organisation, provider or account cap has none, so its admins), `role:finance`, `role:admins`. Events without a
cap (spikes, unpriced usage) go to the team's leads when they concern a team, else to admins and finance. A source
failing or silent is the platform team's to fix: it goes to the admins only (issue 24: finance was emailed about a
refused upload), plus anyone who chose to get that kind (ALSO_TO_SUBSCRIBERS, AlertSubscription). A contract's events
go to its owner (an address, if set) and finance; to admins when that is nobody. A cap's webhook is one more
recipient. Users who muted the kind (AlertMute) are kept, marked muted, so a
`skipped` Notification says they were not told and why; an address that is a muted user's email counts as them.
"""

from dataclasses import dataclass

from django.db.models import Q

from finops.models import AlertEvent, AlertKind, AlertMute, Membership, Notification, User

from .webhook import webhook_label

# Kinds that go to a role by default and to anyone else who asks for them (finance hearing of a failing source).
ALSO_TO_SUBSCRIBERS = (AlertKind.SOURCE_FAILING,)


@dataclass(frozen=True)
class Target:
    channel: str
    recipient: str
    muted: bool = False


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
    seen, unique = set(), []
    for address in addresses:
        if address.lower() not in seen:
            seen.add(address.lower())
            unique.append(address)
    return unique


def muted_addresses(kind: str) -> set[str]:
    return {
        email.lower()
        for email in AlertMute.objects.filter(kind=kind, user__is_active=True)
        .exclude(user__email="")
        .values_list("user__email", flat=True)
    }


def event_targets(event: AlertEvent) -> list[Target]:
    muted = muted_addresses(event.kind)
    targets = [
        Target(Notification.Channel.EMAIL, address, address.lower() in muted) for address in event_addresses(event)
    ]
    if event.cap_id and event.cap.webhook_url:
        targets.append(Target(Notification.Channel.WEBHOOK, webhook_label(event.cap.webhook_url)))
    return targets
