"""The audit log (issue 16): a change to an account, rule, cap, contract, offering, user or token — through a page,
the API, `apply_config` or the Django admin — leaves exactly one AuditEntry with who, how, and before/after; secrets
never appear in it (only "changed"). Only admins see the page; its CSV has the page's columns."""

import csv
import io
from decimal import Decimal

import pytest
from django.urls import reverse

from finops.config import config_apply
from finops.models import Account, AttributionRule, AuditEntry, Contract, Offering, Provider, User

JSON = {"content_type": "application/json"}
KEY, NEW_KEY = "sk-admin-9fQ2xLr7TbW4mZp1KcV8nHs3JdY6", "sk-admin-NEWxLr7TbW4mZp1KcV8nHs3JdY6"
HOOK_SECRET, NEW_HOOK_SECRET = "whsec-Jd7Y6gUe0aB1cD2eF3gH4", "whsec-NEWY6gUe0aB1cD2eF3gH4"


class Recorded:
    """The entries written while the block ran."""

    def __enter__(self):
        self.last = AuditEntry.objects.order_by("-id").values_list("id", flat=True).first() or 0
        return self

    def __exit__(self, *exc):
        self.entries = list(AuditEntry.objects.filter(id__gt=self.last).order_by("id"))

    @property
    def one(self) -> AuditEntry:
        assert len(self.entries) == 1, [str(e) for e in self.entries]
        return self.entries[0]


def no_secret_in(entry: AuditEntry, *secrets: str) -> bool:
    text = str(entry.before) + str(entry.after) + str(entry.changed)
    return not any(secret in text or secret[:12] in text for secret in secrets)


# --- accounts ---


def test_an_account_key_replaced_on_its_page_is_recorded_once_as_changed(client_as, ada):
    account = Account.objects.create(
        name="openai-prod", provider=Provider.objects.get(slug="openai"), connector="openai_api"
    )
    from finops.sources.services.accounts import account_set_credentials

    account_set_credentials(account=account, secret=KEY)
    data = {
        "base_url": "https://api.openai.com/v1",
        "secret": NEW_KEY,
        "sync_interval_minutes": "30",
        "enabled": "on",
        "action": "save",
    }
    with Recorded() as r:
        assert client_as(ada).post(reverse("source-edit", args=[account.pk]), data).status_code == 302
    entry = r.one
    assert (entry.entity_type, entry.action, entry.actor, entry.source) == ("account", "updated", ada, "ui")
    assert entry.before["credentials"] == "set" and entry.after["credentials"] == "changed"
    assert entry.before["sync_interval_minutes"] == 60 and entry.after["sync_interval_minutes"] == 30
    assert set(entry.changed) == {"credentials", "sync_interval_minutes", "base_url"} and no_secret_in(
        entry, KEY, NEW_KEY
    )


def test_accounts_from_config_are_recorded_once_each_and_a_reapply_records_nothing(db):
    text = """accounts:
  - {name: openai-prod, provider: openai, connector: openai_api, credentials_env: OPENAI_KEY, sync_interval_minutes: 60}
"""
    with Recorded() as r:
        config_apply(path="c.yaml", text=text, environ={"OPENAI_KEY": KEY})
    entry = r.one
    assert (entry.action, entry.actor, entry.actor_label, entry.source) == ("created", None, "config", "config")
    assert entry.before is None and entry.after["credentials"] == "set" and no_secret_in(entry, KEY)
    with Recorded() as again:
        config_apply(path="c.yaml", text=text, environ={"OPENAI_KEY": KEY})
    assert again.entries == []
    with Recorded() as rotated:
        config_apply(path="c.yaml", text=text, environ={"OPENAI_KEY": NEW_KEY})
    assert rotated.one.changed == ["credentials"] and rotated.one.after["credentials"] == "changed"
    assert no_secret_in(rotated.one, KEY, NEW_KEY)


