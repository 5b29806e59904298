"""Config as code, the entries beyond the organisation: users and their roles and teams, dated prices, and the
ordered attribution rules (issue 4). The file as a whole, bad files and the export: test_config.py."""

import datetime as dt
from decimal import Decimal

import pytest

from finops.models import Membership, ModelPrice, User
from finops.prices.services import CATALOG_EFFECTIVE_FROM, price_catalog_load
from tests.config_helpers import (
    EXAMPLE,
    apply,
    apply_failing,
    write,
)

# --- users ---


def test_an_admin_in_config_is_staff_and_superuser_and_others_are_not(example):
    ada, fiona, sam = (User.objects.get(username=name) for name in ("ada", "fiona", "sam"))

    assert (ada.role, ada.is_staff, ada.is_superuser) == ("admin", True, True)
    assert (fiona.is_staff, fiona.is_superuser) == (False, False)
    assert (sam.role, sam.is_staff, sam.is_superuser) == ("member", False, False)


def test_demoting_an_admin_in_config_takes_away_staff_and_superuser(example, tmp_path):
    apply(write(tmp_path, EXAMPLE.replace("role: admin", "role: finance")))

    ada = User.objects.get(username="ada")
    assert (ada.role, ada.is_staff, ada.is_superuser) == ("finance", False, False)


def test_users_created_by_config_cannot_sign_in_with_a_password(example):
    for user in User.objects.all():
        assert not user.has_usable_password()
        assert not user.check_password("")


def test_config_does_not_touch_an_existing_users_password(db, tmp_path, secret_env, sam):
    password = sam.password

    apply(write(tmp_path, EXAMPLE))

    sam.refresh_from_db()
    assert sam.password == password and sam.has_usable_password()


def test_moving_a_user_to_another_team_removes_the_old_membership(example, tmp_path):
    output = apply(write(tmp_path, EXAMPLE.replace("team: support\n    team_role: lead", "team: search")))

    assert "users: 0 created, 1 updated, 2 unchanged" in output
    assert list(Membership.objects.values_list("user__username", "team__slug", "role")) == [("sam", "search", "member")]


def test_a_user_without_a_team_in_config_keeps_their_memberships(example, tmp_path):
    apply(write(tmp_path, EXAMPLE.replace("    team: support\n    team_role: lead\n", "")))

    assert list(Membership.objects.values_list("user__username", "team__slug", "role")) == [("sam", "support", "lead")]


# --- prices ---


def test_a_dated_price_coexists_with_the_undated_one_which_starts_on_the_catalog_date(db, tmp_path):
    text = """
prices:
  - {provider: groq, model: gpt-oss-20b, input_per_mtok: 0.08, output_per_mtok: 0.32}
  - {provider: groq, model: gpt-oss-20b, effective_from: 2025-07-01, input_per_mtok: 0.05, output_per_mtok: 0.2}
"""
    apply(write(tmp_path, text))

    rows = list(
        ModelPrice.objects.filter(provider__slug="groq", model="gpt-oss-20b")
        .order_by("effective_from")
        .values_list("effective_from", "input_per_mtok", "output_per_mtok", "source")
    )
    assert rows == [
        (CATALOG_EFFECTIVE_FROM, Decimal("0.08"), Decimal("0.32"), "config"),
        (dt.date(2025, 7, 1), Decimal("0.05"), Decimal("0.2"), "config"),
    ]


def test_a_config_price_replaces_the_catalog_row_for_the_same_provider_model_and_date(db, tmp_path):
    catalog = ModelPrice.objects.get(provider__slug="groq", model="gpt-oss-120b", effective_from=CATALOG_EFFECTIVE_FROM)
    assert catalog.source == "catalog"

    apply(
        write(
            tmp_path,
            "prices:\n  - {provider: groq, model: groq/openai/gpt-oss-120b, input_per_mtok: 0.12,"
            " output_per_mtok: 0.5}\n",
        )
    )

    rows = ModelPrice.objects.filter(provider__slug="groq", model="gpt-oss-120b")
    assert rows.count() == 1
    price = rows.get()
    assert price.pk == catalog.pk
    assert (price.input_per_mtok, price.output_per_mtok, price.source) == (Decimal("0.12"), Decimal("0.5"), "config")
    assert price.cached_input_per_mtok is None

    price_catalog_load()

    assert ModelPrice.objects.get(pk=catalog.pk).input_per_mtok == Decimal("0.12")


