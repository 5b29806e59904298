"""The monthly TCO report (issue 14) on the demo organisation: every figure is the spend selectors' figure for the
same month (one source of truth), the movers' effects add up to their change, a snapshot reads back exactly, a
month not begun is refused, an empty month says so, and only admins and finance may open it."""

import csv
import datetime as dt
import io
import re
from decimal import Decimal

import pytest
from django.db import transaction
from django.urls import reverse

from finops.alerts.selectors.caps import cap_statuses
from finops.contracts.selectors import contract_statuses
from finops.core import display
from finops.core.months import next_month
from finops.models import Cap, Contract, DailySpend, ReportSnapshot, User, Workload
from finops.performance.selectors.scorecard import workload_rows
from finops.reports import tco_formats
from finops.reports.restatement import diff
from finops.reports.selectors.tco_report import MonthError, TcoReport, report_month, tco_report
from finops.reports.services.reports import report_publish
from finops.reports.tco_tables import SECTIONS, TABLES, TOTALS
from finops.spend.selectors import spend
from finops.spend.selectors.spend_report import spend_rows
from finops.whatif.savings_rows import saving_rows
from finops.whatif.selectors import savings
from tests.conftest import make_user, reseed_reference_data
from tests.demo_snapshot import demo_loaded

TODAY = dt.date(2026, 11, 1)
OCTOBER = dt.date(2026, 10, 1)
SEPTEMBER = dt.date(2026, 9, 1)
NOVEMBER = dt.date(2026, 11, 1)


@pytest.fixture(scope="module")
def demo(django_db_setup, django_db_blocker, tmp_path_factory):
    """The demo organisation (October 2026 its last full month) and a finance reader, rolled back afterwards."""
    with django_db_blocker.unblock(), transaction.atomic():
        reseed_reference_data()
        demo_loaded(TODAY, tmp_path_factory)
        finance = make_user("report-reader", User.Role.FINANCE)
        report = tco_report(finance, OCTOBER, today=TODAY)
        yield {"finance": finance, "report": report}
        transaction.set_rollback(True)


@pytest.fixture
def loaded(demo, db):
    return demo


def by_group(rows):
    return {row["group"]: row for row in rows}


# --- one source of truth ---


def test_the_summary_is_the_spend_selectors_month(loaded):
    report, finance = loaded["report"], loaded["finance"]
    month = spend_rows(user=finance, start=OCTOBER, end=NOVEMBER, by="month", today=TODAY)[0]
    summary = report.summary
    for key in ("cost", "billed_cost", "estimated_cost", "unpriced_tokens", "requests", "usd_per_mtok"):
        assert summary[key] == month[key], key
    assert summary["tokens"] == month["priced_tokens"] + month["unpriced_tokens"]
    assert summary["cost"] > 0 and summary["estimated_cost"] > 0 and summary["unpriced_tokens"] > 0
    # The overview's reading of the same days (the daily rollup) agrees to the last digit.
    assert spend.period_totals(DailySpend.objects.all(), {"m": (OCTOBER, NOVEMBER)})["m"].cost == summary["cost"]
    september = spend_rows(user=finance, start=SEPTEMBER, end=OCTOBER, by="month", today=TODAY)[0]
    assert summary["previous_cost"] == september["cost"]
    assert summary["change"] == (summary["cost"] - september["cost"]) / september["cost"]
    assert summary["last_year_cost"] is None and summary["yoy_change"] is None  # the demo has no October 2025


@pytest.mark.parametrize("by, table", [("provider", "by_provider"), ("team", "by_team")])
def test_each_provider_and_team_row_is_the_spend_report_row(loaded, by, table):
    report, finance = loaded["report"], loaded["finance"]
    expected = by_group(spend_rows(user=finance, start=OCTOBER, end=NOVEMBER, by=by, today=TODAY))
    before = by_group(spend_rows(user=finance, start=SEPTEMBER, end=OCTOBER, by=by, today=TODAY))
    rows = report.rows(table)
    assert len(rows) == len(expected)
    for row in rows:
        group = row["slug"] or None
        for key in ("cost", "billed_cost", "estimated_cost", "unpriced_tokens", "requests", "usd_per_mtok"):
            assert row[key] == expected[group][key], (group, key)
        assert row["previous_cost"] == before[group]["cost"]
    assert sum(r["cost"] for r in rows if r["cost"] is not None) == report.summary["cost"]
    shares = [r["share"] for r in rows if r["share"] is not None]
    assert abs(sum(shares) - 1) < Decimal("1e-20")


