"""Reads for the Alerts page: which events a user may see, filtered, with their notifications.

Who sees what: admins and finance see every event; a member sees the events of their teams only
(`event.team` in their teams). Organisation-wide events (no team: an org, provider or account cap, a spike on an
account, unpriced usage, a failing source) span teams, so they are for finance and admins only, like the
unattributed spend and the sources pages.
"""

from dataclasses import dataclass

from django.db.models import Prefetch, QuerySet

from finops.core import access
from finops.models import AlertEvent, AlertKind, AlertMute, Notification, Team


@dataclass(frozen=True)
class AlertFilters:
    kind: str = ""
    team: str = ""  # a team slug
    state: str = ""

    @classmethod
    def from_query(cls, query, teams: QuerySet[Team]) -> "AlertFilters":
        """Only values that exist (and, for a team, that the user sees) are kept; anything else is no filter."""
        kind = query.get("kind", "")
        state = query.get("state", "")
        team = query.get("team", "")
        return cls(
            kind=kind if kind in AlertKind.values else "",
            state=state if state in AlertEvent.State.values else "",
            team=team if team and teams.filter(slug=team).exists() else "",
        )

    def as_query(self) -> dict:
        return {
            name: value for name, value in (("kind", self.kind), ("team", self.team), ("state", self.state)) if value
        }


def alert_events_visible(user) -> QuerySet[AlertEvent]:
    events = AlertEvent.objects.all()
    if access.sees_everything(user):
        return events
    return events.filter(team__in=access.visible_teams(user))


def alert_events(user, filters: AlertFilters) -> QuerySet[AlertEvent]:
    """Newest first, each with its notifications (oldest first: the attempts read in order)."""
    events = (
        alert_events_visible(user)
        .select_related("team", "cap__workload")
        .prefetch_related(Prefetch("notifications", queryset=Notification.objects.order_by("created_at", "id")))
    )
    if filters.kind:
        events = events.filter(kind=filters.kind)
    if filters.team:
        events = events.filter(team__slug=filters.team)
    if filters.state:
        events = events.filter(state=filters.state)
    return events.order_by("-created_at", "-id")


def muted_kinds(user) -> set[str]:
    return set(AlertMute.objects.filter(user=user).values_list("kind", flat=True))
