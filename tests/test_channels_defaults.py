"""Who hears what nobody chose is rows (issue 25): migration 0037 turns the rules finops/notify/recipients.py
hard-coded into default channels, and the same people get the same alerts before and after, on a test organisation
and on the demo (tests/demo_story/test_demo.py). `before` is the old code's answer: its rules are copied below as
they were (git show 8fdeef7:finops/notify/recipients.py), run on the rows as they were before the migration."""

import datetime as dt
import importlib
from decimal import Decimal

import pytest
from django.apps import apps as django_apps
from django.db.models import Q

from finops.alerts.events import event_raise
from finops.alerts.services.channels import channel_save
from finops.models import AlertKind, AlertSubscription, Channel, ChannelKind, Contract, Membership, Provider, User
from finops.notify.recipients import channel_targets, event_targets
from tests.conftest import make_user, stored_cap

DAY = dt.date(2026, 11, 1)


def _migration():
    return importlib.import_module("finops.migrations.0037_default_channels")


# --- the rules before channels, as they were ---


def _active(users):
    return users.filter(is_active=True).exclude(email="")


def _emails(users):
    return list(_active(users).order_by("username").values_list("email", flat=True))


def _admins():
    return _emails(User.objects.filter(Q(role=User.Role.ADMIN) | Q(is_superuser=True)))


def _finance():
    return _emails(User.objects.filter(role=User.Role.FINANCE))


def _leads(team):
    return _emails(User.objects.filter(memberships__team=team, memberships__role=Membership.Role.LEAD))


def before_targets(event) -> set[tuple[str, str]]:
    """The old event_targets: the chosen channels, else the team's defaults, else the organisation's, else the
    built-in recipients (a team's leads; a failing source the admins; a contract its owner and finance, else the
    admins; anything else the admins and finance), plus a failing source's subscribers."""
    chosen = []
    if event.cap_id:
        chosen = list(event.cap.channels.all())
    elif event.contract_id:
        chosen = list(event.contract.channels.all())
    chosen = [c for c in chosen if c.takes(event.kind)]
    if not chosen and event.team_id:
        chosen = [c for c in Channel.objects.filter(team_id=event.team_id, is_default=True) if c.takes(event.kind)]
    if not chosen:
        chosen = [c for c in Channel.objects.filter(team=None, is_default=True) if c.takes(event.kind)]
    targets = {(t.channel, t.recipient.lower()) for c in chosen for t in channel_targets(c, event)}
    if not chosen:
        if event.contract_id:
            addresses = ([event.contract.owner] if event.contract.owner else []) + _finance()
            addresses = addresses or _admins()
        elif event.team_id:
            addresses = _leads(event.team)
        elif event.kind == AlertKind.SOURCE_FAILING:
            addresses = _admins()
        else:
            addresses = _admins() + _finance()
        targets |= {("email", a.lower()) for a in addresses}
    if event.kind == AlertKind.SOURCE_FAILING:
        targets |= {("email", a.lower()) for a in _emails(User.objects.filter(alert_subscriptions__kind=event.kind))}
    return targets


def cap_recipients_before(event) -> set[str]:
    """The addresses a cap's recipients named before channels: role:team_leads the cap's team's leads (a cap on no
    team: the admins), role:finance, role:admins, and addresses as written."""
    found: set[str] = set()
    for entry in event.cap.recipients:
        if entry == "role:team_leads":
            team = event.cap.owning_team
            found |= set(_leads(team) if team is not None else _admins())
        elif entry == "role:finance":
            found |= set(_finance())
        elif entry == "role:admins":
            found |= set(_admins())
        else:
            found.add(entry)
    return {a.lower() for a in found}


def after_targets(event) -> set[tuple[str, str]]:
    return {(t.channel, t.recipient.lower()) for t in event_targets(event)}


def as_before_the_migration() -> None:
    """The rows as they were before 0037: no default channel it makes (the test database was migrated, and its
    teams got theirs when made)."""
    names = [name for name, _a, _k in _migration().ORGANISATION_DEFAULTS]
    Channel.objects.filter(team=None, is_default=True, name__in=names).delete()
    Channel.objects.filter(team__isnull=False, is_default=True, addresses=["role:team_leads"]).delete()


