"""A month emailed and then restated (issue 24): once its sources have settled and its figures differ from the
version subscribers were sent, the hourly send publishes it again and each subscriber gets one short "restated"
email — what changed, by how much, which source re-imported — with the new version attached, at a real SMTP server
(aiosmtpd), never twice; the preview renders exactly what is sent; the report page says which version each
recipient was sent; and a month's report reads the same whenever it is rendered after it closed."""

import datetime as dt
import email
import email.policy
import io
import re
from decimal import Decimal

import pytest
from django.core.management import call_command
from django.test import Client

from finops.models import CapPeriod, CapScope, ReportDelivery, ReportSendAttempt, ReportSnapshot
from finops.notify.report_deliveries import delivery_preview, next_delivery, reports_send, send_now
from finops.reports.restatement import diff
from finops.reports.selectors.tco_report import TcoReport, tco_report
from finops.reports.services.subscriptions import subscription_add
from tests.conftest import stored_cap
from tests.report_helpers import NOVEMBER, OCTOBER, import_usage, month_rows, two_months_of_support_usage

THIRD = dt.datetime(2026, 11, 3, 8, 0, tzinfo=dt.UTC)
FIFTH = dt.datetime(2026, 11, 5, 9, 0, tzinfo=dt.UTC)  # past October's end + the 3-day lookback: settled
RESTATED_DAY = "2026-10-14"
State = ReportDelivery.State


@pytest.fixture
def smtp(smtp, settings):
    settings.SITE_URL = "https://finops.example.com"
    return smtp


@pytest.fixture
def sent_in_october(smtp, time_machine, openai_account, support_agent, ada, fiona):
    """October ($387.50) emailed on 3 November as version 1 to fiona (finance) and cfo@example.com; then, on the
    5th, openai-prod re-imports 14 October at $20.00 instead of $12.50 (a usage export that had missed lines)."""
    time_machine.move_to(THIRD, tick=False)
    two_months_of_support_usage(openai_account, support_agent)
    subscription_add(email="cfo@example.com", by=ada)
    assert len(reports_send()) == 2
    time_machine.move_to(FIFTH, tick=False)
    import_usage(
        openai_account,
        [row for row in month_rows(OCTOBER, cost=Decimal("20.00"), tokens=2_400_000) if row.startswith(RESTATED_DAY)],
        "openai-prod-2026-10-14-corrected.csv",
    )
    return time_machine


def text_of(message) -> str:
    return message.get_body(("plain",)).get_content()


def html_of(message) -> str:
    return message.get_body(("html",)).get_content()


def pdf_of(message):
    return next(part for part in message.iter_attachments() if part.get_content_type() == "application/pdf")


def test_a_restated_month_is_published_once_and_each_subscriber_gets_one_restated_email(smtp, sent_in_october, fiona):
    sent = reports_send()

    assert len(sent) == 2 and len(smtp.messages) == 4, text_of(smtp.messages[-1])
    versions = list(ReportSnapshot.objects.order_by("version").values_list("version", "provisional", "published_by"))
    assert versions == [(1, True, None), (2, False, None)]  # the schedule published the settled restatement
    v2 = TcoReport.from_json(ReportSnapshot.objects.get(version=2).figures)
    assert v2.summary["cost"] == Decimal("395.00")  # 387.50 − 12.50 + 20.00
    for address in ("fiona@example.com", "cfo@example.com"):
        first, restated = smtp.to(address)
        assert first["X-FinOps-Report"] == "2026-10 v1"
        assert restated["X-FinOps-Report"] == "2026-10 v2 restates v1"
        assert restated["Subject"] == "TCO report, October 2026 RESTATED (version 2): $395.00 (+$7.50 from version 1)"
        text, html = text_of(restated), html_of(restated)
        for body in (text, html):
            assert "RESTATED" in body and "$387.50" in body and "$395.00" in body and "+$7.50" in body
            assert "openai-prod re-imported days of October 2026" in body  # why: the source that re-imported
            assert "https://finops.example.com/reports/2026-10/?version=2" in body
            assert "/reports/unsubscribe/" in body
        # What changed: the month's total and the support agent's row, published → now.
        assert "The month in figures · October 2026 · Spend: $387.50 → $395.00 (+$7.50)" in text
        assert "By workload · Support agent · Spend: $387.50 → $395.00 (+$7.50)" in text
        assert len(text) < 4000, "short: the figures are in the attached version"
        assert pdf_of(restated).get_filename() == "tco-report-2026-10-v2.pdf"
        assert pdf_of(restated).get_content().startswith(b"%PDF")

    # Again the same hour, the next hour and the next day: nothing more is published or sent.
    for later in (FIFTH, FIFTH + dt.timedelta(hours=1), FIFTH + dt.timedelta(days=1)):
        sent_in_october.move_to(later, tick=False)
        assert reports_send() == []
    assert len(smtp.messages) == 4 and ReportSnapshot.objects.count() == 2
    attempts = sorted(
        ReportSendAttempt.objects.values_list("delivery__subscription__email", "delivery__snapshot__version", "status")
    )
    assert attempts == [
        ("cfo@example.com", 1, "sent"),
        ("cfo@example.com", 2, "sent"),
        ("fiona@example.com", 1, "sent"),
        ("fiona@example.com", 2, "sent"),
    ]

    # The report page says which version each recipient was sent.
    client = Client()
    client.force_login(fiona)
    page = client.get("/reports/2026-10/").content.decode()
    recipients = page[page.index('data-testid="recipients"') :]
    assert recipients.count("v2 (restated from v1)") == 2 and "cfo@example.com" in recipients

    # The restated email's figures are the page's: the total it names, the version it carries, the version's page.
    total = re.search(r'data-testid="report-total">([^<]+)<', page).group(1).strip()
    assert total == "$395.00"
    version_page = client.get("/reports/2026-10/?version=2").content.decode()
    assert re.search(r'data-testid="report-total">([^<]+)<', version_page).group(1).strip() == total
    for address in ("fiona@example.com", "cfo@example.com"):
        restated = smtp.to(address)[1]
        assert f": {total} (" in restated["Subject"] and "(version 2)" in restated["Subject"]
        assert f"→ {total}" in text_of(restated)


