"""Money in the API is a decimal string (or null when unknown), never a float (docs/architecture.md invariant 1).

Every route of finops/api/urls.py is called with data behind it (billed, estimated and unpriced usage, a rule, a
re-attribution) and every value of every response is walked: a float anywhere fails, and so does a money field
that is not a decimal string or null. A route added without being called here fails the test too.
"""

import datetime as dt
import io
import re
from decimal import Decimal

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import URLPattern

from finops.alerts.services.caps import cap_create
from finops.api import urls as api_urls
from finops.contracts.services import contract_create
from finops.models import Account, AttributionRule, OutcomeCount, Provider, ReattributionJob
from finops.spend.selectors.spend_report import GROUPS
from ingest.services import usage_file_import

DECIMAL_TEXT = re.compile(r"^-?\d+\.\d{6}$")
MONEY_KEY = re.compile(r"(^|_)(cost|costs|amount|price|spend)$|per_mtok$")


@pytest.fixture
def media_in_tmp(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path


@pytest.fixture
def recent_spend(openai_account, support_agent):
    """Yesterday: a billed line Support's rule claims, an estimated one and an unpriced one nobody claims."""
    yesterday = (dt.datetime.now(dt.UTC) - dt.timedelta(days=1)).date().isoformat()
    AttributionRule.objects.create(workload=support_agent, priority=1, project="proj_support")
    text = (
        "day,model,input_tokens,output_tokens,cost,project\n"
        f"{yesterday},gpt-5-mini,1000,100,3.1234567,proj_support\n"
        f"{yesterday},gpt-5,2000,200,,proj_misc\n"
        f"{yesterday},my-private-model,3000,300,,proj_misc\n"
    )
    run = usage_file_import(account=openai_account, stream=io.BytesIO(text.encode()), file_name="u.csv")
    assert run.status == "succeeded", run.error
    return run


def walk(value, path="$"):
    """(path, key, value) of every scalar in a JSON document."""
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, (dict, list)):
                yield from walk(item, f"{path}.{key}")
            else:
                yield f"{path}.{key}", key, item
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from walk(item, f"{path}[{i}]")
    else:
        yield path, None, value


def money_problems(document) -> list[str]:
    problems = []
    for path, key, value in walk(document):
        if isinstance(value, float):
            problems.append(f"{path} is a float: {value!r}")
        elif (
            key
            and MONEY_KEY.search(key)
            and not (value is None or (isinstance(value, str) and DECIMAL_TEXT.match(value)))
        ):
            problems.append(f"{path} is not a decimal string or null: {value!r}")
    return problems


def test_the_walk_catches_a_float_and_a_money_field_as_a_number():
    assert money_problems({"rows": [{"cost": 1.5}]}) == ["$.rows[0].cost is a float: 1.5"]
    assert money_problems([{"billed_cost": 2}]) == ["$[0].billed_cost is not a decimal string or null: 2"]
    assert money_problems({"cost": "1.500000", "usd_per_mtok": None, "lines": 3}) == []


