"""The one place that decides who may see or change what (docs/architecture.md invariant 9).

admin: everything. finance: reads everything, changes nothing but its own reports.
member: reads only the teams it belongs to; anything else answers 404, so another team's
objects are not even confirmed to exist.
"""

from collections.abc import Callable

from django.core.exceptions import PermissionDenied
from django.db.models import Q, QuerySet
from django.http import Http404
from rest_framework.permissions import SAFE_METHODS, BasePermission

from finops.models import ApiToken, Cap, CapScope, Membership, Team, User, Workload


def is_admin(user) -> bool:
    return bool(user.is_authenticated and (user.is_superuser or user.role == User.Role.ADMIN))


def is_finance(user) -> bool:
    return bool(user.is_authenticated and user.role == User.Role.FINANCE)


def sees_everything(user) -> bool:
    return is_admin(user) or is_finance(user)


def can_manage_configuration(user) -> bool:
    """Accounts, credentials, teams, workloads, prices: the platform team's admins only."""
    return is_admin(user)


def visible_teams(user) -> QuerySet[Team]:
    if not user.is_authenticated:
        return Team.objects.none()
    if sees_everything(user):
        return Team.objects.all()
    return Team.objects.filter(memberships__user=user).distinct()


def visible_workloads(user) -> QuerySet[Workload]:
    if sees_everything(user):
        return Workload.objects.select_related("team")
    return Workload.objects.select_related("team").filter(team__in=visible_teams(user))


def can_see_unattributed(user) -> bool:
    """Spend no rule claims belongs to no team, so only those who see every team see it."""
    return sees_everything(user)


def can_see_sources(user) -> bool:
    """Accounts and ingest runs span teams; members see their teams' spend, not the billing plumbing."""
    return sees_everything(user)


def can_see_contracts(user) -> bool:
    """Contracts commit the whole organisation's money: admins and finance read them; members get 404."""
    return sees_everything(user)


def can_see_reports(user) -> bool:
    """The monthly TCO report covers every team, unattributed spend and contracts: admins and finance; members 404."""
    return sees_everything(user)


def can_publish_reports(user) -> bool:
    """Publishing a month's report (a snapshot finance forwards) is finance's act, and admins'."""
    return sees_everything(user)


def can_manage_report_subscriptions(user) -> bool:
    """Adding any address to the report's mailing list: admins only (each recipient may unsubscribe themselves)."""
    return is_admin(user)


def can_change_report_subscription(user, subscription) -> bool:
    """Admins change any subscription; a finance user only their own (its day, unsubscribing, subscribing again)."""
    if is_admin(user):
        return True
    return is_finance(user) and subscription.user_id == user.id


def can_manage_contracts(user) -> bool:
    """Creating, changing, renewing and deleting contracts: admins only (finance reads)."""
    return is_admin(user)


def can_see_rules(user) -> bool:
    """Attribution rules decide which team pays for what across every team: admins and finance read them."""
    return sees_everything(user)


def can_see_offerings(user) -> bool:
    """Offerings (what each provider sells, at what price) are the organisation's: everyone signed in reads them."""
    return bool(user.is_authenticated)


def can_manage_offerings(user) -> bool:
    return is_admin(user)


def require_change(user, *, sees: Callable[[object], bool], changes: Callable[[object], bool]) -> None:
    """Pages that change something: who may not even see that kind of thing is told it does not exist (404); who
    sees it but may not change it is refused (403), as the API refuses it. One rule for every page (docs/access.md)."""
    if not sees(user):
        raise Http404("No such page.")
    if not changes(user):
        raise PermissionDenied("You may see this, not change it.")


def get_visible_team_or_404(user, slug: str) -> Team:
    team = visible_teams(user).filter(slug=slug).first()
    if team is None:
        raise Http404("No such team.")
    return team


def get_visible_workload_or_404(user, slug: str) -> Workload:
    workload = visible_workloads(user).filter(slug=slug).first()
    if workload is None:
        raise Http404("No such workload.")
    return workload


def can_see_audit_log(user) -> bool:
    """The audit log names every person and change in the product: admins only (others get 404)."""
    return is_admin(user)


def can_manage_api_token_of(user, owner) -> bool:
    """People create, list and revoke their own API tokens; admins anyone's."""
    return bool(user.is_authenticated and (user.pk == owner.pk or is_admin(user)))


def visible_api_tokens(user) -> QuerySet[ApiToken]:
    tokens = ApiToken.objects.select_related("user", "revoked_by")
    if is_admin(user):
        return tokens
    return tokens.filter(user=user) if user.is_authenticated else tokens.none()


def token_allows(token: ApiToken, method: str) -> bool:
    """A read-only token reads (GET, HEAD, OPTIONS) and nothing else; a read-write token adds nothing to its user's
    rights: what the user may change is decided by the view's permissions, as for a signed-in session."""
    return method in SAFE_METHODS or token.scope == ApiToken.Scope.WRITE


def lead_teams(user) -> QuerySet[Team]:
    """The teams a user leads (a membership with the lead role)."""
    if not user.is_authenticated:
        return Team.objects.none()
    return Team.objects.filter(memberships__user=user, memberships__role=Membership.Role.LEAD).distinct()


