"""Config as code, the `caps:` section (issue 10): applied through the same service as the form and the API; a bad
cap applies nothing and names its entry and field; `export_config` prints caps back, never the webhook secret."""

from decimal import Decimal

import pytest

from finops.core import crypto
from finops.models import Cap, Team
from tests.config_helpers import EXAMPLE, apply, apply_failing, export, write

HOOK_SECRET = "whsec-Config-9fK2mQ7rT1"
HOOK_ENV = "FINOPS_TEST_CAP_WEBHOOK_SECRET"

CAPS = """
caps:
  - name: Support monthly
    scope: {team: support}
    period: month
    amount: "5000"
    thresholds: [100, 50, 80]
    forecast: true
    recipients: [lead@example.com, role:team_leads, role:finance]
    webhook_url: https://hooks.example.com/finops
    webhook_secret_env: HOOK_ENV_NAME
  - name: Agent quarterly
    scope: {workload: support-agent}
    period: quarter
    amount: "1200.50"
    forecast: false
    recipients: [role:admins]
  - name: Groq
    scope: {provider: groq}
    amount: "300"
    recipients: [ops@example.com]
  - name: OpenAI prod
    scope: {account: openai-prod}
    amount: "9000"
    recipients: [ops@example.com]
  - name: Everything
    scope: org
    amount: "25000"
    recipients: [role:finance]
""".replace("HOOK_ENV_NAME", HOOK_ENV)


@pytest.fixture
def hook_env(monkeypatch):
    monkeypatch.setenv(HOOK_ENV, HOOK_SECRET)


def caps_snapshot() -> list[dict]:
    return list(Cap.objects.order_by("pk").values())


def test_caps_in_the_file_are_created_on_every_kind_of_scope(example, tmp_path, hook_env):
    output = apply(write(tmp_path, EXAMPLE + CAPS))

    assert "caps: 5 created, 0 updated, 0 unchanged" in output
    caps = {c.name: c for c in Cap.objects.select_related("team", "workload", "provider", "account")}
    support = caps["Support monthly"]
    assert (support.team.slug, support.period, support.amount, support.thresholds) == (
        "support",
        "month",
        Decimal("5000"),
        [50, 80, 100],
    )
    assert support.recipients == ["lead@example.com", "role:team_leads", "role:finance"]
    assert crypto.decrypt(support.webhook_secret_ciphertext) == HOOK_SECRET
    agent = caps["Agent quarterly"]
    assert (agent.workload.slug, agent.period, agent.amount, agent.alert_on_forecast) == (
        "support-agent",
        "quarter",
        Decimal("1200.50"),
        False,
    )
    assert caps["Groq"].provider.slug == "groq" and caps["OpenAI prod"].account.name == "openai-prod"
    assert caps["Everything"].scope == "org" and caps["Everything"].scope_object is None


def test_applying_the_same_caps_again_changes_nothing(example, tmp_path, hook_env):
    path = write(tmp_path, EXAMPLE + CAPS)
    apply(path)
    before = caps_snapshot()

    output = apply(path)

    assert "caps: 0 created, 0 updated, 5 unchanged" in output
    assert caps_snapshot() == before


def test_a_changed_amount_updates_the_cap_of_that_name(example, tmp_path, hook_env):
    apply(write(tmp_path, EXAMPLE + CAPS))

    output = apply(write(tmp_path, EXAMPLE + CAPS.replace('amount: "300"', 'amount: "450"')))

    assert "caps: 0 created, 1 updated, 4 unchanged" in output
    assert Cap.objects.get(name="Groq").amount == Decimal("450")


@pytest.mark.parametrize(
    "line, bad_line, words",
    [
        (
            "    thresholds: [100, 50, 80]",
            "    thresholds: [0, 50]",
            "caps[0] (name=Support monthly): thresholds: 0 % is outside 1–1000 %",
        ),
        (
            "    recipients: [role:admins]",
            "    recipients: [nobody]",
            "caps[1] (name=Agent quarterly): recipients: 'nobody' is neither an email address nor a role",
        ),
        (
            "    scope: {provider: groq}",
            "    scope: {provider: nvidia}",
            "caps[2] (name=Groq): scope: unknown provider 'nvidia'",
        ),
        ("    scope: org", "    scope: {org: everything}", "caps[4] (name=Everything): scope: must be org, or one of"),
        ('    amount: "25000"', '    amount: "0"', "caps[4] (name=Everything): amount: Must be more than 0."),
        (
            f"    webhook_secret_env: {HOOK_ENV}",
            "    webhook_secret_env: UNSET_ENV",
            "caps[0] (name=Support monthly): webhook_secret_env: environment variable UNSET_ENV",
        ),
        (
            "    forecast: false",
            "    forecast: false\n    colour: red",
            "caps[1] (name=Agent quarterly): colour: unknown field",
        ),
    ],
)
def test_a_bad_cap_applies_nothing_and_names_its_entry_and_field(
    db, tmp_path, hook_env, secret_env, line, bad_line, words
):
    assert line in CAPS

    message = apply_failing(write(tmp_path, EXAMPLE + CAPS.replace(line, bad_line)))

    assert words in message, message
    assert not Cap.objects.exists() and not Team.objects.exists()


def test_a_cap_refused_by_the_service_rolls_back_the_whole_file(db, tmp_path, hook_env, secret_env):
    """A webhook without a secret is the service's rule, found while applying: the teams before it go too."""
    text = EXAMPLE + CAPS.replace(f"    webhook_secret_env: {HOOK_ENV}\n", "")

    message = apply_failing(write(tmp_path, text))

    assert "caps[0] (name=Support monthly): webhook_secret_env: A webhook needs a signing secret" in message
    assert not Cap.objects.exists() and not Team.objects.exists()


def test_the_export_prints_caps_back_without_the_webhook_secret_and_applies_unchanged(
    example, tmp_path, hook_env, monkeypatch
):
    apply(write(tmp_path, EXAMPLE + CAPS))
    before = caps_snapshot()

    exported = export()

    assert HOOK_SECRET not in exported and HOOK_ENV not in exported and "webhook_secret" not in exported
    assert (
        "- name: Support monthly\n  scope:\n    team: support\n  period: month\n  amount: '5000'\n  thresholds:\n  - 50"
        in exported
    )
    assert "scope: org" in exported
    monkeypatch.delenv(HOOK_ENV)  # the export names no secret: the stored one is kept
    output = apply(write(tmp_path, exported, "exported.yaml"))
    assert "caps: 0 created, 0 updated, 5 unchanged" in output
    assert caps_snapshot() == before
