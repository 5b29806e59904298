"""What fuzzing the API found (issue 16), each pinned as the answer a client relies on: a 400 naming the parameter
(or a documented refusal) where the API once answered 500 or quietly ignored the input."""

import json

import pytest
from django.test import Client

from finops.models import AttributionRule, Contract


@pytest.fixture
def admin_client(client_as, ada):
    return client_as(ada)


def test_a_rule_preview_with_an_id_that_is_not_a_number_is_a_400(admin_client, support_agent):
    answer = admin_client.post(
        "/api/v1/rules/preview", {"id": "null", "workload": support_agent.slug, "priority": 1, "project": "p"}
    )
    assert answer.status_code == 400 and "id" in answer.json()
    answer = admin_client.post(
        "/api/v1/rules/preview",
        json.dumps({"id": 999999, "workload": support_agent.slug, "priority": 1}),
        content_type="application/json",
    )
    assert answer.status_code == 400 and answer.json()["id"] == ["No such rule."]


def test_a_rule_preview_of_an_edit_still_works(admin_client, support_agent):
    rule = AttributionRule.objects.create(workload=support_agent, priority=1, project="p")
    answer = admin_client.post(
        "/api/v1/rules/preview",
        json.dumps({"id": rule.pk, "workload": support_agent.slug, "priority": 1, "project": "q"}),
        content_type="application/json",
    )
    assert answer.status_code == 200, answer.content
    assert set(answer.json()) >= {"days", "lines", "cost", "sources"}


def test_options_on_the_spend_report_in_csv_answers_json(admin_client):
    answer = admin_client.options("/api/v1/spend?format=csv&start=2026-01-01&end=2026-02-01&group_by=team")
    assert answer.status_code == 200 and answer["Content-Type"].startswith("application/json")
    assert answer.json()["name"]


@pytest.mark.parametrize(
    "url",
    [
        "/api/v1/spend?start=9999-12-30&end=9999-12-31&group_by=month",
        "/api/v1/spend?start=0001-01-01&end=2026-01-01&group_by=day",
        "/api/v1/metrics?start=9999-12-30&end=9999-12-31",
        "/api/v1/outcomes?start=1999-12-31&end=2000-01-02",
    ],
)
def test_days_outside_the_reportable_years_are_a_400_naming_the_parameter(admin_client, url):
    answer = admin_client.get(url)
    assert answer.status_code == 400, (url, answer.status_code)
    assert any("Pick days between 2000-01-01 and 2099-12-31" in str(v) for v in answer.json().values()), answer.json()


def test_a_quarter_outside_the_reportable_years_is_a_400(admin_client):
    answer = admin_client.get("/api/v1/scorecard?quarter=9999Q4")
    assert answer.status_code == 400 and "quarter" in answer.json()


def test_a_contract_over_ten_thousand_years_is_refused(admin_client):
    answer = admin_client.post(
        "/api/v1/contracts",
        json.dumps(
            {"name": "Forever", "provider": "openai", "start": "0001-01-01", "end": "9999-12-31", "commitment": "1"}
        ),
        content_type="application/json",
    )
    assert answer.status_code == 400 and set(answer.json()) == {"start", "end"}
    assert not Contract.objects.exists()


def test_an_api_url_matching_no_endpoint_answers_json(admin_client):
    for url in ("/api/v1/runs/abc", "/api/v1/no-such-thing", "/api/v2/me"):
        answer = admin_client.get(url)
        assert answer.status_code == 404 and answer.json() == {"detail": "No such API endpoint."}, url
    assert Client().get("/api/v1/runs/abc").status_code == 404  # anonymous too: nothing to sign in for


@pytest.mark.parametrize("query", ["offset=null", "limit=-5", "limit=0", "offset=1.5", "limit=1&limit=2"])
def test_paging_parameters_that_are_not_whole_numbers_are_a_400(admin_client, query):
    answer = admin_client.get(f"/api/v1/teams?{query}")
    assert answer.status_code == 400, query
    assert set(answer.json()) <= {"limit", "offset"}


def test_a_huge_limit_is_capped_not_refused(admin_client):
    answer = admin_client.get("/api/v1/teams?limit=99999999999999999999")
    assert answer.status_code == 200 and answer.json()["results"] == []


@pytest.mark.parametrize(
    "url",
    [
        "/api/v1/outcomes?workload=",
        "/api/v1/evals?workload=",
        "/api/v1/metrics?start=2026-01-01&end=2026-02-01&workload=",
    ],
)
def test_a_filter_given_empty_is_a_400_not_every_workload(admin_client, url):
    answer = admin_client.get(url)
    assert answer.status_code == 400 and "workload" in answer.json(), url


@pytest.mark.parametrize("url", ["/api/v1/outcomes", "/api/v1/metrics", "/api/v1/evals"])
def test_finance_posting_measurements_is_refused_whatever_the_body(client_as, fiona, url):
    for body in ("{}", "[]", "not json"):
        assert client_as(fiona).post(url, body, content_type="application/json").status_code == 403, (url, body)


def test_deleting_a_rule_answers_the_documented_202(admin_client, support_agent):
    rule = AttributionRule.objects.create(workload=support_agent, priority=1, project="p")
    answer = admin_client.delete(f"/api/v1/rules/{rule.pk}")
    assert answer.status_code == 202 and "reattribution" in answer.json()


