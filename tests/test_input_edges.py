"""Input edges that once answered 500 answer 400 (or a clear message) instead (issue 16)."""

import io

import pytest
from django.core.management import CommandError, call_command
from knox.models import AuthToken

from finops.models import AttributionRule


@pytest.mark.parametrize(
    "query",
    [
        {"start": "9999-01-01", "end": "9999-12-31"},
        {"start": "1000-01-01", "end": "1000-02-01"},
    ],
)
def test_explore_with_days_far_out_says_which_days_it_reads(client_as, fiona, query):
    page = client_as(fiona).get("/explore/", query)
    assert page.status_code == 200 and "Pick days between 2000-01-01 and 2099-12-31." in page.content.decode()
    csv = client_as(fiona).get("/explore/", {**query, "csv": "1"})
    assert csv.status_code == 400 and b"Pick days between 2000-01-01 and 2099-12-31." in csv.content


@pytest.mark.parametrize(
    "query",
    [{"period": "9999-12"}, {"period": "9999-Q4"}, {"period": "custom", "start": "9999-12-01", "end": "9999-12-31"}],
)
def test_a_page_asked_for_a_period_far_out_falls_back_and_says_why(client_as, fiona, query):
    page = client_as(fiona).get("/", query)
    assert page.status_code == 200 and "Pick days between 2000-01-01 and 2099-12-31." in page.context["period_error"]
    assert page.context["period"].key == "last-30"


def test_list_endpoints_cap_the_page_size_and_survive_a_huge_offset(client_as, ada, support_agent):
    for n in range(3):
        AttributionRule.objects.create(workload=support_agent, priority=n + 1, project=f"p{n}")
    page = client_as(ada).get("/api/v1/rules", {"limit": "99999999999999999999"})
    assert page.status_code == 200 and len(page.json()["results"]) == 3
    far = client_as(ada).get("/api/v1/rules", {"limit": "10", "offset": "99999999999999999999"})
    assert far.status_code == 200 and far.json()["results"] == []


def test_a_nul_character_in_a_rules_tag_key_is_refused_not_a_database_error(client_as, ada, support_agent):
    answer = client_as(ada).post(
        "/api/v1/rules",
        {"workload": support_agent.slug, "priority": 1, "tags": {"a\x00b": "c"}},
        content_type="application/json",
    )
    assert answer.status_code == 400 and "NUL" in answer.content.decode()
    assert not AttributionRule.objects.exists()


def test_the_rule_form_refuses_it_too(client_as, ada, support_agent):
    page = client_as(ada).post("/rules/new/", {"workload": support_agent.pk, "priority": 1, "tags_text": "a\x00b=c"})
    assert page.status_code == 200 and "Null characters are not allowed." in page.content.decode()
    assert not AttributionRule.objects.exists()


@pytest.mark.parametrize("days", ["-1", "0", "99999999"])
def test_create_api_token_refuses_days_out_of_range(ada, days):
    with pytest.raises(CommandError, match="--days must be between 1 and 3650"):
        call_command("create_api_token", "ada", "--days", days, stdout=io.StringIO(), stderr=io.StringIO())
    assert not AuthToken.objects.exists()


def test_create_api_token_with_days_in_range_expires_then(ada):
    call_command("create_api_token", "ada", "--days", "7", stdout=io.StringIO(), stderr=io.StringIO())
    token = AuthToken.objects.get()
    assert 6 * 86400 < (token.expiry - token.created).total_seconds() <= 7 * 86400