def test_an_account_saved_in_the_django_admin_is_recorded_once(client_as, ada):
    account = Account.objects.create(
        name="openai-prod", provider=Provider.objects.get(slug="openai"), connector="openai_api"
    )
    data = {
        "name": "openai-prod",
        "provider": account.provider_id,
        "connector": "openai_api",
        "base_url": "",
        "enabled": "on",
        "sync_interval_minutes": "15",
        "credentials_env": "",
        "new_secret": NEW_KEY,
    }
    with Recorded() as r:
        response = client_as(ada).post(reverse("admin:finops_account_change", args=[account.pk]), data)
    assert response.status_code == 302, response.content.decode()[:2000]
    entry = r.one
    assert (entry.action, entry.source, entry.actor) == ("updated", "admin", ada)
    assert set(entry.changed) == {"credentials", "sync_interval_minutes"} and no_secret_in(entry, NEW_KEY)


# --- rules ---


def test_a_rule_change_through_the_api_is_recorded_once_with_before_and_after(
    client_as, ada, support_agent, search_ranker
):
    rule = AttributionRule.objects.create(workload=support_agent, priority=10, project="proj_support")
    with Recorded() as r:
        assert (
            client_as(ada).patch(f"/api/v1/rules/{rule.pk}", {"workload": "search-ranker"}, **JSON).status_code == 200
        )
    entry = r.one
    assert (entry.entity_type, entry.action, entry.source, entry.entity_id) == ("rule", "updated", "api", str(rule.pk))
    assert (entry.before["workload"], entry.after["workload"], entry.changed) == (
        "support-agent",
        "search-ranker",
        ["workload"],
    )


def test_a_rule_created_on_its_page_is_recorded_as_the_ui(client_as, ada, support_agent):
    form = {"workload": support_agent.pk, "priority": 5, "project": "proj_support", "save": "1"}
    with Recorded() as r:
        assert client_as(ada).post(reverse("rule-create"), form).status_code == 302
    assert (r.one.action, r.one.source, r.one.actor) == ("created", "ui", ada)
    page = client_as(ada).get(reverse("rule-edit", args=[AttributionRule.objects.get().pk])).content.decode()
    assert "History" in page and "Created" in page and "ada" in page  # the rule's own history reads the audit log


# --- caps ---


def test_a_cap_created_through_the_api_records_its_webhook_secret_only_as_set(client_as, ada, support_team):
    body = {
        "name": "Support monthly",
        "scope": "team",
        "target": "support",
        "amount": "100.25",
        "recipients": ["lead@example.com"],
        "webhook_url": "https://hooks.example.com/x",
        "webhook_secret": HOOK_SECRET,
    }
    with Recorded() as r:
        assert client_as(ada).post("/api/v1/caps", body, **JSON).status_code == 201
    entry = r.one
    assert (entry.entity_type, entry.action, entry.source) == ("cap", "created", "api")
    assert entry.after["amount"] == "100.25" and entry.after["target"] == "support"
    assert entry.after["webhook_secret"] == "set" and no_secret_in(entry, HOOK_SECRET)


def test_a_cap_edited_on_its_form_and_deleted_are_recorded_once_each(client_as, sam, support_team):
    from finops.alerts.services.caps import cap_create

    cap = cap_create(
        by=sam, name="Agent cap", scope="team", target="support", amount="250", recipients=["sam@example.com"]
    )
    form = {
        "name": "Agent cap",
        "scope": "team:support",
        "period": "month",
        "amount": "300",
        "thresholds": "50, 80, 100",
        "alert_on_forecast": "on",
        "recipients": "sam@example.com",
    }
    with Recorded() as edited:
        assert client_as(sam).post(reverse("cap-edit", args=[cap.pk]), form).status_code == 302
    assert (edited.one.action, edited.one.actor, edited.one.changed) == ("updated", sam, ["amount"])
    assert (edited.one.before["amount"], edited.one.after["amount"]) == ("250", "300")
    with Recorded() as deleted:
        assert client_as(sam).post(reverse("cap-delete", args=[cap.pk])).status_code == 302
    assert (deleted.one.action, deleted.one.after, deleted.one.entity_id) == ("deleted", None, str(cap.pk))
    assert deleted.one.before["name"] == "Agent cap"