NUL, SURROGATE = "a\x00b", "a\ud800b"


@pytest.mark.parametrize("bad", [NUL, SURROGATE])
@pytest.mark.parametrize("field", ["workload", "account", "provider"])
def test_a_rule_naming_its_workload_account_or_provider_with_a_nul_or_a_lone_surrogate_is_a_400(
    admin_client, support_agent, field, bad
):
    body = {"workload": support_agent.slug, "priority": 1, "project": "p", field: bad}
    answer = admin_client.post("/api/v1/rules", json.dumps(body), content_type="application/json")
    assert answer.status_code == 400 and field in answer.json(), answer.content
    assert not AttributionRule.objects.exists()


@pytest.mark.parametrize(
    "url",
    [
        "/api/v1/whatif?workload=a%00b",
        "/api/v1/outcomes?workload=a%00b",
        "/api/v1/scorecard?team=a%00b",
        "/api/v1/spend?start=2026-01-01&end=2026-02-01&group_by=team&team=a%00b",
        "/api/v1/evals?workload=a%00b",
        "/api/v1/metrics?start=2026-01-01&end=2026-02-01&workload=a%00b",
    ],
)
def test_a_nul_in_a_query_parameter_is_a_400(admin_client, url):
    assert admin_client.get(url).status_code == 400, url


@pytest.mark.parametrize(
    "body",
    [
        {"name": "x", "scope": "team", "team": NUL, "amount": "1", "recipients": ["a@example.com"]},
        {"name": "x", "scope": "workload", "workload": NUL, "amount": "1", "recipients": ["a@example.com"]},
        {"name": "x", "scope": "account", "account": NUL, "amount": "1", "recipients": ["a@example.com"]},
        {"name": NUL, "scope": "org", "amount": "1", "recipients": ["a@example.com"]},
    ],
)
def test_a_nul_in_a_cap_is_a_400(admin_client, body):
    answer = admin_client.post("/api/v1/caps", json.dumps(body), content_type="application/json")
    assert answer.status_code == 400, answer.content


@pytest.mark.parametrize("field", ["provider", "name", "accounts"])
def test_a_nul_in_a_contract_is_a_400(admin_client, field):
    body = {
        "name": "c",
        "provider": "openai",
        "start": "2026-01-01",
        "end": "2027-01-01",
        "commitment": "1",
        field: [NUL] if field == "accounts" else NUL,
    }
    answer = admin_client.post("/api/v1/contracts", json.dumps(body), content_type="application/json")
    assert answer.status_code == 400, answer.content


def test_outcome_and_measurement_rows_with_a_nul_are_a_400(admin_client, support_agent):
    rows = {
        "/api/v1/outcomes": [{"workload": NUL, "day": "2026-01-01", "count": 1}],
        "/api/v1/metrics": [
            {
                "workload": NUL,
                "provider": "openai",
                "model": "m",
                "hour": "2026-01-01T00:00:00Z",
                "requests": 1,
                "latency": {"p50": 1},
            }
        ],
        "/api/v1/evals": [
            {
                "workload": NUL,
                "provider": "openai",
                "model": "m",
                "name": "n",
                "score": "1",
                "period_start": "2026-01-01",
            }
        ],
    }
    for url, body in rows.items():
        answer = admin_client.post(url, json.dumps(body), content_type="application/json")
        assert answer.status_code == 400, (url, answer.content)


def test_text_with_a_nul_anywhere_in_a_row_is_a_400(admin_client, support_agent):
    w = support_agent.slug
    rows = {
        "/api/v1/outcomes": [{"workload": w, "day": "2026-01-01", "count": 1, "source": NUL}],
        "/api/v1/metrics": [
            {
                "workload": w,
                "provider": "openai",
                "model": NUL,
                "hour": "2026-01-01T00:00:00Z",
                "requests": 1,
                "latency": {"p50": 1},
            }
        ],
        "/api/v1/evals": [
            {
                "workload": w,
                "provider": "openai",
                "model": "m",
                "name": NUL,
                "score": "1",
                "period_start": "2026-01-01",
            },
            {"workload": w, "provider": NUL, "model": "m", "name": "n", "score": "1", "period_start": "2026-01-01"},
        ],
    }
    for url, body in rows.items():
        answer = admin_client.post(url, json.dumps(body), content_type="application/json")
        assert answer.status_code == 400, (url, answer.content)


def test_an_idempotency_key_with_a_nul_is_a_400(admin_client, support_agent):
    body = {"rows": [{"workload": support_agent.slug, "day": "2026-01-01", "count": 1}], "idempotency_key": NUL}
    answer = admin_client.post("/api/v1/outcomes", json.dumps(body), content_type="application/json")
    assert answer.status_code == 400 and "idempotency key" in str(answer.json()), answer.content


def test_a_lone_surrogate_in_a_rules_tag_key_is_a_400(admin_client, support_agent):
    body = {"workload": support_agent.slug, "priority": 1, "tags": {SURROGATE: "x"}}
    answer = admin_client.post("/api/v1/rules", json.dumps(body), content_type="application/json")
    assert answer.status_code == 400 and "tags" in answer.json(), answer.content