def test_no_restatement_is_published_before_the_sources_settle_nor_when_nothing_changed(
    smtp, time_machine, openai_account, support_agent, fiona
):
    time_machine.move_to(THIRD, tick=False)
    two_months_of_support_usage(openai_account, support_agent)
    assert len(reports_send()) == 1
    # 3 November, an hour later: the day is re-imported, but the month has not settled (its lookback runs to the 4th).
    time_machine.move_to(THIRD + dt.timedelta(hours=1), tick=False)
    import_usage(
        openai_account,
        [r for r in month_rows(OCTOBER, cost=Decimal("20.00"), tokens=2_400_000) if r.startswith(RESTATED_DAY)],
        "corrected.csv",
    )
    assert reports_send() == [] and ReportSnapshot.objects.count() == 1
    # The 5th: settled, and different: one version, one email.
    time_machine.move_to(FIFTH, tick=False)
    assert len(reports_send()) == 1 and ReportSnapshot.objects.count() == 2
    # November's spend arrives, days pass: October's figures do not move, so nothing is published.
    import_usage(openai_account, month_rows(NOVEMBER, cost=Decimal("9.00"), tokens=900_000)[:20], "november.csv")
    time_machine.move_to(dt.datetime(2026, 11, 21, 9, tzinfo=dt.UTC), tick=False)
    assert reports_send() == [] and ReportSnapshot.objects.count() == 2 and len(smtp.messages) == 2


def test_the_preview_is_exactly_the_email_sent_and_send_now_sends_it_once(smtp, sent_in_october, fiona):
    from finops.notify.report_deliveries import month_lock, schedule_reader
    from finops.notify.report_restated import restatements

    restatements(reader=schedule_reader(), lock=month_lock, now=FIFTH)  # published and due, not sent yet
    subscription = fiona.report_subscriptions.get()
    delivery, what = next_delivery(subscription, FIFTH)
    assert what.startswith("The October 2026 report, version 2, restated from version 1")
    preview = email.message_from_bytes(delivery_preview(delivery).message().as_bytes(), policy=email.policy.default)

    assert len(send_now(subscription, FIFTH)) == 1
    (received,) = smtp.to("fiona@example.com")[1:]
    assert received["Subject"] == preview["Subject"]
    lines = lambda text: text.replace("\r\n", "\n")  # noqa: E731 - SMTP carries CRLF line ends
    assert lines(text_of(received)) == lines(text_of(preview)) and lines(html_of(received)) == lines(html_of(preview))
    assert pdf_of(received).get_content() == pdf_of(preview).get_content()
    assert send_now(subscription, FIFTH) == [] and reports_send() != [] and len(smtp.to("fiona@example.com")) == 2

    # The command previews (and writes the message as sent) the same way.
    out = io.StringIO()
    call_command("report_email", "--to", "cfo@example.com", stdout=out)
    assert "Nothing to send: version 2 of October 2026 was sent" in out.getvalue()


