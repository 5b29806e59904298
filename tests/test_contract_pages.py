"""Contract pages (issue 11): who sees them, the list (auto-renewals ahead first, the timeline, every contract with
its status, CSV), a contract's page (burn-down, figures in words, periods, past terms) and the admin's form.

The clock is frozen on 2026-11-20; the OpenAI account spends $100 a day from 2026-08-01 to that day (a run rate of
$100 a day).
"""

import csv
import datetime as dt
import io
import json
from decimal import Decimal

import pytest
import time_machine
from django.urls import reverse

from finops.contracts.selectors import contract_status
from finops.models import Contract, ContractTerm, Provider
from finops.reports import contract_charts
from ingest.services import usage_file_import

NOW = dt.datetime(2026, 11, 20, 15, 0, tzinfo=dt.UTC)
TODAY = NOW.date()
DAY = dt.timedelta(days=1)


@pytest.fixture(autouse=True)
def frozen():
    with time_machine.travel(NOW, tick=False):
        yield


@pytest.fixture
def spend(openai_account):
    day, lines = dt.date(2026, 8, 1), ["day,model,input_tokens,output_tokens,cost,project"]
    while day <= TODAY:
        lines.append(f"{day.isoformat()},gpt-5-mini,1000,100,100.00,proj")
        day += DAY
    run = usage_file_import(account=openai_account, stream=io.BytesIO("\n".join(lines).encode()), file_name="usage.csv")
    assert run.status == "succeeded", run.error


def contract(name, *, start, end, commitment, **values) -> Contract:
    fields = {
        "provider": Provider.objects.get(slug="openai"),
        "start": start,
        "end": end,
        "commitment": Decimal(commitment),
        **values,
    }
    return Contract.objects.create(name=name, **fields)


@pytest.fixture
def contracts(spend):
    """Four contracts on the OpenAI spend: two auto-renewals whose notice deadline is 90 and 20 days away (created in
    that order), one whose deadline is more than six months away, and a fixed term that is not renewing."""
    later = contract(
        "Renews later",
        start=dt.date(2026, 10, 1),
        end=TODAY + 150 * DAY,
        commitment=1_000,
        auto_renew=True,
        notice_days=60,
    )
    soon = contract(
        "Renews soon",
        start=dt.date(2026, 10, 1),
        end=TODAY + 80 * DAY,
        commitment=50_000,
        auto_renew=True,
        notice_days=60,
    )
    far = contract(
        "Renews next year",
        start=dt.date(2026, 10, 1),
        end=TODAY + 400 * DAY,
        commitment=1,
        auto_renew=True,
        notice_days=30,
    )
    fixed = contract("Fixed term", start=dt.date(2026, 10, 1), end=TODAY + 80 * DAY, commitment=0, notice_days=30)
    on_track = contract_status(fixed, today=TODAY).projected  # a commitment equal to its projection
    fixed.commitment = on_track
    fixed.save()
    return {"later": later, "soon": soon, "far": far, "fixed": fixed}


def section(html: str, start_marker: str, end_marker: str) -> str:
    return html.split(start_marker, 1)[1].split(end_marker, 1)[0]


# --- who sees what ---


def test_contracts_are_in_the_navigation_of_admins_and_finance_after_caps_and_not_of_members(
    client_as, ada, fiona, sam
):
    for user in (ada, fiona):
        html = client_as(user).get(reverse("overview")).content.decode()
        assert html.index(">Caps<") < html.index(">Contracts<")
    assert ">Contracts<" not in client_as(sam).get(reverse("overview")).content.decode()


def test_a_member_gets_404_on_every_contract_page(client_as, sam, contracts):
    client, pk = client_as(sam), contracts["soon"].pk
    for url in (
        reverse("contract-list"),
        reverse("contract-list") + "?csv=contracts",
        reverse("contract-detail", args=[pk]),
        reverse("contract-create"),
        reverse("contract-edit", args=[pk]),
    ):
        assert client.get(url).status_code == 404, url
    assert client.post(reverse("contract-create"), {"name": "x"}).status_code == 404
    assert client.post(reverse("contract-edit", args=[pk]), {"name": "x"}).status_code == 404


