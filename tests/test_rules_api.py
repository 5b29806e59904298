"""The rules API: same shapes as config, same access as the pages, audited, history re-attributed."""

import datetime as dt
import io

import pytest

from finops.models import AttributionRule, AuditEntry, UsageLine
from ingest.services import usage_file_import


@pytest.fixture
def recent_usage(openai_account):
    yesterday = (dt.datetime.now(dt.UTC) - dt.timedelta(days=1)).date().isoformat()
    csv = f"day,model,input_tokens,output_tokens,cost,project\n{yesterday},gpt-5-mini,1000,100,3,proj_support\n"
    assert (
        usage_file_import(account=openai_account, stream=io.BytesIO(csv.encode()), file_name="u.csv").status
        == "succeeded"
    )


def test_an_admin_creates_updates_and_deletes_rules(
    client_as, ada, recent_usage, support_agent, search_ranker, django_capture_on_commit_callbacks
):
    client = client_as(ada)
    with django_capture_on_commit_callbacks(execute=True):
        created = client.post(
            "/api/v1/rules",
            {"workload": "support-agent", "priority": 10, "project": "proj_support", "tags": {}},
            content_type="application/json",
        )
    assert created.status_code == 201, created.content
    body = created.json()
    assert body["workload"] == "support-agent" and body["reattribution"]["status"] in {"queued", "succeeded"}
    assert UsageLine.objects.get().workload == support_agent
    with django_capture_on_commit_callbacks(execute=True):
        patched = client.patch(
            f"/api/v1/rules/{body['id']}", {"workload": "search-ranker"}, content_type="application/json"
        )
    assert patched.status_code == 200 and UsageLine.objects.get().workload == search_ranker
    with django_capture_on_commit_callbacks(execute=True):
        assert client.delete(f"/api/v1/rules/{body['id']}").status_code == 202
    assert UsageLine.objects.get().workload is None
    assert list(AuditEntry.objects.filter(entity_type="rule").order_by("id").values_list("action", "source")) == [
        ("created", "api"),
        ("updated", "api"),
        ("deleted", "api"),
    ]


def test_preview_through_the_api_saves_nothing(client_as, ada, recent_usage, support_agent):
    response = client_as(ada).post(
        "/api/v1/rules/preview",
        {"workload": "support-agent", "priority": 1, "model": "gpt-5*"},
        content_type="application/json",
    )
    assert response.status_code == 200
    assert response.json()["lines"] == 1 and response.json()["cost"] == "3.000000"  # a decimal string, never a float
    assert response.json()["sources"] == [{"source": "unattributed", "lines": 1, "tokens": 1100, "cost": "3.000000"}]
    assert not AttributionRule.objects.exists()


def test_a_preview_claiming_only_unpriced_lines_has_an_unknown_cost_not_zero(
    client_as, ada, openai_account, support_agent
):
    yesterday = (dt.datetime.now(dt.UTC) - dt.timedelta(days=1)).date().isoformat()
    csv = f"day,model,input_tokens,output_tokens\n{yesterday},acme-internal-ft,1000,100\n"
    assert (
        usage_file_import(account=openai_account, stream=io.BytesIO(csv.encode()), file_name="u.csv").status
        == "succeeded"
    )
    response = client_as(ada).post(
        "/api/v1/rules/preview",
        {"workload": "support-agent", "priority": 1, "model": "acme-*"},
        content_type="application/json",
    )
    assert response.status_code == 200
    assert response.json()["lines"] == 1 and response.json()["cost"] is None
    assert response.json()["sources"] == [{"source": "unattributed", "lines": 1, "tokens": 1100, "cost": None}]


def test_a_preview_claiming_nothing_costs_zero(client_as, ada, support_agent):
    response = client_as(ada).post(
        "/api/v1/rules/preview",
        {"workload": "support-agent", "priority": 1, "model": "nothing-*"},
        content_type="application/json",
    )
    assert response.json() == {"days": 30, "lines": 0, "cost": "0.000000", "sources": []}


def test_rules_api_access_follows_the_pages(client_as, fiona, sam, support_agent):
    rule = AttributionRule.objects.create(workload=support_agent, priority=1)
    assert client_as(fiona).get("/api/v1/rules").json()["results"][0]["id"] == rule.id
    assert client_as(fiona).delete(f"/api/v1/rules/{rule.id}").status_code == 403
    assert (
        client_as(fiona)
        .post("/api/v1/rules", {"workload": "support-agent", "priority": 2}, content_type="application/json")
        .status_code
        == 403
    )
    assert client_as(sam).get("/api/v1/rules").status_code == 404
    assert client_as(sam).get(f"/api/v1/rules/{rule.id}").status_code == 404


def test_an_invalid_rule_is_refused_with_field_errors(client_as, ada, support_agent):
    response = client_as(ada).post(
        "/api/v1/rules", {"workload": "nope", "priority": -1, "tags": {"a__b": "x"}}, content_type="application/json"
    )
    assert response.status_code == 400
    assert set(response.json()) == {"workload", "priority", "tags"}