def test_the_workload_table_is_the_top_workloads_then_the_rest_then_unattributed_and_adds_up(loaded):
    report, finance = loaded["report"], loaded["finance"]
    expected = by_group(spend_rows(user=finance, start=OCTOBER, end=NOVEMBER, by="workload", today=TODAY))
    rows = report.rows("by_workload")
    named = [r for r in rows if r["slug"]]
    assert [r["cost"] for r in named] == sorted((r["cost"] for r in named), reverse=True)
    for row in named:
        assert row["cost"] == expected[row["slug"]]["cost"]
    other = [r for r in rows if r["label"].startswith("Other (")]
    unattributed = [r for r in rows if r.get("unattributed")]
    assert (
        len(unattributed) == 1
        and unattributed[0]["cost"] == expected[None]["cost"] == report.summary["unattributed_cost"]
    )
    in_other = int(other[0]["label"].split("(")[1].split()[0]) if other else 0
    assert len(named) + in_other == len([group for group in expected if group is not None])
    assert sum(r["cost"] for r in rows) == report.summary["cost"]
    assert sum(r["unpriced_tokens"] for r in rows) == report.summary["unpriced_tokens"]


def test_the_trend_is_six_months_by_provider_and_its_last_month_is_the_provider_table(loaded):
    report, finance = loaded["report"], loaded["finance"]
    months = sorted({r["month"] for r in report.rows("trend")})
    assert months[-1] == "2026-10" and len(months) <= 6 and months[0] >= "2026-05"
    october = {r["label"]: r["cost"] for r in report.rows("trend") if r["month"] == "2026-10"}
    assert october == {r["label"]: r["cost"] for r in report.rows("by_provider")}
    for month in months:
        start = dt.date.fromisoformat(f"{month}-01")
        total = spend_rows(user=finance, start=start, end=next_month(start), by="month", today=TODAY)[0]["cost"]
        assert sum(r["cost"] for r in report.rows("trend") if r["month"] == month and r["cost"] is not None) == total


def test_unit_economics_caps_contracts_and_savings_are_their_pages_figures(loaded):
    report, finance = loaded["report"], loaded["finance"]
    scorecard = {
        r["label"]: r
        for r in workload_rows(
            finance, (OCTOBER, NOVEMBER), (SEPTEMBER, OCTOBER), compare_label="last month", today=TODAY
        )
    }
    rows = report.rows("unit_economics")
    assert rows and any(r["outcomes"] for r in rows) and any(r["verdict"]["status"] == "fails" for r in rows)
    for row in rows:
        card = scorecard[row["label"]]
        assert (row["cost"], row["outcomes"], row["per_outcome"], row["p99_ms"]) == (
            card["cost"],
            card["outcomes"],
            card["per_outcome"],
            card["p99_ms"],
        )
        assert row["previous_per_outcome"] == card["previous"].per_outcome
        assert row["verdict"] == card["verdict"]
    last_day = NOVEMBER - dt.timedelta(days=1)
    caps = {s.cap.name: s for s in cap_statuses(list(Cap.objects.all()), today=last_day)}
    closed_caps = 0
    for row in report.rows("caps") + report.rows("org_caps"):
        status = caps[row["label"]]
        assert row["spent"] == status.spent
        if status.period_end <= NOVEMBER:  # closed with October: its outcome, never a forecast
            closed_caps += 1
            assert row["forecast"] is None and row["status"].startswith(("Over by $", "Within, $"))
        else:
            assert row["forecast"] == status.forecast
    assert closed_caps
    breached = {n for n, s in caps.items() if s.period_end <= NOVEMBER and s.spent > s.cap.amount}
    forecast = {n for n, s in caps.items() if s.period_end > NOVEMBER and s.status in ("breached", "forecast")}
    assert {r["label"] for r in report.rows("caps")} == breached | forecast
    contracts = {s.contract.name: s for s in contract_statuses(Contract.objects.all(), today=last_day)}
    assert report.rows("commitments")
    outcomes = 0
    for row in report.rows("commitments"):
        period = next(p for p in contracts[row["label"]].periods if p.start <= last_day < p.end)
        assert (row["committed"], row["consumed"]) == (period.committed, period.consumed)
        if period.end <= NOVEMBER:  # the period closed: "Under-used by $1,356.34", not a projection
            outcomes += 1
            gap = period.committed - period.consumed
            assert row["projected"] is None
            assert row["status"] == (
                f"Under-used by {display.money_exact(gap, row['currency'])}"
                if gap > 0
                else f"Over by {display.money_exact(-gap, row['currency'])}"
                if gap < 0
                else "Met exactly"
            )
        else:
            assert row["projected"] == period.projected
    assert outcomes
    # The Savings page's basis over the report's calendar month (docs/whatif.md, One basis).
    expected = [r for r in saving_rows(savings(finance, NOVEMBER, start=OCTOBER)) if r["saving"]]
    assert report.rows("savings") == expected and expected


