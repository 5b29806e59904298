"""Shared charges (issue 24): a provider's tax, fees and credits are billed on an account, not on a team, and no
rule could claim them; they are allocated to the teams pro rata to their usage on that account in the period,
shown as their own line on every team's page, a column of the teams list and a table of the monthly report, each
adding up to the charges to the cent.

Real FOCUS imports: March 2026 on one Bedrock account, usage tagged to support ($70.00) and search ($30.00), an
untagged $0.00-free remainder, $10.01 of sales tax and a $3.00 credit billed on the account."""

import csv
import datetime as dt
import io
import re
from decimal import Decimal
from pathlib import Path

import pytest

from finops.models import Account, AttributionRule, IngestRun, Provider
from finops.reports.selectors.tco_report import tco_report
from finops.spend.selectors.shared_charges import METHOD, shared_charges
from ingest.services import usage_file_import

FIXTURES = Path(__file__).parent / "fixtures"
MARCH, APRIL = dt.date(2026, 3, 1), dt.date(2026, 4, 1)


def _focus(rows: list[tuple[str, str, str, str]]) -> bytes:
    """A FOCUS 1.0 export from the fixture's usage and tax rows: (category, day, cost, team tag)."""
    with open(FIXTURES / "focus_file" / "aws_bedrock_focus_1_0.csv", newline="") as stream:
        template = list(csv.DictReader(stream))
    usage = next(r for r in template if r["ChargeCategory"] == "Usage")
    tax = next(r for r in template if r["ChargeCategory"] == "Tax")
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(template[0]))
    writer.writeheader()
    for category, day, cost, team in rows:
        row = dict(usage if category == "Usage" else tax)
        row.update(
            ChargeCategory=category, BilledCost=cost, EffectiveCost=cost, ListCost=cost if category == "Usage" else ""
        )
        if category == "Usage":
            start = dt.date.fromisoformat(day)
            row["ChargePeriodStart"] = f"{start}T00:00:00Z"
            row["ChargePeriodEnd"] = f"{start + dt.timedelta(days=1)}T00:00:00Z"
            row["Tags"] = f'{{"user_team":"{team}"}}' if team else "{}"
            row["ListCost"] = ""  # billed: the provider's amount is the cost
        else:
            row["ChargeDescription"] = "AWS Activate credit" if category == "Credit" else "Tax for Amazon Bedrock"
        writer.writerow(row)
    return out.getvalue().encode()


@pytest.fixture
def march(db, support_agent, search_ranker):
    account = Account.objects.create(
        name="bedrock", provider=Provider.objects.get(slug="aws-bedrock"), connector="focus_file"
    )
    AttributionRule.objects.create(workload=support_agent, priority=1, tags={"user_team": "support"})
    AttributionRule.objects.create(workload=search_ranker, priority=2, tags={"user_team": "search"})
    rows = [
        ("Usage", "2026-03-10", "40.00", "support"),
        ("Usage", "2026-03-11", "30.00", "support"),
        ("Usage", "2026-03-10", "30.00", "search"),
        ("Usage", "2026-03-12", "20.00", ""),  # no rule claims it: unattributed usage
        ("Tax", "", "10.01", ""),
        ("Credit", "", "-3.00", ""),
    ]
    run = usage_file_import(account=account, stream=io.BytesIO(_focus(rows)), file_name="march.csv")
    assert run.status == IngestRun.Status.SUCCEEDED, run.error
    return account


def test_each_accounts_charges_go_to_the_teams_pro_rata_to_their_usage_and_add_up_to_the_cent(march):
    allocation = shared_charges(MARCH, APRIL)
    shares = {row.label: row for row in allocation.rows}
    assert allocation.charges == Decimal("7.01")  # $10.01 tax − $3.00 credit
    # $120 of usage: support 70/120, search 30/120, unattributed 20/120 of $7.01 = 4.0891…, 1.7525, 1.1683…
    assert {label: row.allocated for label, row in shares.items()} == {
        "Support Platform": Decimal("4.09"),
        "Search": Decimal("1.75"),
        "Unattributed": Decimal("1.17"),
    }
    assert sum(row.allocated for row in allocation.rows) == allocation.charges  # rounded once, adds up
    assert shares["Support Platform"].usage == Decimal("70.00")
    assert shares["Support Platform"].by_category == {"Credit": Decimal("-1.75"), "Tax": Decimal("5.84")}
    for category, charged in (("Tax", Decimal("10.01")), ("Credit", Decimal("-3.00"))):
        assert sum(row.by_category[category] for row in allocation.rows) == charged
    assert list(shares)[-1] == "Unattributed"
    assert shared_charges(APRIL, dt.date(2026, 5, 1)).rows == []  # no charges, nothing allocated


