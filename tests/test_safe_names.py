"""Names that reach emails, CSV files and HTTP headers refuse control characters at every write path, with a located
message (finops.core.text.name_check / control_character): a CR or LF in a cap's name would add a line to an email or a
CSV row, a NUL would corrupt it. Cap and contract names (form, API, apply_config), team and workload names
(apply_config, the Django admin), and model names coming from imports (a located row error, nothing stored)."""

import io

import pytest
from django.urls import reverse

from finops.alerts.services.caps import CapInvalid, cap_create, cap_update
from finops.contracts.services import ContractInvalid, contract_create
from finops.core.text import control_character
from finops.models import Cap, Contract, Team, UsageLine, Workload
from ingest.services import usage_file_import
from tests.config_helpers import apply, apply_failing, write

JSON = {"content_type": "application/json"}
# Every class the rule names: CR, LF, NUL, tab and the rest of C0, DEL, C1, and the Unicode line separators.
CONTROLS = ["\r", "\n", "\x00", "\t", "\x1b", "\x7f", "\x85", "\x9b", "\u2028"]


@pytest.mark.parametrize("char", CONTROLS)
def test_every_control_character_is_found_and_located(char):
    found = control_character(f"Support{char}monthly")
    assert found is not None and found.endswith(f"(U+{ord(char):04X}) at character 8")
    assert control_character("Support — monthly (EU) №1 ü") is None  # ordinary Unicode is a name


def cap_fields(**overrides) -> dict:
    return {
        "name": "Support monthly",
        "scope": "team",
        "target": "support",
        "amount": "100",
        "recipients": ["lead@example.com"],
        **overrides,
    }


@pytest.mark.parametrize("char", ["\r\n", "\n", "\x00", "\x85"])
def test_a_cap_name_with_a_control_character_is_refused_by_the_service_on_create_and_change(ada, support_team, char):
    with pytest.raises(CapInvalid) as refused:
        cap_create(by=ada, **cap_fields(name=f"Support{char}Bcc: everyone@example.com"))
    assert "at character 8" in refused.value.errors["name"] and "control characters" in refused.value.errors["name"]

    cap = cap_create(by=ada, **cap_fields())
    with pytest.raises(CapInvalid, match="a line feed"):
        cap_update(cap=cap, by=ada, name="Support\nmonthly")
    cap.refresh_from_db()
    assert cap.name == "Support monthly"


def test_the_cap_form_and_the_api_refuse_a_name_with_a_line_break_on_its_field(client_as, sam):
    client = client_as(sam)
    page = client.post(
        reverse("cap-create"),
        {
            "name": "Support\r\nX-Injected: 1",
            "scope": "team:support",
            "period": "month",
            "amount": "100",
            "thresholds": "80",
            "recipients": "role:team_leads",
        },
    )
    assert page.status_code == 200 and "Contains a carriage return (U+000D) at character 8" in page.content.decode()

    response = client.post("/api/v1/caps", cap_fields(name="Support\nmonthly"), **JSON)
    assert response.status_code == 400 and "a line feed (U+000A) at character 8" in response.json()["name"]
    assert not Cap.objects.exists()


def test_a_contract_name_with_a_control_character_is_refused(ada, db):
    from finops.models import Provider

    provider = Provider.objects.get_or_create(slug="openai", defaults={"name": "OpenAI"})[0]
    with pytest.raises(ContractInvalid) as refused:
        contract_create(
            by=ada,
            name="OpenAI\x00commit",
            provider=provider.slug,
            start="2026-01-01",
            end="2027-01-01",
            commitment="120000",
        )
    assert "a NUL (U+0000) at character 7" in refused.value.errors["name"]
    assert not Contract.objects.exists()


def test_apply_config_refuses_team_and_workload_names_with_control_characters_naming_entry_and_field(tmp_path, db):
    text = (
        'teams:\n  - {name: "Support Platform", slug: support}\n  - {name: "Ops\\nTeam", slug: ops}\n'
        'workloads:\n  - {name: "Age\\u0085nt", slug: agent, team: support, latency_profile: realtime}\n'
    )

    message = apply_failing(write(tmp_path, text))

    assert "teams[1]" in message and "name" in message and "a line feed (U+000A) at character 4" in message
    assert "workloads[0]" in message and "a control character (U+0085) at character 4" in message
    assert not Team.objects.exists() and not Workload.objects.exists()
    assert "1 created" in apply(write(tmp_path, 'teams:\n  - {name: "Support Platform", slug: support}\n'))


