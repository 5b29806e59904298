"""A team lead signs in, sees their team's charts and tables, filters and downloads, and nothing of other teams."""

import datetime as dt
import io

import pytest

from finops.models import AttributionRule
from finops.spend.services.attribution import history_reattribute
from ingest.services import usage_file_import

from .conftest import signed_in

pytestmark = pytest.mark.browser


@pytest.fixture
def two_teams_of_usage(openai_account, support_agent, search_ranker):
    days = [(dt.datetime.now(dt.UTC) - dt.timedelta(days=n)).date().isoformat() for n in (1, 2, 3)]
    rows = ["day,model,input_tokens,output_tokens,cost,project"]
    for day in days:
        rows += [
            f"{day},gpt-5-mini,1000000,100000,4.00,support",
            f"{day},gpt-5,1000000,100000,9.00,support",
            f"{day},gpt-5,2000000,100000,30.00,search",
        ]
    assert (
        usage_file_import(account=openai_account, stream=io.BytesIO("\n".join(rows).encode()), file_name="u.csv").status
        == "succeeded"
    )
    AttributionRule.objects.create(workload=support_agent, priority=1, project="support")
    AttributionRule.objects.create(workload=search_ranker, priority=2, project="search")
    history_reattribute()


def test_a_team_lead_sees_their_charts_filters_a_table_and_downloads_it(page, sam, two_teams_of_usage, tmp_path):
    signed_in(page, "sam", "/")
    page.wait_for_selector(".chart .main-svg", timeout=10_000)  # the overview's chart rendered
    overview = page.inner_text("main")
    assert "$39.00" in overview and "Search ranker" not in overview  # 3 days × $13 of Support only

    page.click("text=Support agent")
    page.wait_for_selector("h1:has-text('Support agent')")
    page.wait_for_selector("[data-figure=chart-workload] .main-svg", timeout=10_000)
    assert "Realtime" in page.inner_text(".facts") and "4 s" in page.inner_text(".facts")

    page.goto("/explore/?group_by=model&model=gpt-5-mini")
    table = page.inner_text("table.data")
    assert "GPT-5 mini" in table and "$12.00" in table and "GPT-5\t" not in table
    with page.expect_download() as caught:
        page.click("a.csv")
    path = tmp_path / "explore.csv"
    caught.value.save_as(path)
    lines = path.read_text().splitlines()
    assert lines[0].startswith("Model,Model id,Spend") and lines[1].startswith("GPT-5 mini,gpt-5-mini,12.")

    response = page.goto("/workloads/search-ranker/")
    assert response.status == 404
    assert page.goto("/teams/search/").status == 404