def test_the_report_csv_carries_every_table_with_its_header_and_exact_figures(loaded):
    report = loaded["report"]
    out = io.StringIO()
    tco_formats.write_csv(report, out)
    lines = list(csv.reader(io.StringIO(out.getvalue())))
    for section in SECTIONS:
        assert [section.title] in lines
    summary_header = lines.index(["The month in figures"]) + 1
    header, values = lines[summary_header], lines[summary_header + 1]
    assert Decimal(values[header.index("Spend")]) == report.summary["cost"].quantize(Decimal("0.000001"))
    assert values[-1] == "USD"


# --- movers ---


def test_the_report_holds_exactly_the_tables_the_formats_render(loaded):
    """The selector fills every table finops.reports.tco_tables describes, and no other: a table the page, CSV,
    XLSX and PDF render but the report lacks would show empty; one the report has but no format knows, nowhere."""
    assert set(loaded["report"].tables) == set(TABLES)


def test_the_movers_are_the_three_largest_increases_then_the_three_largest_decreases_and_their_effects_add_up(loaded):
    report, finance = loaded["report"], loaded["finance"]
    movers = report.rows("movers")
    for row in movers:
        assert row["volume"] + row["price"] + row["mix"] == row["change"] == row["after"] - row["before"]
        assert row["why"]
    now = by_group(spend_rows(user=finance, start=OCTOBER, end=NOVEMBER, by="workload", today=TODAY))
    before = by_group(spend_rows(user=finance, start=SEPTEMBER, end=OCTOBER, by="workload", today=TODAY))
    changes = [
        ((now.get(g, {}).get("cost") or 0) - (before.get(g, {}).get("cost") or 0), g)
        for g in now.keys() | before.keys()
    ]
    names = dict(Workload.objects.values_list("slug", "name"))
    ups = [names.get(g, "Unattributed") for c, g in sorted(changes, reverse=True) if c > 0][:3]
    downs = [names.get(g, "Unattributed") for c, g in sorted(changes) if c < 0][:3]
    assert ups and [r["label"] for r in movers] == ups + downs
    assert all(r["change"] > 0 for r in movers[: len(ups)]) and all(r["change"] < 0 for r in movers[len(ups) :])


# --- snapshots ---


def test_a_published_report_reads_back_exactly_and_versions_count_up(loaded):
    report, finance = loaded["report"], loaded["finance"]
    before = ReportSnapshot.objects.filter(month=OCTOBER).count()  # the demo publishes October once (demo/reports.py)
    first = report_publish(report=report, by=finance)
    second = report_publish(report=report, by=finance)
    assert (first.version, second.version) == (before + 1, before + 2)
    again = TcoReport.from_json(ReportSnapshot.objects.get(pk=first.pk).figures)
    assert again == report
    assert isinstance(again.summary["cost"], Decimal) and again.summary["cost"] == report.summary["cost"]
    assert diff(again, report) == []


def test_the_restatement_diff_names_each_changed_amount_and_by_how_much():
    before = TcoReport(
        month=OCTOBER,
        end=NOVEMBER,
        generated_at=dt.datetime(2026, 11, 3, tzinfo=dt.UTC),
        currency="USD",
        provisional=False,
        has_data=True,
        tables={name: [] for name in TABLES},
    )
    before.tables["by_provider"] = [{"label": "Anthropic", "cost": Decimal("100.00"), "tokens": 10}]
    after = TcoReport.from_json(before.as_json())
    after.tables["by_provider"] = [
        {"label": "Anthropic", "cost": Decimal("112.50"), "tokens": 10},
        {"label": "Groq", "cost": Decimal("3"), "tokens": 5},
    ]
    changes = diff(before, after)
    anthropic = next(c for c in changes if c["label"] == "Anthropic")
    assert (anthropic["figure"], anthropic["delta"], anthropic["published"], anthropic["now"]) == (
        "Spend",
        Decimal("12.50"),
        "$100.00",
        "$112.50",
    )
    groq = [c for c in changes if c["label"] == "Groq"]
    assert {c["figure"] for c in groq} == {"Spend", "Tokens"} and all(c["published"] == "—" for c in groq)


