"""Published reports (issue 14): a published month stays as published — its page, CSV and PDF — while the data is
restated underneath by a real re-import; the live report then shows the restatement diff (which figure, published
and current amounts, the difference, from which source); publishing again stores version 2; two publications at
once give versions 1 and 2, never an error."""

import datetime as dt
import re
import subprocess
import threading
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from finops.models import ReportSnapshot, User
from finops.reports.selectors.tco_report import TcoReport, tco_report
from finops.reports.services.reports import report_publish
from tests.conftest import make_user
from tests.report_helpers import OCTOBER, import_usage, month_rows, two_months_of_support_usage

FIFTH = dt.datetime(2026, 11, 5, 9, 0, tzinfo=dt.UTC)
CSRF = re.compile(r'name="csrfmiddlewaretoken" value="[^"]+"')


@pytest.fixture
def frozen(time_machine):
    time_machine.move_to(FIFTH, tick=False)
    return time_machine


@pytest.fixture
def spend(openai_account, support_agent):
    two_months_of_support_usage(openai_account, support_agent)


def restate_october_10th(account, cost: str = "20.00"):
    """October's export again, as the provider restated it: the 10th now costs `cost` instead of $12.50."""
    rows = [
        row.replace(",12.50,", f",{cost},") if row.startswith("2026-10-10,") else row
        for row in month_rows(OCTOBER, cost=Decimal("12.50"), tokens=1_200_000)
    ]
    return import_usage(account, rows, "october-restated.csv")


def pdf_text(content: bytes, tmp_path, name: str) -> str:
    path = tmp_path / f"{name}.pdf"
    path.write_bytes(content)
    return subprocess.run(["pdftotext", "-layout", str(path), "-"], check=True, capture_output=True, text=True).stdout


