"""What the API answers at the edges of access (issue 16; docs/access.md): anonymous callers 401 everywhere, members
404 on what spans teams (accounts, runs, rules, contracts: not even confirmed to exist), readers 403 on writes."""

import pytest
from django.test import Client

from finops.models import AttributionRule, IngestRun

SPANNING = ["/api/v1/accounts", "/api/v1/rules", "/api/v1/contracts", "/api/v1/contracts/renewals"]


@pytest.fixture
def objects(openai_account, support_agent):
    run = IngestRun.objects.create(account=openai_account, trigger="upload", file_name="u.csv")
    rule = AttributionRule.objects.create(workload=support_agent, priority=1, project="p")
    return [
        f"/api/v1/accounts/{openai_account.pk}",
        f"/api/v1/accounts/{openai_account.pk}/runs",
        f"/api/v1/runs/{run.pk}",
        f"/api/v1/rules/{rule.pk}",
    ]


def test_anonymous_callers_are_asked_to_sign_in_not_told_a_page_is_missing(objects):
    for url in SPANNING + objects:
        answer = Client().get(url)
        assert answer.status_code == 401, url
        assert answer["WWW-Authenticate"].startswith("Token"), url


def test_members_get_404_on_what_spans_teams(client_as, sam, objects):
    for url in SPANNING + objects:
        assert client_as(sam).get(url).status_code == 404, url


def test_finance_reads_them_and_may_not_change_them(client_as, fiona, objects):
    for url in SPANNING + objects:
        assert client_as(fiona).get(url).status_code == 200, url
    rule_url = objects[-1]
    assert client_as(fiona).delete(rule_url).status_code == 403
    assert AttributionRule.objects.exists()