# --- months ---


def test_a_month_not_begun_is_refused_and_the_default_is_the_last_full_month():
    assert report_month("", today=dt.date(2026, 11, 24)) == OCTOBER
    assert report_month("2026-11", today=dt.date(2026, 11, 24)) == NOVEMBER  # to date
    for text, words in (
        ("2026-12", "has not begun"),
        ("2026-13", "Unknown month"),
        ("1999-12", "between"),
        ("9999-01", "between"),
        ("oct", "Unknown month"),
    ):
        with pytest.raises(MonthError, match=words):
            report_month(text, today=dt.date(2026, 11, 24))
    with pytest.raises(MonthError, match="no complete day"):
        report_month("2026-11", today=NOVEMBER)


def test_a_month_without_data_says_so(loaded, client_as):
    finance = loaded["finance"]
    report = tco_report(finance, dt.date(2024, 1, 1), today=TODAY)
    assert not report.has_data and report.summary["cost"] is None and report.rows("by_provider") == []
    page = client_as(finance).get(reverse("report-month", args=["2024-01"])).content.decode()
    assert "No spend was recorded for January 2024" in page


def test_the_current_month_reads_to_date_and_is_provisional(loaded):
    report = tco_report(loaded["finance"], OCTOBER, today=dt.date(2026, 10, 11))
    assert report.to_date and report.provisional and report.end == dt.date(2026, 10, 11)
    assert report.label == "October 2026 to date"
    assert report.notes["compare_label"] == "the first 10 days of September 2026"
    ten_days = spend_rows(user=loaded["finance"], start=OCTOBER, end=dt.date(2026, 10, 11), by="month", today=TODAY)[0]
    assert report.summary["cost"] == ten_days["cost"]


# --- the page and who may open it ---


def test_admins_and_finance_read_the_report_members_get_404_and_anonymous_the_login(loaded, client_as, client):
    from finops.models import Team

    admin = make_user("report-admin", User.Role.ADMIN)
    lead = make_user("report-lead", User.Role.MEMBER, team=Team.objects.first())
    member = make_user("report-member", User.Role.MEMBER, team=Team.objects.last(), team_role="member")
    urls = [
        reverse("report-index"),
        reverse("report-month", args=["2026-10"]),
        reverse("report-file", args=["2026-10", "csv"]),
        reverse("report-file", args=["2026-10", "xlsx"]),
    ]
    for user in (admin, loaded["finance"]):
        for url in urls:
            response = client_as(user).get(url, follow=True)
            assert response.status_code == 200, (user, url)
    published = ReportSnapshot.objects.count()
    for user in (lead, member):
        for url in urls:
            assert client_as(user).get(url).status_code == 404, (user, url)
        assert client_as(user).post(reverse("report-publish", args=["2026-10"])).status_code == 404
    assert ReportSnapshot.objects.count() == published
    for url in urls:
        response = client.get(url)
        assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_the_page_shows_every_section_and_a_month_not_begun_goes_back_with_the_reason(loaded, client_as):
    finance = client_as(loaded["finance"])
    page = finance.get(reverse("report-month", args=["2026-10"])).content.decode()
    for section in SECTIONS:
        assert section.title in page
    response = finance.get(reverse("report-month", args=["2099-01"]), follow=True)
    assert response.redirect_chain and "has not begun" in response.content.decode()
    assert finance.get(reverse("report-file", args=["2099-01", "csv"])).status_code == 400
    assert finance.get(reverse("report-file", args=["2026-10", "docx"])).status_code == 404


def test_publishing_from_the_page_stores_a_version_and_the_live_page_compares_with_it(loaded, client_as):
    finance = client_as(loaded["finance"])
    response = finance.post(reverse("report-publish", args=["2026-10"]), follow=True)
    snapshot = ReportSnapshot.objects.filter(month=OCTOBER).first()  # the newest
    assert snapshot.published_by == loaded["finance"]
    version = snapshot.version
    assert f"Published v{version}" in response.content.decode()
    live = finance.get(reverse("report-month", args=["2026-10"]) + "?live=1").content.decode()
    assert f"No change since version {version} was published" in live  # a restatement: tests/test_report_snapshots.py
    published = finance.get(reverse("report-month", args=["2026-10"]) + f"?version={version}").content.decode()
    assert 'data-testid="restatement"' not in published and f"Published v{version}" in published