def test_every_api_response_carries_money_as_decimal_strings(
    client_as, ada, recent_spend, openai_account, support_agent, media_in_tmp
):
    client = client_as(ada)
    rule = AttributionRule.objects.get()
    job = ReattributionJob.objects.create(requested_by=ada, reason="test")
    api_account = Account.objects.create(
        name="openai-admin", provider=Provider.objects.get(slug="openai"), connector="openai_api"
    )
    today = dt.datetime.now(dt.UTC).date()
    cap = cap_create(by=ada, name="Everything", scope="org", amount="1000", recipients=["role:admins"])
    contract = contract_create(
        by=ada,
        name="OpenAI",
        provider="openai",
        accounts=["openai-prod"],
        start=today.replace(day=1),
        end=today.replace(day=1) + dt.timedelta(days=400),
        commitment="1000.5",
        commitment_basis="monthly",
        auto_renew=True,
        notice_days=300,
    )
    month = {"start": (today - dt.timedelta(days=40)).isoformat(), "end": (today + dt.timedelta(days=1)).isoformat()}
    json_body = {"content_type": "application/json"}
    OutcomeCount.objects.create(workload=support_agent, day=today - dt.timedelta(days=1), count=7)
    calls = {
        "api-me": [lambda: client.get("/api/v1/me")],
        "api-spend": [lambda by=by: client.get("/api/v1/spend", {**month, "group_by": by}) for by in GROUPS],
        "api-provider-list": [lambda: client.get("/api/v1/providers")],
        "api-team-list": [lambda: client.get("/api/v1/teams")],
        "api-team-detail": [lambda: client.get("/api/v1/teams/support")],
        "api-workload-list": [lambda: client.get("/api/v1/workloads")],
        "api-workload-detail": [lambda: client.get("/api/v1/workloads/support-agent")],
        "api-workload-cost-per-outcome": [
            lambda by=by: client.get("/api/v1/workloads/support-agent/cost-per-outcome", {**month, "by": by})
            for by in ("day", "month", "period")
        ],
        "api-account-list": [lambda: client.get("/api/v1/accounts")],
        "api-account-detail": [lambda: client.get(f"/api/v1/accounts/{openai_account.pk}")],
        "api-account-runs": [lambda: client.get(f"/api/v1/accounts/{openai_account.pk}/runs")],
        "api-account-imports": [
            lambda: client.post(
                f"/api/v1/accounts/{openai_account.pk}/imports",
                {"file": SimpleUploadedFile("u.csv", b"day,model,input_tokens,output_tokens\n")},
            )
        ],
        "api-account-syncs": [
            lambda: client.post(
                f"/api/v1/accounts/{api_account.pk}/syncs", {"start": month["start"], "end": month["end"]}, **json_body
            )
        ],
        "api-run-detail": [lambda: client.get(f"/api/v1/runs/{recent_spend.pk}")],
        "api-rule-list": [lambda: client.get("/api/v1/rules")],
        "api-rule-preview": [
            lambda: client.post(
                "/api/v1/rules/preview", {"workload": "support-agent", "priority": 5, "model": "gpt-5*"}, **json_body
            ),
            lambda: client.post(
                "/api/v1/rules/preview",
                {"workload": "support-agent", "priority": 5, "model": "my-private-*"},
                **json_body,
            ),
        ],
        "api-rule-detail": [lambda: client.get(f"/api/v1/rules/{rule.pk}")],
        "api-outcome-list": [
            lambda: client.post(
                "/api/v1/outcomes", [{"workload": "support-agent", "day": today.isoformat(), "count": 3}], **json_body
            ),
            lambda: client.get("/api/v1/outcomes"),
        ],
        "api-metric-list": [
            lambda: client.post(
                "/api/v1/metrics",
                [
                    {
                        "workload": "support-agent",
                        "provider": "anthropic",
                        "model": "claude-sonnet-4-5",
                        "hour": f"{today.isoformat()}T00:00:00Z",
                        "requests": 10,
                        "errors": 1,
                        "latency": {"histogram": [[500, 9], [2000, 1]]},
                        "output_tokens": 400,
                        "generation_seconds": 2,
                    }
                ],
                **json_body,
            ),
            lambda: client.get(
                "/api/v1/metrics", {"start": today.isoformat(), "end": (today + dt.timedelta(days=1)).isoformat()}
            ),
        ],
        "api-eval-list": [
            lambda: client.post(
                "/api/v1/evals",
                [
                    {
                        "workload": "support-agent",
                        "provider": "anthropic",
                        "model": "claude-sonnet-4-5",
                        "name": "accuracy",
                        "score": "0.93",
                        "period_start": today.isoformat(),
                    }
                ],
                **json_body,
            ),
            lambda: client.get("/api/v1/evals"),
        ],
        "api-reattribution": [lambda: client.get(f"/api/v1/reattributions/{job.pk}")],
        "api-cap-list": [
            lambda: client.post(
                "/api/v1/caps",
                {
                    "name": "Support",
                    "scope": "team",
                    "target": "support",
                    "amount": "2.5",
                    "recipients": ["role:team_leads"],
                },
                **json_body,
            ),
            lambda: client.get("/api/v1/caps"),
        ],
        "api-cap-detail": [lambda: client.get(f"/api/v1/caps/{cap.pk}")],
        "api-channel-list": [
            lambda: client.post(
                "/api/v1/channels", {"name": "Ops", "kind": "email", "addresses": ["ops@example.com"]}, **json_body
            ),
            lambda: client.get("/api/v1/channels"),
        ],
        "api-channel-detail": [lambda: client.get(f"/api/v1/channels/{cap.own_channels.first().pk}")],
        "api-contract-list": [
            lambda: client.post(
                "/api/v1/contracts",
                {"name": "Groq", "provider": "groq", "start": "2026-01-01", "end": "2027-01-01", "commitment": "99.5"},
                **json_body,
            ),
            lambda: client.get("/api/v1/contracts"),
        ],
        "api-contract-renewals": [lambda: client.get("/api/v1/contracts/renewals", {"within_days": 3660})],
        "api-contract-detail": [
            lambda: client.get(f"/api/v1/contracts/{contract.pk}"),
            lambda: client.patch(f"/api/v1/contracts/{contract.pk}", {"prepaid": "10"}, **json_body),
        ],
        "api-contract-renew": [
            lambda: client.post(
                f"/api/v1/contracts/{contract.pk}/renew",
                {"start": contract.end.isoformat(), "end": "2030-01-01"},
                **json_body,
            )
        ],
        "api-contract-focus": [lambda: client.get("/api/v1/contracts/focus.csv")],
        "api-focus": [lambda: client.get("/api/v1/focus", {"month": today.strftime("%Y-%m")})],
        "api-scorecard": [lambda: client.get("/api/v1/scorecard")],
        "api-whatif": [
            lambda: client.get(
                "/api/v1/whatif",
                {"requests": 220000, "input_tokens": 880_000_000, "output_tokens": 330_000_000, "sla_seconds": 3},
            )
        ],
    }
    routes = {p.name for p in api_urls.urlpatterns if isinstance(p, URLPattern)}
    assert set(calls) == routes, "call every API route here"
    for name, requests in calls.items():
        for request in requests:
            response = request()
            assert response.status_code in (200, 201, 202), (name, response.status_code, response.content[:300])
            if response["Content-Type"].startswith("text/csv"):  # a file: plain decimals, checked by its own tests
                continue
            assert money_problems(response.json()) == [], name

    # The walk saw real money: exact to the micro-unit, and null where no price is known.
    preview = client.post(
        "/api/v1/rules/preview", {"workload": "support-agent", "priority": 5, "model": "gpt-5*"}, **json_body
    ).json()
    assert preview["cost"] == "0.004500" and all(isinstance(s["cost"], str) for s in preview["sources"])
    spend = client.get("/api/v1/spend", {**month, "group_by": "model"}).json()
    assert {r["group"]: r["cost"] for r in spend}["my-private-model"] is None
    assert Decimal({r["group"]: r["cost"] for r in spend}["gpt-5-mini"]) == Decimal("3.123457")
    per_outcome = client.get("/api/v1/workloads/support-agent/cost-per-outcome", month).json()["points"][0]
    # 7 outcomes stored yesterday and 3 posted by the walk today: $3.123457 / 10, sum over sum.
    assert (per_outcome["cost"], per_outcome["outcomes"], per_outcome["cost_per_outcome"]) == (
        "3.123457",
        10,
        "0.312346",
    )
    caps = {c["name"]: c for c in client.get("/api/v1/caps").json()}
    assert caps["Everything"]["amount"] == "1000.000000" and caps["Support"]["amount"] == "2.500000"
    assert all(isinstance(c["spent"], str) and isinstance(c["percent"], str) for c in caps.values())
    contracts = {c["name"]: c for c in client.get("/api/v1/contracts").json()}
    assert contracts["Groq"]["commitment"] == "99.500000" and contracts["OpenAI"]["prepaid"] == "0.000000"
    (old,) = contracts["OpenAI"]["past_terms"]  # the patched term, archived by the renewal
    assert (old["commitment"], old["prepaid"]) == ("1000.500000", "10.000000")
    assert all(
        isinstance(c[key], str)
        for c in contracts.values()
        for key in ("consumed", "expected_to_date", "projected", "shortfall", "overage")
    )
