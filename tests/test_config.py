"""Config as code: `apply_config` / `export_config` (finops/services/config/).

A platform team keeps teams, workloads, accounts, prices, FX rates and users in git and applies the
file on every deploy: the second apply must change nothing, a bad file must change nothing and say
exactly where it is wrong, and the export must be a file that recreates what is there.
"""

import datetime as dt
from decimal import Decimal
from io import StringIO

import pytest
import yaml
from django.core.management import CommandError, call_command

from finops import crypto
from finops.models import Account, FxRate, Membership, ModelPrice, Provider, Team, User, Workload
from finops.services.prices import CATALOG_EFFECTIVE_FROM, price_catalog_load

SECRET = "sk-admin-Zq8rT1vX9kLmN3pQ7sW2yB5cD4fG6hJ0aa"
OTHER_SECRET = "sk-admin-Yy7uI6oP5aS4dF3gH2jK1lZ0xC9vB8nMbb"
SECRET_ENV = "FINOPS_TEST_OPENAI_ADMIN_KEY"

EXAMPLE = f"""
providers:
  - slug: gpu-cluster
    name: In-house GPU cluster
teams:
  - name: Support Platform
    slug: support
    cost_center: CC-410
  - name: Search
    slug: search
    cost_center: CC-520
workloads:
  - name: Support agent
    slug: support-agent
    team: support
    latency_profile: realtime
    sla_seconds: 4
    outcome_unit: ticket resolved
  - name: Search ranker
    slug: search-ranker
    team: search
    latency_profile: batch
accounts:
  - name: openai-prod
    provider: openai
    connector: openai_api
    credentials_env: {SECRET_ENV}
    sync_interval_minutes: 30
  - name: groq-exports
    provider: groq
    connector: usage_csv
    enabled: false
prices:
  - provider: gpu-cluster
    model: llama-3.3-70b
    input_per_mtok: 0.2
    output_per_mtok: 0.4
  - provider: groq
    model: gpt-oss-120b
    effective_from: 2025-03-01
    input_per_mtok: 0.1
    output_per_mtok: 0.5
    cached_input_per_mtok: 0.05
fx_rates:
  - day: 2025-01-01
    currency: EUR
    rate: 1.08
  - day: 2025-02-01
    currency: EUR
    rate: 1.04
users:
  - username: ada
    email: ada@example.com
    role: admin
  - username: sam
    email: sam@example.com
    team: support
    team_role: lead
  - username: fiona
    email: fiona@example.com
    role: finance
"""

SNAPSHOT_MODELS = (Provider, Team, Workload, Account, ModelPrice, FxRate, User, Membership)


def snapshot() -> dict:
    """Every row of every model config touches, every column (updated_at and ciphertexts included)."""
    return {model.__name__: list(model.objects.order_by("pk").values()) for model in SNAPSHOT_MODELS}