def test_a_caps_webhook_secret_rotated_by_config_reads_changed(db, support_team):
    text = """caps:
  - {name: Support monthly, scope: {team: support}, amount: "5000", recipients: [ops@example.com],
     webhook_url: "https://hooks.example.com/x", webhook_secret_env: HOOK}
"""
    config_apply(path="c.yaml", text=text, environ={"HOOK": HOOK_SECRET})
    with Recorded() as r:
        config_apply(path="c.yaml", text=text, environ={"HOOK": NEW_HOOK_SECRET})
    assert (r.one.action, r.one.source, r.one.changed) == ("updated", "config", ["webhook_secret"])
    assert (r.one.before["webhook_secret"], r.one.after["webhook_secret"]) == ("set", "changed")
    assert no_secret_in(r.one, HOOK_SECRET, NEW_HOOK_SECRET)


# --- contracts ---


def test_a_contract_through_the_api_then_config_is_recorded_once_per_change(client_as, ada, openai_account):
    body = {
        "name": "OpenAI 2027",
        "provider": "openai",
        "accounts": ["openai-prod"],
        "start": "2027-01-01",
        "end": "2028-01-01",
        "commitment": "120000",
        "commitment_basis": "yearly",
    }
    with Recorded() as created:
        assert client_as(ada).post("/api/v1/contracts", body, **JSON).status_code == 201
    assert (created.one.entity_type, created.one.action, created.one.source) == ("contract", "created", "api")
    assert created.one.after["accounts"] == ["openai-prod"] and created.one.after["commitment"] == "120000"
    text = """contracts:
  - {name: OpenAI 2027, provider: openai, accounts: [openai-prod], start: 2027-01-01, end: 2028-01-01,
     commitment: "150000", commitment_basis: yearly}
"""
    with Recorded() as updated:
        config_apply(path="c.yaml", text=text, environ={})
    entry = updated.one
    assert (entry.action, entry.source, entry.actor_label) == ("updated", "config", "config")
    assert "commitment" in entry.changed and entry.after["commitment"] == "150000"


def test_a_contract_edited_on_its_page_is_recorded_once(client_as, ada):
    from tests.test_contract_pages import form_data

    assert client_as(ada).post(reverse("contract-create"), form_data()).status_code == 302
    contract = Contract.objects.get()
    with Recorded() as r:
        response = client_as(ada).post(reverse("contract-edit", args=[contract.pk]), form_data(commitment="13000"))
    assert response.status_code == 302, response.content.decode()[-3000:]
    assert (r.one.action, r.one.source, r.one.actor, r.one.changed) == ("updated", "ui", ada, ["commitment"])
    assert Contract.objects.get().commitment == Decimal("13000")  # the page's edit is saved (it once was not)


# --- offerings ---


def test_an_offering_from_the_form_and_from_config_is_recorded_once_each(client_as, ada):
    groq = Provider.objects.get(slug="groq")
    with Recorded() as created:
        client_as(ada).post(
            "/offerings/new/",
            {
                "provider": groq.id,
                "model": "llama-3.3-70b",
                "family": "",
                "input_per_mtok": "0.59",
                "output_per_mtok": "0.79",
            },
        )
    assert (created.one.entity_type, created.one.action, created.one.source) == ("offering", "created", "ui")
    assert created.one.after["input_per_mtok"] == "0.59"
    text = """offerings:
  - {provider: groq, model: llama-3.3-70b, input_per_mtok: "0.50", output_per_mtok: "0.79"}
"""
    with Recorded() as updated:
        config_apply(path="o.yaml", text=text, environ={})
    assert (updated.one.action, updated.one.source, updated.one.changed) == ("updated", "config", ["input_per_mtok"])
    assert Offering.objects.get().input_per_mtok == Decimal("0.50")


# --- users ---


def test_users_from_config_are_recorded_with_role_and_team_and_no_password(db, support_team):
    text = "users:\n  - {username: dana, email: dana@example.com, role: member, team: support, team_role: lead}\n"
    with Recorded() as created:
        config_apply(path="u.yaml", text=text, environ={})
    entry = created.one
    assert (entry.entity_type, entry.action, entry.source) == ("user", "created", "config")
    assert entry.after["role"] == "member" and entry.after["teams"] == ["support:lead"]
    assert "password" not in str(entry.after)
    with Recorded() as promoted:
        config_apply(path="u.yaml", text=text.replace("role: member", "role: admin"), environ={})
    assert promoted.one.changed == ["is_staff", "is_superuser", "role"]
    with Recorded() as again:
        config_apply(path="u.yaml", text=text.replace("role: member", "role: admin"), environ={})
    assert again.entries == []


