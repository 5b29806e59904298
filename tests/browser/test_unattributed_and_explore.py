"""Finance opens the unattributed page, follows a group's "Create a rule" link to the pre-filled rule form, and
explores spend by day: one series, drawn offline (the `page` fixture fails any request to another origin)."""

import datetime as dt
import io

import pytest

from finops.models import AttributionRule
from finops.spend.services.attribution import history_reattribute
from ingest.services import usage_file_import
from tests.conftest import PASSWORD

from .conftest import signed_in

pytestmark = pytest.mark.browser


@pytest.fixture
def usage(openai_account, support_agent):
    days = [(dt.datetime.now(dt.UTC) - dt.timedelta(days=n)).date().isoformat() for n in (1, 2, 3)]
    rows = ["day,model,input_tokens,output_tokens,cost,project,api_key,user,tags"]
    for day in days:
        rows += [
            f"{day},gpt-5-mini,1000000,100000,4.00,support,key-support,sue,",
            f"{day},gpt-4o,500000,0,3.00,proj-x,key-x,ana,env=prod",
        ]
    assert (
        usage_file_import(account=openai_account, stream=io.BytesIO("\n".join(rows).encode()), file_name="u.csv").status
        == "succeeded"
    )
    AttributionRule.objects.create(workload=support_agent, priority=1, project="support")
    history_reattribute()


def sign_in_to(page, path: str, username: str) -> None:
    """Through the sign-in form, sent on to the page asked for (`?next=`) rather than the overview."""
    page.goto(f"/accounts/login/?next={path}")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")


def test_an_admin_follows_an_unattributed_group_to_a_pre_filled_rule_and_explores_by_day(page, ada, usage):
    sign_in_to(page, "/unattributed/", "ada")
    page.wait_for_selector("h1:has-text('Unattributed spend')")
    assert "$9.00" in page.inner_text("[data-testid=unattributed-totals]")  # 3 days × $3 of proj-x
    keys = page.inner_text("table[data-table=by_api_key]")
    assert "key-x" in keys and "key-support" not in keys
    page.click("table[data-table=by_api_key] a:has-text('Create a rule')")
    page.wait_for_selector("h1:has-text('New rule')")
    assert page.input_value("input[name=api_key]") == "key-x"
    assert page.input_value("select[name=account]") != ""  # the group's single account, pre-selected

    page.goto("/explore/?group_by=day")
    page.wait_for_selector("[data-figure=chart-explore] .main-svg", timeout=10_000)
    traces = page.eval_on_selector("[data-figure=chart-explore]", "el => el.data.map(t => t.name)")
    assert traces == ["Spend"]
    assert page.locator("[data-figure=chart-explore] .legend .traces").count() <= 1  # never a legend entry per day


def test_finance_reads_the_unattributed_groups_without_a_rule_link_it_could_not_follow(page, fiona, usage):
    signed_in(page, "fiona", "/unattributed/")
    page.wait_for_selector("h1:has-text('Unattributed spend')")
    assert "key-x" in page.inner_text("table[data-table=by_api_key]")
    assert page.locator("a:has-text('Create a rule')").count() == 0  # finance writes no rules (403 on the form)
    assert 'an admin\'s page has a "Create a rule" link' in page.inner_text("main")