# --- totals rows ---


def _money(text: str) -> Decimal | None:
    """ "$1,043.12" (what a cell shows, before any "+ 3M tokens unpriced" note) as a Decimal; "—" as None."""
    found = re.search(r"(-?)\$([\d,]+\.\d\d)", text)
    return None if found is None else Decimal(found[1] + found[2].replace(",", ""))


def _shown_tables(html: str) -> dict[str, tuple[list[str], list[list[str]]]]:
    """{table name: (its columns' keys, its rows' cells as text)} of every report table on a page."""
    found = {}
    for segment in html.split('data-report-table="')[1:]:
        name, markup = segment.split('"', 1)[0], segment.split("</table>")[0]
        if '<table class="data"' not in markup:
            continue  # the summary: figures, not a table
        keys = re.findall(r'<th[^>]*data-column="(\w+)"', markup)
        rows = [
            [re.sub(r"<[^>]+>", " ", cell) for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
            for row in re.findall(r"<tr[^>]*>(.*?)</tr>", markup.split("<tbody>")[1], re.S)
        ]
        found[name] = (keys, rows)
    return found


def test_every_table_with_totals_ends_with_a_totals_row_that_is_the_sum_of_the_rows_shown(loaded, client):
    """Round once, then add: each money column's total is the sum of the cents its rows show, on the page (and so
    the print and the PDF, which render the same markup) and in the CSV."""
    client.force_login(loaded["finance"])
    tables = _shown_tables(client.get("/reports/2026-10/").content.decode())
    checked = 0
    for name, keys in TOTALS.items():
        columns, rows = tables[name]
        if not loaded["report"].rows(name):
            continue
        *shown, total = rows
        assert total[0].strip() == "Total", name
        for key in keys:
            if key not in columns or TABLES[name].columns[columns.index(key)].kind != "money":
                continue
            index = columns.index(key)
            values = [v for v in (_money(row[index]) for row in shown) if v is not None]
            assert _money(total[index]) == sum(values, Decimal(0)), (name, key)
            checked += 1
    assert checked >= 12
    out = io.StringIO()
    tco_formats.write_csv(loaded["report"], out)
    lines = list(csv.reader(io.StringIO(out.getvalue())))
    by_provider = lines.index(["By provider"])
    header = lines[by_provider + 1]
    body = lines[by_provider + 2 : by_provider + 2 + len(loaded["report"].rows("by_provider")) + 1]
    assert body[-1][0] == "Total"
    cents = sum(display.cents(Decimal(row[header.index("Spend")])) for row in body[:-1])
    assert Decimal(body[-1][header.index("Spend")]) == cents


def test_the_first_paragraph_says_the_total_the_reasons_the_budgets_and_the_decisions_every_number_from_a_table(
    loaded, client
):
    client.force_login(loaded["finance"])
    page = client.get("/reports/2026-10/").content.decode()
    paragraph = re.search(r'data-testid="report-headline">(.*?)</p>', page, re.S)[1]
    rest = page.replace(paragraph, "")
    report = loaded["report"]
    assert paragraph.startswith(f"October 2026: {display.money_exact(report.summary['cost'])} spent")
    assert "Why: the largest increases:" in paragraph and "Needs a decision" in paragraph and "Budgets:" in paragraph
    figures = re.findall(r"[+-]?\$[\d,]+\.\d\d|[+-]?\d+\.\d %", paragraph)
    assert len(figures) >= 6
    for figure in figures:  # each is a cell of a table below (the movers' parts, budgets, commitments, the summary)
        assert figure.lstrip("+-") in rest, figure


def test_quarter_and_year_to_date_are_the_months_spend_up_to_the_reports_end(loaded):
    report, finance = loaded["report"], loaded["finance"]
    months = spend_rows(user=finance, start=dt.date(2026, 1, 1), end=NOVEMBER, by="month", today=TODAY)
    assert report.summary["qtd_cost"] == report.summary["cost"]  # October opens Q4
    assert report.summary["ytd_cost"] == sum(row["cost"] for row in months if row["cost"] is not None)
    assert report.summary["ytd_cost"] > report.summary["cost"]
