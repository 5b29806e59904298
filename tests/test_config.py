"""Config as code: `apply_config` / `export_config` (finops/config/).

A platform team keeps teams, workloads, accounts, prices, FX rates and users in git and applies the
file on every deploy: the second apply must change nothing, a bad file must change nothing and say
exactly where it is wrong, and the export must be a file that recreates what is there.
"""

import datetime as dt
from decimal import Decimal

import pytest
import yaml

from finops.core import crypto
from finops.models import Account, FxRate, Membership, ModelPrice, Provider, Team, User, Workload
from tests.config_helpers import (
    EXAMPLE,
    OTHER_SECRET,
    SECRET,
    SECRET_ENV,
    apply,
    apply_failing,
    export,
    snapshot,
    write,
)

# --- a full file, applied once and again ---


def test_a_full_example_config_creates_every_object(example):
    support = Team.objects.get(slug="support")
    assert (support.name, support.cost_center) == ("Support Platform", "CC-410")
    agent = Workload.objects.get(slug="support-agent")
    assert (agent.team, agent.latency_profile, agent.sla_seconds, agent.outcome_unit) == (
        support,
        "realtime",
        Decimal("4"),
        "ticket resolved",
    )
    assert Workload.objects.get(slug="search-ranker").sla_seconds is None
    prod = Account.objects.get(name="openai-prod")
    assert (prod.provider.slug, prod.connector, prod.credentials_env, prod.sync_interval_minutes) == (
        "openai",
        "openai_api",
        SECRET_ENV,
        30,
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
        {
            "accounts": [
                {
                    "name": "anthropic-prod",
                    "provider": "anthropic",
                    "connector": "anthropic_api",
                    "credentials_env": "FINOPS_TEST_NOT_SET_ANYWHERE",
                }
            ]
        },
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
            (
                a.name,
                a.provider.slug,
                a.connector,
                a.base_url,
                a.credentials_env,
                a.enabled,
                a.sync_interval_minutes,
                crypto.decrypt(a.credentials_ciphertext) if a.credentials_ciphertext else "",
                a.credentials_hint,
            )
            for a in Account.objects.select_related("provider")
        ),
        "prices": sorted(
            ModelPrice.objects.values_list(
                "provider__slug",
                "model",
                "effective_from",
                "effective_to",
                "input_per_mtok",
                "output_per_mtok",
                "cached_input_per_mtok",
                "cache_write_per_mtok",
                "batch_input_per_mtok",
                "batch_output_per_mtok",
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
        "name": "openai-prod",
        "provider": "openai",
        "connector": "openai_api",
        "credentials_env": SECRET_ENV,
        "enabled": True,
        "sync_interval_minutes": 30,
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
        provider=Provider.objects.get(slug="together"),
        model="kimi-k2",
        effective_from=dt.date(2025, 6, 1),
        input_per_mtok=Decimal("1.000000"),
        output_per_mtok=Decimal("3"),
        source=ModelPrice.Source.MANUAL,
    )
    Workload.objects.create(
        team=Team.objects.get(slug="search"), name="Query rewrite", slug="query-rewrite", sla_seconds=Decimal("12.50")
    )
    before = snapshot()

    output = apply(write(tmp_path, export(), "exported.yaml"))

    assert output.startswith("No changes"), output
    assert snapshot() == before