def test_a_user_changed_in_the_django_admin_is_recorded_once(client_as, ada, fiona):
    url = reverse("admin:finops_user_change", args=[fiona.pk])
    data = {
        "username": "fiona",
        "email": "fiona@new.example.com",
        "role": "finance",
        "time_zone": "",
        "is_active": "on",
        "date_joined_0": "2026-01-01",
        "date_joined_1": "00:00:00",
        "first_name": "",
        "last_name": "",
    }
    with Recorded() as r:
        response = client_as(ada).post(url, data)
    assert response.status_code == 302, response.content.decode()[:3000]
    assert (r.one.action, r.one.source, r.one.actor, r.one.changed) == ("updated", "admin", ada, ["email"])
    assert "pbkdf2" not in str(r.one.before) + str(r.one.after)


# --- the page ---


@pytest.fixture
def some_history(ada, support_agent):
    from finops.spend.services.rules import rule_create

    for priority in range(60):
        rule_create(
            by=ada, source="api", reattribute=False, workload=support_agent, priority=priority, project=f"p{priority}"
        )
    config_apply(
        path="c.yaml",
        environ={"K": KEY},
        text="""accounts:
  - {name: "=HYPERLINK(\\"http://evil\\")", provider: openai, connector: openai_api, credentials_env: K}
""",
    )


def test_only_admins_see_the_audit_log(client_as, ada, fiona, sam, client):
    assert client_as(ada).get(reverse("audit-log")).status_code == 200
    assert client_as(fiona).get(reverse("audit-log")).status_code == 404
    assert client_as(sam).get(reverse("audit-log")).status_code == 404
    assert client_as(sam).get(reverse("audit-log") + "?csv=audit").status_code == 404
    assert client.get(reverse("audit-log")).status_code == 302  # anonymous: to the sign-in page
    assert 'href="/audit/"' in client_as(ada).get("/").content.decode()
    assert 'href="/audit/"' not in client_as(fiona).get("/").content.decode()


def test_the_page_pages_and_filters(client_as, ada, some_history):
    client = client_as(ada)
    first = client.get(reverse("audit-log"))
    assert first.context["page"].paginator.count == AuditEntry.objects.count() and len(first.context["rows"]) == 50
    second = client.get(reverse("audit-log") + "?page=2")
    assert first.context["page"].object_list[0].at >= second.context["page"].object_list[0].at  # newest first
    assert len(second.context["rows"]) == AuditEntry.objects.count() - 50
    accounts = client.get(reverse("audit-log") + "?entity=account")
    assert [r["entity_type"] for r in accounts.context["rows"]] == ["Account"]
    by_config = client.get(reverse("audit-log") + "?actor=config&action=created")
    assert len(by_config.context["rows"]) == 1
    nothing = client.get(reverse("audit-log") + "?start=2099-01-01")
    assert nothing.context["rows"] == [] and "No change matches these filters." in nothing.content.decode()
    assert client.get(reverse("audit-log") + "?start=garbage&end=9999-99-99&page=x").status_code == 200


def test_the_csv_has_the_pages_columns_every_matching_entry_neutralised_cells_and_no_secret(
    client_as, ada, some_history
):
    response = client_as(ada).get(reverse("audit-log") + "?csv=audit")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    text = response.content.decode()
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == ["When (UTC)", "Who", "Via", "Action", "Object", "Name", "Id", "Changes", "Before", "After"]
    assert len(rows) - 1 == AuditEntry.objects.count()  # every entry, not one page
    account_row = next(r for r in rows if r[4] == "Account")
    assert account_row[5].startswith("'=HYPERLINK")  # a formula in a name is written as text
    assert KEY not in text and KEY[:12] not in text
    filtered = list(
        csv.reader(io.StringIO(client_as(ada).get(reverse("audit-log") + "?entity=account&csv=audit").content.decode()))
    )
    assert len(filtered) == 2