def visible_caps(user) -> QuerySet[Cap]:
    """Admins and finance see every cap; a member sees the caps of their teams (a team cap, or a cap on one of
    its workloads) and nothing organisation-, provider- or account-wide: those span teams."""
    caps = Cap.objects.select_related("team", "workload__team", "provider", "account")
    if sees_everything(user):
        return caps
    teams = visible_teams(user)
    return caps.filter(Q(scope=CapScope.TEAM, team__in=teams) | Q(scope=CapScope.WORKLOAD, workload__team__in=teams))


def can_create_caps(user) -> bool:
    """Admins, and the lead of at least one team (for their team's caps)."""
    return is_admin(user) or lead_teams(user).exists()


def can_write_cap_scope(user, scope: str, target) -> bool:
    """Admins write any cap; a team lead only caps on a team they lead or one of its workloads (never the
    organisation, a provider or an account: those budgets span teams). Finance and members write none."""
    if is_admin(user):
        return True
    if scope == CapScope.TEAM and target is not None:
        return lead_teams(user).filter(id=target.id).exists()
    if scope == CapScope.WORKLOAD and target is not None:
        return lead_teams(user).filter(id=target.team_id).exists()
    return False


def can_write_cap(user, cap: Cap) -> bool:
    return can_write_cap_scope(user, cap.scope, cap.scope_object)


def writable_cap_ids(user, caps) -> set[int]:
    """The ids among `caps` that `user` may edit: can_write_cap's rule for a page of caps in one query. Who may
    edit a cap is also who may see its webhook's scheme and host (the Alerts page's webhook notifications)."""
    if is_admin(user):
        return {cap.id for cap in caps}
    led = set(lead_teams(user).values_list("id", flat=True))
    return {
        cap.id
        for cap in caps
        if (cap.scope == CapScope.TEAM and cap.team_id in led)
        or (cap.scope == CapScope.WORKLOAD and cap.workload.team_id in led)
    }


class ReadsForAllWritesForAdmins(BasePermission):
    """API: every signed-in role reads (scoped by the views' querysets); only admins write."""

    def has_permission(self, request, view):
        if not request.user.is_authenticated:
            return False
        return request.method in SAFE_METHODS or can_manage_configuration(request.user)


class HiddenFromOthers(BasePermission):
    """API objects that span teams: anonymous callers get 401 (sign in first); a signed-in user who may not see
    them gets 404, so they are not even confirmed to exist; readers use safe methods; writers change them."""

    sees: Callable[[object], bool]  # who may see them: each subclass names its rule from this module
    writes = staticmethod(can_manage_configuration)

    def has_permission(self, request, view):
        if not request.user.is_authenticated:
            return False  # DRF answers 401 with the token scheme to use
        if not self.sees(request.user):
            raise Http404("No such page.")
        return request.method in SAFE_METHODS or self.writes(request.user)


def edits_some_channel(user) -> bool:
    """Admins and team leads have channels they edit (their teams'); finance and members have none to see."""
    return is_admin(user) or lead_teams(user).exists()


class EditsChannels(HiddenFromOthers):
    """Alert channels (issue 25): admins and team leads see and write the channels they may edit (the view scopes
    which); anyone else gets 404."""

    sees = staticmethod(edits_some_channel)
    writes = staticmethod(edits_some_channel)


class SeesContracts(HiddenFromOthers):
    """Admins and finance read contracts, admins change them."""

    sees = staticmethod(can_see_contracts)
    writes = staticmethod(can_manage_contracts)


class SeesUsageExport(HiddenFromOthers):
    """The FOCUS usage export: admins and finance read it (it is read-only)."""

    sees = staticmethod(can_see_reports)


class SeesSources(HiddenFromOthers):
    """Accounts and ingest runs: admins and finance read them, admins change them and upload."""

    sees = staticmethod(can_see_sources)


class SeesRules(HiddenFromOthers):
    """Rules span teams: admins and finance read them, admins change them."""

    sees = staticmethod(can_see_rules)


def writable_outcome_workloads(user) -> QuerySet[Workload]:
    """Outcome counts (issue 12) are business facts a team reports about its own workloads: admins write any
    workload's, a member (lead or not) their teams' workloads'. Finance reads them and writes none: it checks the
    figures, it does not produce them."""
    if is_admin(user):
        return Workload.objects.all()
    if not user.is_authenticated or is_finance(user):
        return Workload.objects.none()
    return Workload.objects.filter(team__memberships__user=user).distinct()


def can_report_anything(user) -> bool:
    """Whether a user may post outcome counts, metrics or eval scores for some workload at all: checked before the
    rows are read, so finance is refused (403) whatever it sends, not told how to fix a batch it may not post."""
    return is_admin(user) or writable_outcome_workloads(user).exists()


def can_write_outcomes(user, workload: Workload) -> bool:
    return writable_outcome_workloads(user).filter(id=workload.id).exists()


def writable_reported_workloads(user) -> QuerySet[Workload]:
    """Reported metrics and eval scores (issue 12), like outcome counts, are measurements a team makes of its own
    workloads: admins write any workload's, a member (lead or not) their teams'; finance reads and writes none."""
    return writable_outcome_workloads(user)


def can_write_channel(user, channel) -> bool:
    """Admins edit every channel; a team lead edits their team's. Only they see even a channel's scheme and host;
    finance and members see no channel at all (a URL is a secret)."""
    if is_admin(user):
        return True
    return channel.team_id is not None and lead_teams(user).filter(id=channel.team_id).exists()


def writable_channels(user):
    from finops.models import Channel

    if is_admin(user):
        return Channel.objects.all()
    return Channel.objects.filter(team__in=lead_teams(user))