def test_apply_config_refuses_a_cap_name_with_a_carriage_return(tmp_path, support_team):
    text = (
        'caps:\n  - {name: "Support\\rmonthly", scope: {team: support}, amount: "5", recipients: [ops@example.com]}\n'
    )

    message = apply_failing(write(tmp_path, text))

    assert "caps[0]" in message and "name: Contains a carriage return (U+000D) at character 8" in message
    assert not Cap.objects.exists()


def test_the_django_admin_refuses_a_team_name_with_a_line_break(client, db):
    from finops.models import User

    client.force_login(User.objects.create_superuser("root", "root@example.com", "pw-for-tests-only-1"))
    response = client.post(
        reverse("admin:finops_team_add"),
        {
            "name": "Support\nPlatform",
            "slug": "support",
            "cost_center": "",
            "memberships-TOTAL_FORMS": "0",
            "memberships-INITIAL_FORMS": "0",
        },
    )

    assert response.status_code == 200 and "a line feed (U+000A) at character 8" in response.content.decode()
    assert not Team.objects.exists()


@pytest.mark.parametrize(
    ("model", "words"),
    [
        ("gpt-5-mini\x1b[2K", "a control character (U+001B) at character 11"),
        ("gpt-5\x85mini", "a control character (U+0085) at character 6"),
        ("gpt-5\tmini", "a tab (U+0009) at character 6"),
    ],
)
def test_an_imported_row_whose_model_holds_a_control_character_fails_the_import_naming_the_row(
    openai_account, model, words
):
    """(A line break inside a quoted field is refused earlier, by the CSV reader itself.)"""
    csv = (
        "day,model,input_tokens,output_tokens,cost,project\n"
        "2026-11-01,gpt-5-mini,1000,0,1.50,support\n"
        f'2026-11-02,"{model}",1000,0,1.50,support\n'
    )

    run = usage_file_import(account=openai_account, stream=io.BytesIO(csv.encode()), file_name="usage.csv")

    assert run.status == "failed"
    assert run.error.startswith("usage.csv line 3: the model") and words in run.error
    assert not UsageLine.objects.exists()  # a failed run stores nothing, the good row neither


def test_a_focus_export_whose_model_holds_a_control_character_is_declined_by_the_column_reader_and_fails_naming_the_row(
    tmp_path, db
):
    """A FOCUS export is read by columns (ingest/columnar.py): the model check declines the batch, and the row reader
    names the row, so both readers refuse the same file in the same words."""
    from pathlib import Path

    from finops.models import Account, IngestRun, Provider
    from ingest.columnar import write_batches
    from ingest.connectors.base import BatchDeclined
    from ingest.connectors.focus.file import FocusFile
    from ingest.connectors.focus.scope import LeftOut, Scope

    original = (Path(__file__).parent / "fixtures" / "focus_file" / "per_token_api_focus_1_3.csv").read_text()
    path = tmp_path / "solora.csv"
    path.write_text(original.replace('""ModelId"":""solora-saturn-4.8""', '""ModelId"":""solora\\u001bsaturn-4.8""', 1))
    provider = Provider.objects.get_or_create(slug="solora-ai", defaults={"name": "Solora AI"})[0]
    account = Account.objects.create(name="solora", provider=provider, connector="focus_file")

    run = IngestRun.objects.create(account=account, trigger="command", file_name=path.name)
    with path.open("rb") as stream, pytest.raises(BatchDeclined, match="control character"):
        write_batches(
            account=account,
            run=run,
            batches=FocusFile().parse_batches(
                stream, file_name=path.name, scope=Scope.for_account(account), left_out=LeftOut()
            ),
        )

    with path.open("rb") as stream:
        run = usage_file_import(account=account, stream=stream, file_name=path.name)
    assert run.status == "failed" and run.error.startswith("solora.csv line 2")
    assert "a control character (U+001B) at character 7" in run.error
    assert not UsageLine.objects.filter(account=account).exists()
