"""Unsubscribe links (issue 26): re-subscribing voids the links of earlier emails, and a link expires
FINOPS_UNSUBSCRIBE_LINK_DAYS after its email; the newest email's link still unsubscribes in one click. Emails go
through a real SMTP server (aiosmtpd), the links are followed over the test client as a mail program would."""

import datetime as dt

import pytest
from django.core import signing
from django.test import Client

from finops.models import ReportSubscription
from finops.notify.report_deliveries import UNSUBSCRIBE_SALT, reports_send
from finops.reports.services.subscriptions import subscription_add, subscription_set_active
from tests.report_helpers import two_months_of_support_usage

THIRD = dt.datetime(2026, 11, 3, 8, 0, tzinfo=dt.UTC)


@pytest.fixture
def smtp(smtp, settings):
    settings.SITE_URL = "https://finops.example.com"
    return smtp


@pytest.fixture
def cfo(ada, openai_account, support_agent, time_machine):
    time_machine.move_to(THIRD, tick=False)
    two_months_of_support_usage(openai_account, support_agent)
    return subscription_add(email="cfo@example.com", by=ada)


def links(smtp) -> list[str]:
    return [
        m["List-Unsubscribe"].strip().strip("<>").removeprefix("https://finops.example.com")
        for m in smtp.to("cfo@example.com")
    ]


def one_click(link):
    return Client(enforce_csrf_checks=True).post(
        link, "List-Unsubscribe=One-Click", content_type="application/x-www-form-urlencoded"
    )


def active() -> bool:
    return ReportSubscription.objects.get(email="cfo@example.com").active


def test_resubscribing_voids_the_old_emails_link_and_the_newest_still_unsubscribes(smtp, cfo, time_machine):
    reports_send()  # October's report, on November 3rd
    assert one_click(links(smtp)[0]).status_code == 200 and not active()

    time_machine.move_to(THIRD + dt.timedelta(days=10), tick=False)
    subscription_set_active(subscription=ReportSubscription.objects.get(email="cfo@example.com"), active=True)
    time_machine.move_to(dt.datetime(2026, 12, 3, 8, tzinfo=dt.UTC), tick=False)
    reports_send()  # November's report
    old, newest = links(smtp)

    refused = one_click(old)
    assert refused.status_code == 400 and "subscribed again" in refused.content.decode()
    assert active(), "a forwarded October email must not end the new subscription"
    assert one_click(newest).status_code == 200 and not active()


def test_a_link_expires_after_the_stated_days(smtp, cfo, time_machine, settings):
    settings.FINOPS_UNSUBSCRIBE_LINK_DAYS = 90
    reports_send()
    link = links(smtp)[0]
    time_machine.move_to(THIRD + dt.timedelta(days=91), tick=False)
    expired = one_click(link)
    assert (
        expired.status_code == 400 and "expired" in expired.content.decode() and "90 days" in expired.content.decode()
    )
    assert active()
    time_machine.move_to(THIRD + dt.timedelta(days=89), tick=False)
    assert one_click(link).status_code == 200 and not active()


def test_a_link_signed_before_links_carried_their_time_answers_expired_not_500(cfo):
    legacy = signing.Signer(salt=UNSUBSCRIBE_SALT).sign(f"{cfo.id}.{'0' * 12}")
    answer = Client().get(f"/reports/unsubscribe/{legacy}/")
    assert answer.status_code == 400 and "expired" in answer.content.decode()