def test_a_deleted_user_still_shows_who_made_the_change(ada, support_agent):
    from finops.org.services.users import user_admin_delete
    from finops.spend.services.rules import rule_create

    someone = User.objects.create_user(username="leaver", password="x", role=User.Role.ADMIN)
    rule_create(by=someone, reattribute=False, workload=support_agent, priority=1, project="p")
    user_admin_delete(user=someone, by=ada)
    entry = AuditEntry.objects.get(entity_type="rule")
    assert entry.actor is None and entry.actor_label == "leaver"
    assert AuditEntry.objects.get(entity_type="user", action="deleted").before["username"] == "leaver"


def test_families_and_routing_policies_from_config_are_recorded_once_each(db, support_agent):
    text = """families:
  - {slug: llama-3.3-70b, name: Llama 3.3 70B, aliases: [llama3.3-70b]}
offerings:
  - {provider: groq, model: llama-3.3-70b, blended_per_mtok: "0.7"}
  - {provider: cerebras, model: llama3.3-70b, blended_per_mtok: "0.85"}
routing:
  - {workload: support-agent, primary: {provider: groq, model: llama-3.3-70b}, constraint: cost}
"""
    with Recorded() as created:
        config_apply(path="r.yaml", text=text, environ={})
    assert sorted((e.entity_type, e.action) for e in created.entries) == [
        ("family", "created"),
        ("offering", "created"),
        ("offering", "created"),
        ("routing_policy", "created"),
    ]
    with Recorded() as moved:
        config_apply(
            path="r.yaml",
            text=text.replace(
                "constraint: cost", "fallback: {provider: cerebras, model: llama3.3-70b}, constraint: latency"
            ),
            environ={},
        )
    entry = moved.one
    assert (entry.entity_type, entry.changed) == ("routing_policy", ["constraint", "fallback"])
    assert (entry.before["fallback"], entry.after["fallback"]) == (None, "cerebras/llama3.3-70b")


def test_a_membership_added_in_the_django_admin_is_recorded_on_the_user(client_as, ada, fiona, support_team):
    data = {"user": fiona.pk, "team": support_team.pk, "role": "lead"}
    with Recorded() as r:
        response = client_as(ada).post(reverse("admin:finops_membership_add"), data)
    assert response.status_code == 302, response.content.decode()[:2000]
    assert (r.one.entity_type, r.one.entity_label, r.one.source, r.one.changed) == ("user", "fiona", "admin", ["teams"])
    assert (r.one.before["teams"], r.one.after["teams"]) == ([], ["support:lead"])


def test_an_account_made_by_import_usage_is_recorded_as_the_command_line(db, tmp_path):
    from django.core.management import call_command

    usage = tmp_path / "usage.csv"
    usage.write_text("day,model,input_tokens,output_tokens,cost\n2026-10-01,gpt-5-mini,1000,100,3\n")
    with Recorded() as r:
        call_command(
            "import_usage",
            "--account",
            "finance-export",
            "--connector",
            "usage_csv",
            "--provider",
            "openai",
            str(usage),
            stdout=io.StringIO(),
            stderr=io.StringIO(),
        )
    assert (r.one.entity_type, r.one.action, r.one.source, r.one.entity_label) == (
        "account",
        "created",
        "cli",
        "finance-export",
    )


def test_a_config_apply_that_fails_records_nothing(db, support_team):
    from finops.config import ConfigInvalid

    text = """accounts:
  - {name: openai-prod, provider: openai, connector: openai_api}
caps:
  - {name: Bad cap, scope: {team: support}, amount: "5", recipients: [ops@example.com], webhook_url: "https://hooks.example.com/x"}
"""
    # The account is written first; the cap is refused by its service (no signing secret) inside the same transaction.
    with Recorded() as r, pytest.raises(ConfigInvalid, match="signing secret"):
        config_apply(path="c.yaml", text=text, environ={})
    assert r.entries == [] and not Account.objects.exists()
