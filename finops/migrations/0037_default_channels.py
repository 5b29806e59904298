"""Who hears what nobody chose becomes rows (issue 25): the organisation's default channels and each team's default
email channel to its leads replace the rules finops/notify/recipients.py hard-coded (a team's events to its leads; a
failing source to the admins; a contract's to its owner and finance; anything else to the admins and finance).

The same people get the same alerts before and after (tests/test_channels_defaults.py runs this on a test
organisation and on the demo): each new default channel takes only the kinds the old rules answered for, that is the
kinds no existing default channel (the team's, then the organisation's) took already. A new installation gets them
all, for every kind. Later teams get theirs when made (finops/services/channels.py, team_created). The names, roles
and kinds are frozen here as they were written; the service's ORGANISATION_DEFAULTS may change later.

One difference is deliberate: a contract without an owner, in an organisation without a finance user, went to the
admins; its channel (role:contract_owner, role:finance) names nobody then (docs/alerts.md says so).
"""

from django.db import migrations

KINDS = [
    "cap_threshold",
    "cap_forecast",
    "spend_spike",
    "unpriced_usage",
    "source_failing",
    "contract_notice",
    "contract_shortfall",
    "contract_overage",
    "outcome_cost",
]
CONTRACT_KINDS = ["contract_notice", "contract_shortfall", "contract_overage"]
ORGANISATION_DEFAULTS = [
    ("Admins: failing sources", ["role:admins"], ["source_failing"]),
    ("Contracts: owner and finance", ["role:contract_owner", "role:finance"], CONTRACT_KINDS),
    (
        "Admins and finance",
        ["role:admins", "role:finance"],
        [k for k in KINDS if k != "source_failing" and k not in CONTRACT_KINDS],
    ),
]


def _taken(channels) -> set[str]:
    taken: set[str] = set()
    for channel in channels:
        taken |= set(channel.kinds or KINDS)  # no kinds: every kind
    return taken


def default_channels(apps, schema_editor):
    Channel = apps.get_model("finops", "Channel")
    Team = apps.get_model("finops", "Team")
    organisation_taken = _taken(Channel.objects.filter(team=None, is_default=True))
    for team in Team.objects.order_by("id"):
        # Before: a team's event went to its default channels, else the organisation's, else its leads.
        left = [k for k in KINDS if k not in _taken(Channel.objects.filter(team=team, is_default=True))]
        left = [k for k in left if k not in organisation_taken]
        if left and not Channel.objects.filter(team=team, is_default=True, name=f"{team.name}: team leads"[:120]):
            Channel.objects.create(
                name=f"{team.name}: team leads"[:120],
                kind="email",
                team=team,
                addresses=["role:team_leads"],
                kinds=[] if left == KINDS else left,
                is_default=True,
            )
    for name, addresses, kinds in ORGANISATION_DEFAULTS:
        left = [k for k in kinds if k not in organisation_taken]
        if left and not Channel.objects.filter(team=None, is_default=True, name=name).exists():
            Channel.objects.create(name=name, kind="email", addresses=addresses, kinds=left, is_default=True)


def default_channels_back(apps, schema_editor):
    Channel = apps.get_model("finops", "Channel")
    names = [name for name, _a, _k in ORGANISATION_DEFAULTS]
    Channel.objects.filter(team=None, is_default=True, name__in=names, kind="email").delete()
    Channel.objects.filter(team__isnull=False, is_default=True, addresses=["role:team_leads"]).delete()


class Migration(migrations.Migration):
    dependencies = [("finops", "0036_channel_workloads")]

    operations = [migrations.RunPython(default_channels, default_channels_back)]