def test_finance_reads_contracts_without_any_button_to_change_them_and_cannot_post(client_as, fiona, contracts):
    client, soon = client_as(fiona), contracts["soon"]
    listing = client.get(reverse("contract-list")).content.decode()
    page = client.get(reverse("contract-detail", args=[soon.pk])).content.decode()
    assert "Renews soon" in listing and "Renews soon" in page
    assert reverse("contract-create") not in listing and "New contract" not in listing
    assert reverse("contract-edit", args=[soon.pk]) not in page
    # Finance sees contracts, so is refused (403) rather than told they do not exist (docs/access.md).
    assert client.get(reverse("contract-create")).status_code == 403
    assert client.post(reverse("contract-create"), form_data(name="Sneaky")).status_code == 403
    assert client.post(reverse("contract-edit", args=[soon.pk]), form_data(name="Renamed")).status_code == 403
    assert not Contract.objects.filter(name__in=["Sneaky", "Renamed"]).exists()


# --- the list ---


def test_the_list_shows_the_auto_renewals_ahead_first_soonest_first_with_their_deadline_and_advice(
    client_as, fiona, contracts
):
    html = client_as(fiona).get(reverse("contract-list")).content.decode()
    assert html.index('id="renewals"') < html.index('id="timeline"') < html.index('id="all-contracts"')
    renewals = section(html, 'id="renewals"', 'id="timeline"')
    assert renewals.index("Renews soon") < renewals.index("Renews later")
    assert "Renews next year" not in renewals and "Fixed term" not in renewals  # deadline > 6 months; not renewing
    soon = section(renewals, 'data-contract="Renews soon"', "</li>")
    assert "Notice by 10 Dec 2026" in soon and "20 days left" in soon
    assert "Committed $50,000.00" in soon
    # The baseline: Aug–Oct at $100 a day = $9,200 over 3 months × 12 = $36,800 a year, below 50,000 × 12/4.4 months.
    assert "Renew at or below $36,800.00 for 12 months" in soon


def test_each_contract_has_its_status_badge(client_as, ada, contracts):
    html = client_as(ada).get(reverse("contract-list")).content.decode()
    table = section(html, 'data-table="contracts"', "</table>")
    statuses = {
        name: section(table, f'data-contract="{name}"', "</tr>")
        for name in ("Renews soon", "Renews later", "Fixed term")
    }
    assert 'data-status="shortfall"' in statuses["Renews soon"] and "Shortfall risk" in statuses["Renews soon"]
    assert 'data-status="overage"' in statuses["Renews later"]
    assert 'data-status="on_track"' in statuses["Fixed term"]


def test_ended_not_started_and_notice_passed_contracts_say_so(client_as, fiona, spend):
    contract("Old deal", start=dt.date(2025, 1, 1), end=dt.date(2026, 1, 1), commitment=10)
    contract("Next deal", start=TODAY + 10 * DAY, end=TODAY + 375 * DAY, commitment=10)
    contract(
        "Locked in", start=dt.date(2026, 1, 1), end=TODAY + 10 * DAY, commitment=10, auto_renew=True, notice_days=30
    )
    html = client_as(fiona).get(reverse("contract-list")).content.decode()
    for name, status in (("Old deal", "ended"), ("Next deal", "not_started"), ("Locked in", "notice_passed")):
        assert f'data-status="{status}"' in section(html, f'data-contract="{name}"', "</tr>"), name


def test_the_timeline_draws_a_bar_per_contract_its_notice_deadline_and_today(client_as, fiona, contracts):
    response = client_as(fiona).get(reverse("contract-list"))
    figure = json.loads(
        section(response.content.decode(), '<script id="chart-contracts" type="application/json">', "</script>")
    )
    bars, deadlines = figure["data"]
    assert set(bars["y"]) == {"Renews soon", "Renews later", "Renews next year", "Fixed term"}
    soon = deadlines["y"].index("Renews soon")
    assert deadlines["x"][soon] == (TODAY + 20 * DAY).isoformat()
    assert figure["layout"]["shapes"][0]["x0"] == TODAY.isoformat()