def test_two_prices_for_the_same_model_and_date_are_duplicates(db, tmp_path):
    text = """
prices:
  - {provider: groq, model: gpt-oss-120b, input_per_mtok: 0.1, output_per_mtok: 0.5}
  - {provider: groq, model: openai/gpt-oss-120b, effective_from: 2024-01-01, input_per_mtok: 0.2, output_per_mtok: 0.6}
"""
    message = apply_failing(write(tmp_path, text))

    assert "prices[1]" in message and "duplicate" in message
    assert ModelPrice.objects.get(provider__slug="groq", model="gpt-oss-120b").source == "catalog"


# --- rules: (issue 4) ---

RULES_BASE = """
teams:
  - {name: Support Platform, slug: support}
  - {name: Search, slug: search}
workloads:
  - {name: Support agent, slug: support-agent, team: support, latency_profile: realtime}
  - {name: Search ranker, slug: search-ranker, team: search, latency_profile: batch}
"""


def test_a_rules_section_is_applied_audited_and_idempotent(db):
    from finops.config import config_apply, config_export
    from finops.models import AttributionRule, AuditEntry

    text = (
        RULES_BASE
        + """
rules:
  - {workload: support-agent, priority: 10, match: {provider: openai, model: "gpt-5*", tag: {team: support}}}
  - {workload: search-ranker, priority: 20, match: {project: proj_search}}
"""
    )
    first = config_apply(path="rules.yaml", text=text, environ={})
    assert first.changes["rules"]["created"] == 2
    rule = AttributionRule.objects.get(priority=10)
    assert (rule.provider.slug, rule.model, rule.tags) == ("openai", "gpt-5*", {"team": "support"})
    assert AuditEntry.objects.filter(entity_type="rule").filter(action="created", source="config").count() == 2
    assert not config_apply(path="rules.yaml", text=text, environ={}).changed
    assert not config_apply(path="export.yaml", text=config_export(), environ={}).changed
    assert AuditEntry.objects.filter(entity_type="rule").count() == 2


def test_the_rules_section_is_the_complete_set(db):
    from finops.config import config_apply
    from finops.models import AttributionRule, AuditEntry

    config_apply(
        path="r.yaml",
        text=RULES_BASE
        + "rules:\n  - {workload: support-agent, priority: 1}\n  - {workload: search-ranker, priority: 2}\n",
        environ={},
    )
    result = config_apply(
        path="r.yaml", text=RULES_BASE + "rules:\n  - {workload: search-ranker, priority: 1}\n", environ={}
    )
    assert result.changes["rules"]["updated"] == 1 and result.changes["rules"]["deleted"] == 1
    assert list(AttributionRule.objects.values_list("workload__slug", "priority")) == [("search-ranker", 1)]
    change = AuditEntry.objects.filter(entity_type="rule").get(action="updated")
    assert change.before["workload"] == "support-agent" and change.after["workload"] == "search-ranker"


def test_bad_rules_name_the_entry_and_change_nothing(db):
    from finops.config import ConfigInvalid, config_apply
    from finops.models import AttributionRule

    text = (
        RULES_BASE
        + """
rules:
  - {workload: nope, priority: 1}
  - {workload: support-agent, priority: 1, match: {colour: red}}
  - {workload: support-agent, priority: 2, match: {provider: nowhere, account: ghost}}
"""
    )
    with pytest.raises(ConfigInvalid) as caught:
        config_apply(path="rules.yaml", text=text, environ={})
    errors = "\n".join(caught.value.errors)
    assert "rules.yaml: rules[0] (priority=1): workload: unknown workload 'nope'" in errors
    assert "rules[1] (priority=1): match: colour: unknown field" in errors
    assert "rules[2] (priority=2): match.provider: unknown provider 'nowhere'" in errors
    assert "match.account: unknown account 'ghost'" in errors
    assert not AttributionRule.objects.exists()