@pytest.mark.django_db
def test_the_migration_makes_default_channels_that_tell_the_same_people_as_the_rules_did(
    settings, ada, fiona, sam, support_team, search_team, support_agent
):
    import ipaddress

    settings.FINOPS_EGRESS_ALLOWED_NETWORKS = [ipaddress.ip_network("127.0.0.0/8")]
    lena = make_user("lena", User.Role.MEMBER, team=search_team)  # Search's lead
    make_user("mo", User.Role.MEMBER, team=support_team, team_role="member")  # not a lead: never told
    AlertSubscription.objects.create(user=lena, kind=AlertKind.SOURCE_FAILING)
    as_before_the_migration()
    # Rows an organisation may have had already: an organisation Slack for failing sources, Search's own Slack for
    # its spikes, and a cap with its own channels (0034).
    channel_save(
        by=None,
        name="Platform Slack",
        kind=ChannelKind.SLACK,
        url="http://127.0.0.1:9/s",
        kinds=[AlertKind.SOURCE_FAILING],
        is_default=True,
    )
    channel_save(
        by=None,
        name="Search Slack",
        kind=ChannelKind.SLACK,
        team=search_team,
        url="http://127.0.0.1:9/t",
        kinds=[AlertKind.SPEND_SPIKE],
        is_default=True,
    )
    cap = stored_cap(
        name="Support November", scope="team", team=support_team, amount=Decimal("5000"), recipients=["role:finance"]
    )
    openai = Provider.objects.get(slug="openai")
    owned = Contract.objects.create(
        name="Owned", provider=openai, start=DAY, end=DAY.replace(year=2027), commitment=1, owner="olga@example.com"
    )
    unowned = Contract.objects.create(
        name="Unowned", provider=openai, start=DAY, end=DAY.replace(year=2027), commitment=1
    )

    def raise_(kind, subject, **fields):
        return event_raise(kind=kind, subject=subject, period_start=DAY, title=subject, details={}, **fields)

    events = [
        raise_(AlertKind.CAP_THRESHOLD, "cap", cap=cap, team=support_team, threshold=80),
        raise_(AlertKind.SPEND_SPIKE, "support spike", workload=support_agent, team=support_team),
        raise_(AlertKind.OUTCOME_COST, "support outcome", workload=support_agent, team=support_team),
        raise_(AlertKind.SPEND_SPIKE, "search spike", team=search_team),
        raise_(AlertKind.OUTCOME_COST, "search outcome", team=search_team),
        raise_(AlertKind.UNPRICED_USAGE, "unpriced"),
        raise_(AlertKind.SOURCE_FAILING, "source"),
        raise_(AlertKind.CONTRACT_NOTICE, "owned", contract=owned),
        raise_(AlertKind.CONTRACT_SHORTFALL, "unowned", contract=unowned),
    ]
    before = {e.title: before_targets(e) for e in events}

    _migration().default_channels(django_apps, None)
    _migration().default_channels(django_apps, None)  # run twice: the same rows

    assert {e.title: after_targets(e) for e in events} == before
    slack = ("slack", "http://127.0.0.1:9/…")
    assert before == {  # what the rules said, written out
        "cap": {("email", "fiona@example.com")},
        "support spike": {("email", "sam@example.com")},
        "support outcome": {("email", "sam@example.com")},
        "search spike": {slack},
        "search outcome": {("email", "lena@example.com")},
        "unpriced": {("email", "ada@example.com"), ("email", "fiona@example.com")},
        "source": {slack, ("email", "lena@example.com")},
        "owned": {("email", "olga@example.com"), ("email", "fiona@example.com")},
        "unowned": {("email", "fiona@example.com")},
    }
    # Only the kinds the rules answered: the organisation's Slack kept failing sources, Search's Slack its spikes.
    defaults = {c.name: c.kinds for c in Channel.objects.filter(team=None, is_default=True, kind="email")}
    assert "source_failing" not in defaults["Admins and finance"] and "Admins: failing sources" not in defaults
    assert Channel.objects.get(team=search_team, kind="email", is_default=True).kinds == [
        k for k in AlertKind.values if k != AlertKind.SPEND_SPIKE and k != AlertKind.SOURCE_FAILING
    ]
    assert Channel.objects.get(team=support_team, kind="email", is_default=True).kinds == [
        k for k in AlertKind.values if k != AlertKind.SOURCE_FAILING
    ]


@pytest.mark.django_db
def test_a_new_installation_and_a_new_team_have_their_default_channels(search_team):
    # The test database was migrated on an empty database: the organisation's defaults, for every kind between them.
    defaults = Channel.objects.filter(team=None, is_default=True)
    assert {c.name for c in defaults} == {
        "Admins: failing sources",
        "Contracts: owner and finance",
        "Admins and finance",
    }
    assert sorted(k for c in defaults for k in c.kinds) == sorted(AlertKind.values)
    # A team made any way gets an email channel to its leads, for every kind.
    (team_default,) = Channel.objects.filter(team=search_team, is_default=True)
    assert team_default.addresses == ["role:team_leads"] and team_default.kinds == []