def test_the_contracts_table_downloads_as_csv(client_as, fiona, contracts):
    response = client_as(fiona).get(reverse("contract-list") + "?csv=contracts")
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    assert rows[0][:6] == ["Contract", "Provider", "Status", "Start", "End", "Committed"]
    soon = next(row for row in rows[1:] if row[0] == "Renews soon")
    header = rows[0]
    assert soon[header.index("Status")] == "Shortfall risk"
    assert Decimal(soon[header.index("Committed")]) == Decimal(50_000)
    assert soon[header.index("Currency")] == "USD"
    assert len(rows) == 5


def test_without_contracts_the_list_explains_what_they_are_and_how_to_add_them(client_as, ada, fiona):
    admin = client_as(ada).get(reverse("contract-list")).content.decode()
    assert "No contracts yet" in admin and "contracts:" in admin and reverse("contract-create") in admin
    assert "An admin adds them" in client_as(fiona).get(reverse("contract-list")).content.decode()


# --- a contract ---


def chart_of(html: str) -> dict:
    return json.loads(section(html, '<script id="chart-contract" type="application/json">', "</script>"))


def test_the_contract_page_draws_consumption_the_expectation_the_projection_and_the_commitment(
    client_as, fiona, contracts
):
    soon = contracts["soon"]
    html = client_as(fiona).get(reverse("contract-detail", args=[soon.pk])).content.decode()
    traces = {t["name"]: t for t in chart_of(html)["data"]}
    assert set(traces) == {"Consumed", "Expected (straight line)", "Projected (forecast)", "Committed"}
    assert traces["Consumed"]["x"][0] == "2026-10-01" and traces["Consumed"]["x"][-1] == TODAY.isoformat()
    assert traces["Consumed"]["y"][-1] == 5100.0  # 51 days × $100
    assert traces["Committed"]["y"] == [50000.0, 50000.0]
    assert "Renew at or below $36,800.00" in html
    assert "Notice deadline" in html and "10 Dec 2026" in html and "in 20 days" in html
    assert "the forecast's average for the days left of the current period" in html and "docs/forecast.md" in html


def test_a_monthly_commitment_is_drawn_as_committed_against_consumed_bars_per_month(client_as, fiona, spend):
    monthly = contract(
        "Monthly", start=dt.date(2026, 9, 1), end=dt.date(2027, 3, 1), commitment=3_000, commitment_basis="monthly"
    )
    html = client_as(fiona).get(reverse("contract-detail", args=[monthly.pk])).content.decode()
    traces = {t["name"]: t for t in chart_of(html)["data"]}
    assert {t["type"] for t in traces.values()} == {"bar"}
    assert traces["Committed"]["x"][0] == "2026-09-01" and len(traces["Committed"]["x"]) == 6
    assert traces["Consumed"]["y"][:2] == [3000.0, 3100.0]  # September, October
    periods = section(html, 'data-table="contract_periods"', "</table>")
    assert periods.count("<tr>") == 7  # a header and six months


def test_past_terms_show_what_they_consumed(client_as, ada, contracts):
    soon = contracts["soon"]
    ContractTerm.objects.create(
        contract=soon, start=dt.date(2026, 8, 1), end=dt.date(2026, 10, 1), commitment=Decimal(5_000)
    )
    html = client_as(ada).get(reverse("contract-detail", args=[soon.pk])).content.decode()
    past = section(html, 'data-table="contract_past_terms"', "</table>")
    assert "2026-08-01" in past and "2026-09-30" in past
    assert "$6,100.00" in past  # 61 days × $100
    assert reverse("contract-edit", args=[soon.pk]) in html


# --- the form ---


