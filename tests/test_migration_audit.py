"""Upgrading to the audit log keeps the rules' history (migration 0022): every RuleChange becomes an AuditEntry
with its time, author, source and before/after, and going back restores them; API tokens made before named tokens
keep working, read-write, until their expiry."""

import datetime as dt

from tests.migration_helpers import database_at, migrate

BEFORE_AUDIT = [("finops", "0021_reports")]
AUDIT = [("finops", "0022_audit_log_and_api_tokens")]  # the migration under test: each test goes up (and back) over it


at_0021 = database_at(BEFORE_AUDIT)  # a scratch database there, for the test


def test_upgrading_moves_rule_history_into_the_audit_log_and_back(at_0021):
    get = lambda name: at_0021.get_model("finops", name)  # noqa: E731
    user = get("User").objects.create(username="ada-before", role="admin")
    team = get("Team").objects.create(name="Support", slug="support-m")
    workload = get("Workload").objects.create(team=team, name="Agent", slug="agent-m")
    rule = get("AttributionRule").objects.create(workload=workload, priority=1, project="p")
    when = dt.datetime(2026, 3, 1, 12, 30, tzinfo=dt.UTC)
    created = get("RuleChange").objects.create(
        rule=rule,
        rule_label="#1 agent-m",
        action="created",
        before=None,
        after={"workload": "agent-m", "priority": 1},
        changed_by=user,
        source="ui",
    )
    get("RuleChange").objects.filter(id=created.id).update(changed_at=when)
    get("RuleChange").objects.create(
        rule=None,
        rule_label="#2 gone",
        action="deleted",
        before={"priority": 2},
        after=None,
        changed_by=None,
        source="config",
    )

    new = migrate(AUDIT)
    entries = new.get_model("finops", "AuditEntry").objects.order_by("id")
    assert [(e.action, e.actor_label, e.source, e.entity_type, e.entity_id, e.entity_label) for e in entries] == [
        ("created", "ada-before", "ui", "rule", str(rule.id), "#1 agent-m"),
        ("deleted", "config", "config", "rule", "", "#2 gone"),
    ]
    first = entries[0]
    assert first.at == when and first.actor_id == user.id and first.after == {"workload": "agent-m", "priority": 1}
    assert first.changed == ["priority", "workload"]

    old = migrate(BEFORE_AUDIT)
    back = old.get_model("finops", "RuleChange").objects.order_by("id")
    assert [(c.action, c.rule_id, c.source, c.changed_at == when) for c in back] == [
        ("created", rule.id, "ui", True),
        ("deleted", None, "config", False),
    ]


def test_upgrading_gives_tokens_made_before_a_read_write_scope_and_their_expiry(at_0021):
    from knox.models import AuthToken

    User = at_0021.get_model("finops", "User")
    user = User.objects.create(username="fiona-before", role="finance")
    from finops.models import User as CurrentUser

    auth_token, _ = AuthToken.objects.create(user=CurrentUser.objects.get(pk=user.pk), expiry=dt.timedelta(days=30))
    new = migrate(AUDIT)
    token = new.get_model("finops", "ApiToken").objects.get(user_id=user.id)
    assert (token.scope, token.prefix, token.expires_at, token.auth_token_id) == (
        "write",
        auth_token.token_key[:8],
        auth_token.expiry,
        auth_token.digest,
    )