def test_a_team_page_shows_its_share_as_its_own_line_with_the_method(client_as, sam, tess, march):
    page = client_as(sam).get("/teams/support/", {"period": "2026-03"}).content.decode()
    section = page[page.index('data-testid="team-shared-charges"') :]
    assert re.search(r'data-testid="team-shared-amount">\$4\.09<', section)
    assert "tax $5.84" in section and "credit -$1.75" in section and "$70.00 of usage" in section
    assert METHOD.split(";")[0] in section
    other = client_as(tess).get("/teams/search/", {"period": "2026-03"}).content.decode()
    assert 'data-testid="team-shared-amount">$1.75<' in other


def test_the_teams_list_has_a_shared_charges_column_that_adds_up_to_the_charges(client_as, fiona, march):
    response = client_as(fiona).get("/teams/", {"period": "2026-03", "csv": "teams"})
    rows = {row["Team"]: row["Shared charges"] for row in csv.DictReader(io.StringIO(response.content.decode()))}
    assert rows == {"Search": "1.75", "Support Platform": "4.09", "Unattributed": "1.17", "Total": "7.01"}


def test_the_monthly_report_allocates_them_in_a_table_whose_totals_are_its_rows(client_as, fiona, march):
    report = tco_report(fiona, MARCH, today=dt.date(2026, 4, 20))
    rows = {row["label"]: row for row in report.rows("shared_charges")}
    assert {label: row["allocated"] for label, row in rows.items()} == {
        "Support Platform": Decimal("4.09"),
        "Search": Decimal("1.75"),
        "Unattributed": Decimal("1.17"),
    }
    assert rows["Search"]["tax"] == Decimal("2.50") and rows["Search"]["credit"] == Decimal("-0.75")
    page = client_as(fiona).get("/reports/2026-03/").content.decode()
    table = page[page.index('data-table="shared_charges"') :]
    table = table[: table.index("</table>")]
    assert "$7.01" in table and "$10.01" in table and "-$3.00" in table  # the totals row: tax, credit, allocated


def test_the_unattributed_page_says_its_shared_charges_are_allocated_not_waiting_for_a_rule(client_as, fiona, march):
    page = client_as(fiona).get("/unattributed/", {"period": "2026-03"}).content.decode()
    note = page[page.index('data-testid="unattributed-shared-charges"') :]
    assert "<strong>$7.01</strong> is tax, fees and credits" in note and "no rule can claim it" in note


def test_a_version_published_before_the_report_had_this_table_is_not_restated_by_it(march, fiona):
    from finops.reports.restatement import diff
    from finops.reports.selectors.tco_report import TcoReport

    live = tco_report(fiona, MARCH, today=dt.date(2026, 4, 20))
    published = TcoReport.from_json(live.as_json())
    del published.tables["shared_charges"]  # as a version stored before the table existed
    assert published.rows("shared_charges") == [] and live.rows("shared_charges")
    assert diff(published, live) == []


def test_the_overview_and_explore_draw_tax_and_credits_the_same_way(client_as, fiona, march):
    """Both draw the shared charges as their own series beside the providers, never folded into AWS Bedrock's."""

    def series(context) -> dict[str, Decimal]:
        return {
            trace["name"]: sum((Decimal(str(y)) for y in trace["y"] if y is not None), Decimal(0))
            for trace in context["chart"]["data"]
        }

    client = client_as(fiona)
    overview = series(client.get("/", {"period": "2026-03"}).context)
    explore = series(
        client.get("/explore/", {"group_by": "provider", "start": "2026-03-01", "end": "2026-04-01"}).context
    )
    for charts in (overview, explore):
        assert charts["Tax"] == Decimal("10.01") and charts["Credits"] == Decimal("-3.00")
    assert overview["Tax"] == explore["Tax"] and overview["Credits"] == explore["Credits"]
    bedrock = [name for name in explore if "Bedrock" in name]
    assert bedrock and explore[bedrock[0]] == Decimal("120.00")  # usage only: the tax is not folded in
    assert {name for name in overview if "Bedrock" in name} in ({bedrock[0]}, set())