def page(client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200, url
    return CSRF.sub("", response.content.decode())


def test_a_restated_month_shows_what_changed_while_the_published_version_stays_as_published(
    client_as, frozen, spend, fiona, openai_account, tmp_path
):
    reader = client_as(fiona)
    published = reader.post("/reports/2026-10/publish")
    assert published.status_code == 302 and published["Location"] == "/reports/2026-10/?version=1"
    v1 = ReportSnapshot.objects.get()
    assert TcoReport.from_json(v1.figures).summary["cost"] == Decimal("387.50")
    assert "Published October 2026 as version 1 (final)." in page(reader, "/reports/2026-10/?version=1")  # read once
    before = {
        "page": page(reader, "/reports/2026-10/?version=1"),
        "csv": reader.get("/reports/2026-10/report.csv?version=1").content,
        "pdf": pdf_text(reader.get("/reports/2026-10/report.pdf?version=1").content, tmp_path, "before"),
    }
    assert "No change since version 1 was published" in page(reader, "/reports/2026-10/?live=1")

    frozen.shift(dt.timedelta(hours=2))
    restate_october_10th(openai_account)  # the provider's corrected export, imported as any other

    live = tco_report(fiona, OCTOBER, today=FIFTH.date())
    assert live.summary["cost"] == Decimal("395.00")  # 387.50 − 12.50 + 20.00
    text = page(reader, "/reports/2026-10/?live=1")
    section = text[text.index('data-testid="restatement"') :]
    section = section[: section.index("</section>")]
    assert "Restated since version 1 was published" in section
    assert "Runs since publication: openai-prod." in section
    cells = [
        re.sub(r"<[^>]+>", "", row).split("|")
        for row in (
            re.sub(r"\s*</td>\s*<td[^>]*>\s*", "|", r)
            for r in re.findall(r"<tr[^>]*>\s*<td[^>]*>(.*?)</td>\s*</tr>", section, re.S)
        )
    ]
    rows = {
        (cells_[0].strip(), cells_[1].strip(), cells_[2].strip()): tuple(c.strip() for c in cells_[3:6])
        for cells_ in cells
    }
    assert rows[("The month in figures", "October 2026", "Spend")] == ("$387.50", "$395.00", "+$7.50")
    assert rows[("The month in figures", "October 2026", "Billed")] == ("$387.50", "$395.00", "+$7.50")
    assert rows[("By provider", "OpenAI", "Spend")] == ("$387.50", "$395.00", "+$7.50")
    assert rows[("By workload", "Support agent", "Spend")] == ("$387.50", "$395.00", "+$7.50")

    # The published version is what was published: its page, its CSV and its PDF.
    assert page(reader, "/reports/2026-10/?version=1") == before["page"]
    assert reader.get("/reports/2026-10/report.csv?version=1").content == before["csv"]
    assert pdf_text(reader.get("/reports/2026-10/report.pdf?version=1").content, tmp_path, "after") == before["pdf"]
    assert "$387.50" in before["pdf"] and "$395.00" not in before["pdf"]

    assert reader.post("/reports/2026-10/publish")["Location"] == "/reports/2026-10/?version=2"
    v2 = ReportSnapshot.objects.get(version=2)
    assert TcoReport.from_json(v2.figures).summary["cost"] == Decimal("395.00") and v2.published_by == fiona
    assert "No change since version 2 was published" in page(reader, "/reports/2026-10/?live=1")
    assert (
        "$387.50" in page(reader, "/reports/2026-10/?version=1")
        and b"395" not in reader.get("/reports/2026-10/report.csv?version=1").content
    )
    assert reader.get("/reports/2026-10/report.csv?version=1").content == before["csv"]


def test_reimporting_the_same_export_restates_nothing(client_as, frozen, spend, fiona, openai_account):
    reader = client_as(fiona)
    reader.post("/reports/2026-10/publish")
    frozen.shift(dt.timedelta(hours=1))

    import_usage(openai_account, month_rows(OCTOBER, cost=Decimal("12.50"), tokens=1_200_000), "october-again.csv")

    assert "No change since version 1 was published" in page(reader, "/reports/2026-10/?live=1")


def test_a_closed_published_month_renders_its_latest_version_without_recomputing(
    client_as, frozen, spend, fiona, openai_account
):
    """Issue 23: the page of a closed month that was published is the latest published version, read from its
    snapshot (no rollup read); the live figures, the restatement diff and publishing stay one link away."""
    reader = client_as(fiona)
    assert "Publish this report" in page(reader, "/reports/2026-10/")  # never published: live
    reader.post("/reports/2026-10/publish")
    page(reader, "/reports/2026-10/?version=1")  # shows the "Published …" message once
    frozen.shift(dt.timedelta(hours=2))
    restate_october_10th(openai_account)

    with CaptureQueriesContext(connection) as queries:
        text = page(reader, "/reports/2026-10/")
    read = " ".join(q["sql"] for q in queries.captured_queries)
    assert not any(table in read for table in ("finops_dailyspend", "finops_monthlyspend", "finops_usageline"))
    assert text == page(reader, "/reports/2026-10/?version=1")  # the published figures: $387.50, not $395.00
    assert "$387.50" in text and "$395.00" not in text and 'data-testid="live-link"' in text
    assert "Publish version 2" not in text

    live = page(reader, "/reports/2026-10/?live=1")
    assert "Restated since version 1 was published" in live and "$395.00" in live and "Publish version 2" in live
    # The current month is live whatever was published (it is not closed).
    assert 'data-testid="published-version"' not in page(reader, "/reports/2026-11/")


@pytest.mark.django_db(transaction=True)
def test_two_publications_at_once_give_versions_1_and_2_and_no_error(
    reseeded, time_machine, openai_account, support_agent
):
    two_months_of_support_usage(openai_account, support_agent)
    fiona = make_user("fiona", User.Role.FINANCE)
    time_machine.move_to(FIFTH, tick=False)
    report = tco_report(fiona, OCTOBER, today=FIFTH.date())
    start, versions, errors = threading.Barrier(2), [], []

    def publisher():
        try:
            start.wait()
            versions.append(report_publish(report=report, by=fiona).version)
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)
        finally:
            connection.close()

    for _round in range(3):  # three rounds of two at once: 1 and 2, 3 and 4, 5 and 6
        threads = [threading.Thread(target=publisher) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        start.reset()

    assert errors == []
    assert sorted(versions) == [1, 2, 3, 4, 5, 6]
    assert list(ReportSnapshot.objects.order_by("version").values_list("version", flat=True)) == [1, 2, 3, 4, 5, 6]