def write(tmp_path, text: str, name: str = "finops.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def apply(path) -> str:
    out = StringIO()
    call_command("apply_config", str(path), stdout=out)
    return out.getvalue()


def apply_failing(path) -> str:
    with pytest.raises(CommandError) as excinfo:
        call_command("apply_config", str(path), stdout=StringIO())
    return str(excinfo.value)


def export() -> str:
    out = StringIO()
    call_command("export_config", stdout=out)
    return out.getvalue()


@pytest.fixture
def secret_env(monkeypatch):
    monkeypatch.setenv(SECRET_ENV, SECRET)


@pytest.fixture
def example(db, tmp_path, secret_env):
    path = write(tmp_path, EXAMPLE)
    apply(path)
    return path


# --- a full file, applied once and again ---


def test_a_full_example_config_creates_every_object(example):
    support = Team.objects.get(slug="support")
    assert (support.name, support.cost_center) == ("Support Platform", "CC-410")
    agent = Workload.objects.get(slug="support-agent")
    assert (agent.team, agent.latency_profile, agent.sla_seconds, agent.outcome_unit) == (
        support, "realtime", Decimal("4"), "ticket resolved"
    )
    assert Workload.objects.get(slug="search-ranker").sla_seconds is None
    prod = Account.objects.get(name="openai-prod")
    assert (prod.provider.slug, prod.connector, prod.credentials_env, prod.sync_interval_minutes) == (
        "openai", "openai_api", SECRET_ENV, 30
    )
    assert crypto.decrypt(prod.credentials_ciphertext) == SECRET
    groq = Account.objects.get(name="groq-exports")
    assert groq.enabled is False and groq.has_credentials is False
    assert Provider.objects.get(slug="gpu-cluster").builtin is False
    llama = ModelPrice.objects.get(provider__slug="gpu-cluster", model="llama-3.3-70b")
    assert (llama.input_per_mtok, llama.output_per_mtok, llama.source) == (Decimal("0.2"), Decimal("0.4"), "config")
    assert list(FxRate.objects.filter(currency="EUR").order_by("day").values_list("day", "rate")) == [
        (dt.date(2025, 1, 1), Decimal("1.08")),
        (dt.date(2025, 2, 1), Decimal("1.04")),
    ]
    assert User.objects.get(username="fiona").role == "finance"
    assert list(Membership.objects.values_list("user__username", "team__slug", "role")) == [("sam", "support", "lead")]


def test_applying_the_same_file_twice_changes_nothing(example):
    before = snapshot()

    output = apply(example)

    assert output.startswith("No changes")
    assert " 0 created, 0 updated" in output and "updated" not in output.replace("0 updated", "")
    assert snapshot() == before


def test_applying_the_same_file_twice_does_not_re_encrypt_an_unchanged_secret(example):
    account = Account.objects.get(name="openai-prod")

    apply(example)

    account_after = Account.objects.get(name="openai-prod")
    assert account_after.credentials_ciphertext == account.credentials_ciphertext
    assert account_after.updated_at == account.updated_at


def test_changing_one_field_updates_just_that(example, tmp_path):
    before = snapshot()

    output = apply(write(tmp_path, EXAMPLE.replace("cost_center: CC-520", "cost_center: CC-999")))

    assert output.startswith("Applied")
    assert "teams: 0 created, 1 updated, 1 unchanged" in output
    assert "workloads: 0 created, 0 updated, 2 unchanged" in output
    after = snapshot()
    search_before = next(row for row in before["Team"] if row["slug"] == "search")
    search_after = next(row for row in after["Team"] if row["slug"] == "search")
    assert search_after == {**search_before, "cost_center": "CC-999"}
    assert [row for row in after["Team"] if row["slug"] != "search"] == [
        row for row in before["Team"] if row["slug"] != "search"
    ]
    assert {name: rows for name, rows in after.items() if name != "Team"} == {
        name: rows for name, rows in before.items() if name != "Team"
    }


def test_a_changed_secret_in_the_environment_is_re_encrypted(example, monkeypatch):
    before = Account.objects.get(name="openai-prod")
    monkeypatch.setenv(SECRET_ENV, OTHER_SECRET)

    output = apply(example)

    assert "accounts: 0 created, 1 updated, 1 unchanged" in output
    after = Account.objects.get(name="openai-prod")
    assert after.credentials_ciphertext != before.credentials_ciphertext
    assert crypto.decrypt(after.credentials_ciphertext) == OTHER_SECRET
    assert after.credentials_hint == OTHER_SECRET[: len(after.credentials_hint)]
    assert after.updated_at > before.updated_at


def test_the_summary_counts_what_a_first_apply_created(db, tmp_path, secret_env):
    output = apply(write(tmp_path, EXAMPLE))

    assert output.startswith("Applied")
    assert "teams: 2 created, 0 updated, 0 unchanged" in output
    assert "accounts: 2 created, 0 updated, 0 unchanged" in output
    assert "users: 3 created, 0 updated, 0 unchanged" in output


def test_entries_absent_from_the_file_are_left_as_they_are(example, tmp_path):
    apply(write(tmp_path, "teams:\n  - {name: Billing, slug: billing}\n"))

    assert set(Team.objects.values_list("slug", flat=True)) == {"support", "search", "billing"}
    assert Account.objects.filter(name="openai-prod").exists()


# --- bad files: a CommandError naming the file, the entry and the field; nothing changes ---

BAD_FILES = {
    "unknown team on a workload": (
        {"workloads": [{"name": "Ranker 2", "slug": "ranker-2", "team": "serch", "latency_profile": "batch"}]},
        ["workloads[2]", "ranker-2", "team", "serch"],
    ),
    "bad latency profile": (
        {"workloads": [{"name": "Ranker 2", "slug": "ranker-2", "team": "search", "latency_profile": "whenever"}]},
        ["workloads[2]", "ranker-2", "latency_profile", "whenever"],
    ),
    "missing environment variable": (
        {"accounts": [{"name": "anthropic-prod", "provider": "anthropic", "connector": "anthropic_api",
                       "credentials_env": "FINOPS_TEST_NOT_SET_ANYWHERE"}]},
        ["accounts[2]", "anthropic-prod", "credentials_env", "FINOPS_TEST_NOT_SET_ANYWHERE"],
    ),
    "unknown field": (
        {"teams": [{"name": "Billing", "slug": "billing", "cost_centre": "CC-700"}]},
        ["teams[2]", "billing", "cost_centre", "unknown field"],
    ),
    "unknown section": (
        {"team": [{"name": "Billing", "slug": "billing"}]},
        ["unknown section", "'team'"],
    ),
    "duplicate slugs": (
        {"teams": [{"name": "Billing", "slug": "billing"}, {"name": "Billing two", "slug": "billing"}]},
        ["teams[3]", "billing", "duplicate"],
    ),
    "negative price": (
        {"prices": [{"provider": "groq", "model": "gpt-oss-20b", "input_per_mtok": -0.1, "output_per_mtok": 0.3}]},
        ["prices[2]", "gpt-oss-20b", "input_per_mtok", "greater than or equal to 0"],
    ),
    "invalid currency": (
        {"fx_rates": [{"day": dt.date(2025, 3, 1), "currency": "EURO", "rate": 1.1}]},
        ["fx_rates[2]", "EURO", "currency", "ISO 4217"],
    ),
    "entry that is not a mapping": (
        {"teams": ["billing"]},
        ["teams[2]", "must be a mapping"],
    ),
    "unknown provider on a price": (
        {"prices": [{"provider": "groqq", "model": "gpt-oss-20b", "input_per_mtok": 0.1, "output_per_mtok": 0.3}]},
        ["prices[2]", "gpt-oss-20b", "provider", "groqq"],
    ),
    "unknown team on a user": (
        {"users": [{"username": "tess", "team": "serch"}]},
        ["users[3]", "tess", "team", "serch"],
    ),
}


@pytest.mark.parametrize("extra, fragments", BAD_FILES.values(), ids=BAD_FILES.keys())
def test_a_bad_file_is_refused_naming_the_file_entry_and_field_and_changes_nothing(example, tmp_path, extra, fragments):
    # The file also carries a valid change (a cost centre), which must not be applied either.
    document = yaml.safe_load(EXAMPLE.replace("cost_center: CC-520", "cost_center: CC-999"))
    for section, entries in extra.items():
        document[section] = document.get(section, []) + entries
    bad = write(tmp_path, yaml.safe_dump(document, sort_keys=False), "bad-team.yaml")
    before = snapshot()

    message = apply_failing(bad)

    assert "bad-team.yaml" in message
    assert "nothing changed" in message
    for fragment in fragments:
        assert fragment in message
    assert snapshot() == before
    assert Team.objects.get(slug="search").cost_center == "CC-520"


def test_a_section_that_is_not_a_list_is_refused(example, tmp_path):
    before = snapshot()

    message = apply_failing(write(tmp_path, "teams:\n  name: Billing\n  slug: billing\n", "teams.yaml"))

    assert "teams.yaml: teams: must be a list" in message
    assert snapshot() == before


def test_a_team_name_already_used_under_another_slug_is_refused_naming_the_entry(example, tmp_path):
    text = "teams:\n  - {name: Billing, slug: billing}\n  - {name: Search, slug: search-2}\n"
    before = snapshot()

    message = apply_failing(write(tmp_path, text, "names.yaml"))

    assert "names.yaml: teams[1] (slug=search-2)" in message
    assert "(name)=(Search) already exists" in message
    assert "nothing changed" in message
    assert snapshot() == before


def test_malformed_yaml_is_refused_with_its_line_number(example, tmp_path):
    text = "teams:\n  - name: Billing\n    slug: billing\n  - name: Legal\n   slug: legal\n"
    before = snapshot()

    message = apply_failing(write(tmp_path, text, "broken.yaml"))

    assert "broken.yaml" in message
    assert "not valid YAML" in message
    assert "line 5" in message
    assert snapshot() == before


def test_a_file_that_cannot_be_read_is_refused(db, tmp_path):
    message = apply_failing(tmp_path / "missing.yaml")

    assert "missing.yaml" in message
    assert "cannot be read" in message


def test_a_file_with_several_errors_reports_all_of_them(example, tmp_path):
    text = """
teams:
  - {name: Billing, slug: billing, cost_centre: CC-700}
workloads:
  - {name: Ranker 2, slug: ranker-2, team: serch, latency_profile: batch}
  - {name: Ranker 3, slug: ranker-3, team: search, latency_profile: whenever}
prices:
  - {provider: groq, model: gpt-oss-20b, input_per_mtok: -1, output_per_mtok: 0.3}
fx_rates:
  - {day: 2025-03-01, currency: EURO, rate: 1.1}
users:
  - username: sam
    team: support
  - username: sam
    team: search
"""
    before = snapshot()

    message = apply_failing(write(tmp_path, text, "many.yaml"))

    lines = [line.strip() for line in message.splitlines()[1:]]
    assert len(lines) == 6
    assert all(line.startswith("many.yaml: ") for line in lines)
    assert any("teams[0]" in line and "cost_centre" in line for line in lines)
    assert any("workloads[0]" in line and "team" in line and "serch" in line for line in lines)
    assert any("workloads[1]" in line and "latency_profile" in line for line in lines)
    assert any("prices[0]" in line and "input_per_mtok" in line for line in lines)
    assert any("fx_rates[0]" in line and "currency" in line for line in lines)
    assert any("users[1]" in line and "duplicate" in line for line in lines)
    assert snapshot() == before


def test_a_missing_credentials_variable_is_refused_even_on_a_first_apply(db, tmp_path, monkeypatch):
    monkeypatch.delenv(SECRET_ENV, raising=False)

    message = apply_failing(write(tmp_path, EXAMPLE))

    assert "accounts[0] (name=openai-prod): credentials_env" in message
    assert SECRET_ENV in message
    assert not Team.objects.exists()
    assert not Account.objects.exists()
    assert not User.objects.exists()


# --- export ---


def natural_state() -> dict:
    """What config describes, by natural keys (no ids or timestamps): what an export must recreate."""
    return {
        "providers": sorted(Provider.objects.filter(builtin=False).values_list("slug", "name")),
        "teams": sorted(Team.objects.values_list("slug", "name", "cost_center")),
        "workloads": sorted(
            Workload.objects.values_list("slug", "name", "team__slug", "latency_profile", "sla_seconds", "outcome_unit")
        ),
        "accounts": sorted(
            (a.name, a.provider.slug, a.connector, a.base_url, a.credentials_env, a.enabled, a.sync_interval_minutes,
             crypto.decrypt(a.credentials_ciphertext) if a.credentials_ciphertext else "", a.credentials_hint)
            for a in Account.objects.select_related("provider")
        ),
        "prices": sorted(
            ModelPrice.objects.values_list(
                "provider__slug", "model", "effective_from", "effective_to", "input_per_mtok", "output_per_mtok",
                "cached_input_per_mtok", "cache_write_per_mtok", "batch_input_per_mtok", "batch_output_per_mtok",
                "source",
            ),
            key=str,
        ),
        "fx_rates": sorted(FxRate.objects.values_list("day", "currency", "rate")),
        "users": sorted(
            (u.username, u.email, u.role, u.is_staff, u.is_superuser, u.has_usable_password())
            for u in User.objects.all()
        ),
        "memberships": sorted(Membership.objects.values_list("user__username", "team__slug", "role")),
    }


def test_the_export_never_contains_the_secret_only_its_variable(example):
    account = Account.objects.get(name="openai-prod")

    text = export()

    assert SECRET not in text
    assert account.credentials_ciphertext not in text
    assert yaml.safe_load(text)["accounts"][1] == {
        "name": "openai-prod", "provider": "openai", "connector": "openai_api", "credentials_env": SECRET_ENV,
        "enabled": True, "sync_interval_minutes": 30,
    }


def test_the_export_applied_to_a_fresh_database_recreates_the_same_objects(example, tmp_path):
    expected = natural_state()
    exported = write(tmp_path, export(), "exported.yaml")
    Membership.objects.all().delete()
    User.objects.all().delete()
    Account.objects.all().delete()
    Workload.objects.all().delete()
    Team.objects.all().delete()
    FxRate.objects.all().delete()
    ModelPrice.objects.exclude(source=ModelPrice.Source.CATALOG).delete()
    Provider.objects.filter(builtin=False).delete()
    assert natural_state() != expected

    apply(exported)

    assert natural_state() == expected


def test_applying_the_export_to_the_same_database_changes_nothing(
    tmp_path, secret_env, ada, fiona, sam, tess, support_agent, search_ranker
):
    apply(write(tmp_path, EXAMPLE))
    # Objects made outside config too: a persona in two teams, a price entered by hand, a workload.
    Membership.objects.create(user=tess, team=Team.objects.get(slug="support"), role="member")
    ModelPrice.objects.create(
        provider=Provider.objects.get(slug="together"), model="kimi-k2", effective_from=dt.date(2025, 6, 1),
        input_per_mtok=Decimal("1.000000"), output_per_mtok=Decimal("3"), source=ModelPrice.Source.MANUAL,
    )
    Workload.objects.create(team=Team.objects.get(slug="search"), name="Query rewrite", slug="query-rewrite",
                            sla_seconds=Decimal("12.50"))
    before = snapshot()

    output = apply(write(tmp_path, export(), "exported.yaml"))

    assert output.startswith("No changes"), output
    assert snapshot() == before


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

    apply(write(tmp_path, "prices:\n  - {provider: groq, model: groq/openai/gpt-oss-120b, input_per_mtok: 0.12,"
                          " output_per_mtok: 0.5}\n"))

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
    from finops.models import AttributionRule, RuleChange
    from finops.services.config import config_apply, config_export

    text = RULES_BASE + """
rules:
  - {workload: support-agent, priority: 10, match: {provider: openai, model: "gpt-5*", tag: {team: support}}}
  - {workload: search-ranker, priority: 20, match: {project: proj_search}}
"""
    first = config_apply(path="rules.yaml", text=text, environ={})
    assert first.changes["rules"]["created"] == 2
    rule = AttributionRule.objects.get(priority=10)
    assert (rule.provider.slug, rule.model, rule.tags) == ("openai", "gpt-5*", {"team": "support"})
    assert RuleChange.objects.filter(action="created", source="config").count() == 2
    assert not config_apply(path="rules.yaml", text=text, environ={}).changed
    assert not config_apply(path="export.yaml", text=config_export(), environ={}).changed
    assert RuleChange.objects.count() == 2


def test_the_rules_section_is_the_complete_set(db):
    from finops.models import AttributionRule, RuleChange
    from finops.services.config import config_apply

    config_apply(path="r.yaml", text=RULES_BASE + "rules:\n  - {workload: support-agent, priority: 1}\n  - {workload: search-ranker, priority: 2}\n", environ={})
    result = config_apply(path="r.yaml", text=RULES_BASE + "rules:\n  - {workload: search-ranker, priority: 1}\n", environ={})
    assert result.changes["rules"]["updated"] == 1 and result.changes["rules"]["deleted"] == 1
    assert list(AttributionRule.objects.values_list("workload__slug", "priority")) == [("search-ranker", 1)]
    change = RuleChange.objects.get(action="updated")
    assert change.before["workload"] == "support-agent" and change.after["workload"] == "search-ranker"


def test_bad_rules_name_the_entry_and_change_nothing(db):
    from finops.models import AttributionRule
    from finops.services.config import ConfigInvalid, config_apply

    text = RULES_BASE + """
rules:
  - {workload: nope, priority: 1}
  - {workload: support-agent, priority: 1, match: {colour: red}}
  - {workload: support-agent, priority: 2, match: {provider: nowhere, account: ghost}}
"""
    with pytest.raises(ConfigInvalid) as caught:
        config_apply(path="rules.yaml", text=text, environ={})
    errors = "\n".join(caught.value.errors)
    assert "rules.yaml: rules[0] (priority=1): workload: unknown workload 'nope'" in errors
    assert "rules[1] (priority=1): match: colour: unknown field" in errors
    assert "rules[2] (priority=2): match.provider: unknown provider 'nowhere'" in errors
    assert "match.account: unknown account 'ghost'" in errors
    assert not AttributionRule.objects.exists()