def form_data(**overrides) -> dict:
    data = {
        "name": "Groq reserved",
        "provider": Provider.objects.get(slug="openai").pk,
        "currency": "usd",
        "start": "2026-12-01",
        "end": "2027-12-01",
        "commitment": "12000",
        "commitment_basis": "term",
        "prepaid": "0",
        "discount_pct": "0",
        "renewal_term_months": "12",
        "notice_days": "60",
        "notice_alert_days": "30, 90",
        "owner": "",
        "notes": "",
        "document_url": "",
    }
    return {**data, **overrides}


def test_every_field_of_the_form_has_help_text(client_as, ada):
    from finops.contracts.forms import ContractForm

    assert [name for name, field in ContractForm().fields.items() if not field.help_text] == []
    assert client_as(ada).get(reverse("contract-create")).status_code == 200


def test_an_admin_creates_a_contract_covering_chosen_accounts_and_edits_it(client_as, ada, openai_account):
    client = client_as(ada)
    response = client.post(reverse("contract-create"), form_data(accounts=[openai_account.pk], auto_renew="on"))
    created = Contract.objects.get(name="Groq reserved")
    assert response.status_code == 302 and response["Location"] == reverse("contract-detail", args=[created.pk])
    assert (created.currency, created.notice_alert_days, created.auto_renew) == ("USD", [90, 30], True)
    assert list(created.accounts.all()) == [openai_account]
    edit = client.get(reverse("contract-edit", args=[created.pk])).content.decode()
    assert 'value="90, 30"' in edit
    client.post(reverse("contract-edit", args=[created.pk]), form_data(commitment="15000", notice_alert_days=""))
    created.refresh_from_db()
    assert (created.commitment, created.notice_alert_days, created.accounts.count()) == (Decimal(15_000), [], 0)


@pytest.mark.parametrize(
    ("overrides", "field", "words"),
    [
        ({"end": "2026-11-01"}, "end", "The end must be after the start."),
        ({"notice_days": "400"}, "notice_days", "cannot be longer than the term (365 days)"),
        ({"commitment": "-1"}, "commitment", "Cannot be negative."),
        ({"notice_alert_days": "30, soon"}, "notice_alert_days", "Whole numbers of days"),
        ({"currency": "US"}, "currency", "Three letters"),
    ],
)
def test_the_form_refuses_what_cannot_be_a_contract_and_says_why(client_as, ada, overrides, field, words):
    response = client_as(ada).post(reverse("contract-create"), form_data(**overrides))
    assert response.status_code == 200
    assert words in " ".join(response.context["form"].errors[field])
    assert not Contract.objects.exists()


def test_the_form_refuses_accounts_of_another_provider(client_as, ada, openai_account):
    anthropic = Provider.objects.get(slug="anthropic")
    response = client_as(ada).post(
        reverse("contract-create"), form_data(provider=anthropic.pk, accounts=[openai_account.pk])
    )
    assert "Not accounts of" in " ".join(response.context["form"].errors["accounts"])


# --- the charts on their own ---


def test_the_burn_down_projects_from_todays_cumulative_to_the_forecast_total_on_the_last_day():
    start, end = dt.date(2026, 11, 1), dt.date(2026, 12, 1)
    daily = {dt.date(2026, 11, 1): Decimal(10), dt.date(2026, 11, 3): Decimal(20)}
    figure = contract_charts.contract_burn_down(
        daily,
        start=start,
        end=end,
        committed=Decimal(300),
        projected=Decimal(160),
        today=dt.date(2026, 11, 4),
        currency="USD",
    )
    traces = {t["name"]: t for t in figure["data"]}
    assert traces["Consumed"]["y"] == [10.0, 10.0, 30.0, 30.0]
    assert traces["Projected (forecast)"]["x"] == ["2026-11-04", "2026-11-30"]
    assert traces["Projected (forecast)"]["y"] == [30.0, 160.0]
    assert traces["Expected (straight line)"]["y"] == [0.0, 300.0]