def test_the_admin_previews_the_email_and_sends_it_now_from_the_subscriptions_page(smtp, sent_in_october, ada):
    from finops.notify.report_deliveries import month_lock, schedule_reader
    from finops.notify.report_restated import restatements

    restatements(reader=schedule_reader(), lock=month_lock, now=FIFTH)
    subscription = ada and ReportDelivery.objects.filter(subscription__email="cfo@example.com").first().subscription
    client = Client()
    client.force_login(ada)
    page = client.get(f"/reports/subscriptions/{subscription.id}/email/").content.decode()
    assert "TCO report, October 2026 RESTATED (version 2): $395.00 (+$7.50 from version 1)" in page
    assert "tco-report-2026-10-v2.pdf" in page and "openai-prod re-imported" in page
    frame = client.get(f"/reports/subscriptions/{subscription.id}/email.html")
    assert frame.status_code == 200 and "sandbox" in frame["Content-Security-Policy"] and b"RESTATED" in frame.content
    client.post(f"/reports/subscriptions/{subscription.id}/email/")
    assert [m["X-FinOps-Report"] for m in smtp.to("cfo@example.com")] == ["2026-10 v1", "2026-10 v2 restates v1"]


# --- as of the month's end ---


def test_a_months_report_reads_the_same_whenever_it_is_rendered_after_it_closed_except_a_restatement_it_names(
    time_machine, openai_account, support_agent, support_team, fiona
):
    two_months_of_support_usage(openai_account, support_agent)
    # A quarterly organisation cap and a monthly team cap: read as of 31 October, whatever comes after.
    stored_cap(name="Org Q4", scope=CapScope.ORG, period=CapPeriod.QUARTER, amount=Decimal("1000"))
    stored_cap(
        name="Support monthly", scope=CapScope.TEAM, team=support_team, period=CapPeriod.MONTH, amount=Decimal("350")
    )

    def render(on: dt.date) -> TcoReport:
        time_machine.move_to(dt.datetime.combine(on, dt.time(9), tzinfo=dt.UTC), tick=False)
        return tco_report(fiona, OCTOBER, today=on)

    first = render(dt.date(2026, 11, 10))
    import_usage(openai_account, month_rows(NOVEMBER, cost=Decimal("30.00"), tokens=3_000_000), "november.csv")
    later = render(dt.date(2026, 12, 20))

    same = lambda report: {k: v for k, v in report.as_json().items() if k != "generated_at"}  # noqa: E731
    assert same(first) == same(later)
    org = first.rows("org_caps")[0]
    assert org["spent"] == Decimal("387.50") and org["forecast"] is not None  # October's part of Q4, not Nov too
    support = next(r for r in first.rows("caps") if r["label"] == "Support monthly")
    assert support["forecast"] is None and support["status"] == "Over by $37.50"  # a closed month: its outcome

    import_usage(
        openai_account,
        [r for r in month_rows(OCTOBER, cost=Decimal("20.00"), tokens=2_400_000) if r.startswith(RESTATED_DAY)],
        "corrected.csv",
    )
    restated = render(dt.date(2026, 12, 21))
    changes = diff(first, restated)
    assert changes and all(
        c["delta"] == Decimal("7.50") for c in changes if c["kind"] == "money" and c["figure"] == "Spend"
    )


def test_the_preview_command_writes_exactly_the_message_it_then_sends(smtp, sent_in_october, tmp_path):
    from finops.notify.report_deliveries import month_lock, schedule_reader
    from finops.notify.report_restated import restatements

    restatements(reader=schedule_reader(), lock=month_lock, now=FIFTH)
    path = tmp_path / "cfo.eml"
    out = io.StringIO()
    call_command("report_email", "--to", "cfo@example.com", "--output", str(path), "--send", stdout=out)
    assert "Sent 1 email(s) to cfo@example.com." in out.getvalue()
    assert "Subject: TCO report, October 2026 RESTATED (version 2)" in out.getvalue()

    preview = email.message_from_bytes(path.read_bytes(), policy=email.policy.default)
    (received,) = smtp.to("cfo@example.com")[1:]
    lines = lambda text: text.replace("\r\n", "\n")  # noqa: E731 - SMTP carries CRLF line ends
    assert received["Subject"] == preview["Subject"] and received["X-FinOps-Report"] == preview["X-FinOps-Report"]
    assert lines(text_of(received)) == lines(text_of(preview)) and lines(html_of(received)) == lines(html_of(preview))
    assert pdf_of(received).get_content() == pdf_of(preview).get_content()
