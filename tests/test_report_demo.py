"""The demo's report story (demo/reports.py, for load_demo): the cfo subscribed by default, the last full
month published, a restatement to see; and the email of that month with every part of its summary filled."""

import datetime as dt
import re
from decimal import Decimal

from django.core import mail

from demo.load import load_demo
from demo.reports import reports_load
from finops.core import display
from finops.core.months import next_month
from finops.models import ReportSnapshot, ReportSubscription
from finops.notify.emails import REPORT_MOVERS
from finops.notify.report_deliveries import reports_send
from finops.reports.selectors.tco_report import TcoReport, tco_report
from finops.whatif.selectors import savings as savings_report
from tests.fakes.smtp_server import FakeSmtpServer
from tests.report_helpers import NOVEMBER

TODAY = dt.date(2026, 12, 5)  # November's report: the Anthropic contract's notice deadline is within its 6 months


def test_the_demo_subscribes_the_cfo_publishes_november_leaves_a_restatement_and_emails_a_full_summary(
    client_as, ada, settings, time_machine
):
    time_machine.move_to(dt.datetime(2026, 12, 5, 8, tzinfo=dt.UTC))  # the clock runs on from there
    load_demo(today=TODAY)  # cfo is emailed version 1, a day is restated, version 2 publishes it
    (message,) = [m for m in mail.outbox if m.to == ["cfo@demo.example"] and m.attachments]  # the report, its PDF
    story = reports_load(today=TODAY)  # loading the story again: no new version, the same restatement

    assert (story["month"], story["version"], story["restated_version"], story["restated_account"]) == (
        NOVEMBER,
        2,
        2,
        "anthropic-prod",
    )
    assert ReportSnapshot.objects.count() == 2
    cfo = ReportSubscription.objects.get(user__username="cfo")
    assert (cfo.email, cfo.active, cfo.day_of_month) == ("cfo@demo.example", True, 3)
    difference = (story["restated_cost"] - story["published_cost"]).quantize(Decimal("0.01"))
    assert difference > 0
    text = client_as(ada).get("/reports/2026-11/?live=1").content.decode()
    assert "No change since version 2 was published" in text and ">v1</a>" in text and ">v2</a>" in text
    (sent_version,) = re.findall(r'data-email="cfo@demo.example">.*?data-testid="version-sent">(.*?)</td>', text, re.S)
    # Loading the story again sent what it left due: cfo's one "restated" email of version 2 (the page says so).
    (restated,) = [m for m in mail.outbox if m.to == ["cfo@demo.example"] and m.attachments and m is not message]
    assert "restated" in restated.subject.lower() and sent_version == "v2 (restated from v1)"

    with FakeSmtpServer() as smtp:  # nothing is left due: no email goes out twice
        smtp.use(settings)
        reports_send(now=dt.datetime(2026, 12, 5, 9, tzinfo=dt.UTC))
    assert smtp.messages == []

    # The monthly email cfo got during the load: version 1 as published, with its full summary.
    report = TcoReport.from_json(ReportSnapshot.objects.get(version=1).figures)  # as published: not restated
    body = message.body
    money = display.money_exact
    caps, renewals = report.rows("caps"), report.rows("renewals")
    savings = [row for row in report.rows("savings") if row["saving"]]
    assert report.rows("movers") and caps and renewals and savings, "the demo's November has every part to show"
    assert f"Total spend: {money(report.summary['cost'])}" in body
    assert f"Forecast for next month: {money(report.summary['forecast_next'])}" in body
    for row in sorted(report.rows("movers"), key=lambda r: -abs(r["change"]))[:REPORT_MOVERS]:  # the largest either way
        assert row["label"] in body and money(row["change"]).lstrip("-") in body
    for row in caps[:5]:
        assert (
            f"{row['label']} ({row['scope']}, {row['period']}): {money(row['spent'])} of {money(row['amount'])}" in body
        )
    for row in renewals[:5]:
        assert (
            f"{row['label']} ({row['provider']}): renews on {row['renews_on']:%Y-%m-%d}, notice by "
            f"{row['notice_deadline']:%Y-%m-%d}" in body
        )
    assert f"Up to {money(sum(row['saving'] for row in savings))} a month" in body
    assert "priced on November 2026's spend of each workload" in body  # the basis, named
    lines = re.findall(r"^- .+ → .+: \$([\d,]+\.\d\d) a month\r?$", body, re.M)
    assert lines
    assert sum(Decimal(x.replace(",", "")) for x in lines) == sum(row["saving"] for row in savings)  # shown rows add up

    # One basis: the report's savings are priced on its calendar month, so they cover the month's attributed spend.
    fresh = tco_report(ada, NOVEMBER, today=TODAY)
    month = savings_report(ada, next_month(NOVEMBER), start=NOVEMBER)
    assert month.basis == "November 2026"
    assert month.today_total == fresh.summary["cost"] - fresh.summary["unattributed_cost"]
    assert month.saving_total == sum(s.saving for s in month.rows)
    assert all(s.saving == s.saving.quantize(Decimal("0.01")) for s in month.rows)
