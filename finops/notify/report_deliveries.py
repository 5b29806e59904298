"""The monthly TCO report by email (issue 14), sent once per subscription and month however many beat processes
and workers run. Its deliveries go through the one outbox alert events go through (finops.notify.outbox): the same
due rows, claim, lease, settle, backoff and limits; this module says what is due and what sending one is.

`reports_send()` (the hourly `send_reports` task) does two things:

1. Deliveries due: each active subscription whose day of the month (UTC) has come gets one ReportDelivery row for
   the previous month (unique subscription × month; conflicts ignored, so two processes create it once). The row
   names the month's snapshot: the latest published version, or, when none exists, one the schedule publishes
   itself (the only automatic publication). That publication holds a transaction-level advisory lock on the
   month, so two processes at once publish one version, the second one finding it.
2. Sending: each due delivery (pending, failed and due for its retry, or left `sending` past LEASE by a worker that
   died) is claimed with a conditional UPDATE by exactly one sender (the outbox). Every attempt is a
   ReportSendAttempt row, written in the outbox's settle; a failure is retried with backoff and given up after
   MAX_ATTEMPTS, or at once when retrying cannot help.
   The PDF and the summary are rendered once per snapshot and call, not per recipient.

Between the two, restatements (finops.notify.report_restated): a month already sent whose settled figures changed is
published again and each of its recipients gets one "restated" delivery, sent by the same claim and attempts.

Decisions (docs/report-email.md): only the previous month is sent (a beat that was down for months does not send a
backlog of old reports); a subscription added after its day in the month gets last month's report at the next
hour; an unsubscribed address is never sent to, even a delivery created before; a linked user who may no longer
read the report (their role changed) is not sent it (the attempt says why).
"""

import datetime as dt
import hashlib
import logging
import zlib

from django.conf import settings
from django.core import signing
from django.db import connection, transaction
from django.urls import reverse
from django.utils import timezone

from finops.contracts.selectors import add_months
from finops.core import access
from finops.core.months import month_of
from finops.models import ReportDelivery, ReportSendAttempt, ReportSnapshot, ReportSubscription, User
from finops.notify import emails
from finops.notify.base import NotifyError
from finops.notify.email import message_send
from finops.notify.outbox import Outbox
from finops.notify.report_restated import restated_context, restated_deliveries_create, restatements
from finops.reports.restatement import diff
from finops.reports.selectors.tco_report import TcoReport, tco_report
from finops.reports.services.reports import report_publish
from finops.reports.services.subscriptions import subscriptions_default_ensure

log = logging.getLogger(__name__)

State = ReportDelivery.State
UNSUBSCRIBE_SALT = "finops.reports.unsubscribe"


# --- the signed unsubscribe link ---


def _address_tag(email: str) -> str:
    return hashlib.sha256(email.lower().encode()).hexdigest()[:12]


def unsubscribe_token(subscription: ReportSubscription) -> str:
    """ "<id>.<tag of the address>:<time signed>:<signature>", signed with SECRET_KEY and its own salt. The address's
    tag makes it stop working once the address changes, and keeps the address itself out of URLs and server logs.
    A link expires FINOPS_UNSUBSCRIBE_LINK_DAYS after it was sent (90 by default: the newest monthly email's always
    works) and stops working when the address subscribes again (ReportSubscription.resubscribed_at)."""
    return signing.TimestampSigner(salt=UNSUBSCRIBE_SALT).sign(f"{subscription.id}.{_address_tag(subscription.email)}")


def unsubscribe_read(token: str) -> tuple[int, str, dt.datetime]:
    """(subscription id, address tag, when it was signed) the token names; raises signing.SignatureExpired for a
    link past its days (or signed before links carried their time) and signing.BadSignature when tampered with."""
    signer = signing.TimestampSigner(salt=UNSUBSCRIBE_SALT)
    try:
        value = signer.unsign(token, max_age=dt.timedelta(days=settings.FINOPS_UNSUBSCRIBE_LINK_DAYS))
    except ValueError:  # a validly signed link without a time: sent before links expired
        raise signing.SignatureExpired("an unsubscribe link without a time") from None
    subscription_id, _, tag = value.partition(".")
    if not subscription_id.isdigit() or not tag:
        raise signing.BadSignature("not an unsubscribe token")
    signed_at = dt.datetime.fromtimestamp(signing.b62_decode(token.rsplit(":", 2)[1]), tz=dt.UTC)
    return int(subscription_id), tag, signed_at


def unsubscribe_matches(subscription: ReportSubscription, tag: str, signed_at: dt.datetime) -> bool:
    """The link names this address, and was sent since it last subscribed (the signature's time is whole seconds)."""
    resubscribed = subscription.resubscribed_at
    return _address_tag(subscription.email) == tag and (
        resubscribed is None or signed_at >= resubscribed.replace(microsecond=0)
    )


def unsubscribe_link(subscription: ReportSubscription) -> str:
    return emails.site_link(reverse("report-unsubscribe", args=[unsubscribe_token(subscription)]))


# --- 1. deliveries due ---


def schedule_reader() -> User:
    """Whom the schedule reads the report as: the selectors scope by user, and the report finance receives is
    the whole organisation's, so an unsaved user with the finance role (never stored, never signs in)."""
    return User(username="report-schedule", role=User.Role.FINANCE)


def month_snapshot(month: dt.date, *, today: dt.date, now: dt.datetime) -> ReportSnapshot:
    """The month's latest published version; when there is none, the one this call publishes. Under a transaction-
    level advisory lock keyed by the month, so concurrent callers publish once (the others wait and find it)."""
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                month_lock(cursor, month)
        latest = ReportSnapshot.objects.filter(month=month).order_by("-version").first()
        if latest is not None:
            return latest
        report = tco_report(schedule_reader(), month, today=today, now=now)
        snapshot = report_publish(report=report, by=None)
        log.info("The schedule published the %s report as version %s", report.key, snapshot.version)
        return snapshot


# The advisory locks' first key: ours alone. Named after the module this code lived in first, so a process still
# running the old code during a deploy takes the same lock.
_LOCK_SPACE = zlib.crc32(b"finops.report_delivery") & 0x7FFFFFFF


def due_subscriptions(month: dt.date, today: dt.date):
    """Active subscriptions whose day has come this month and that have no delivery of `month` yet."""
    return (
        ReportSubscription.objects.filter(active=True, day_of_month__lte=today.day)
        .exclude(deliveries__month=month)
        .select_related("user")
    )


def deliveries_create(now: dt.datetime) -> int:
    """Create the deliveries that are due now (each once); returns how many subscriptions were due."""
    today = now.date()
    month = add_months(month_of(today), -1)
    subscriptions_default_ensure()
    due = [s for s in due_subscriptions(month, today) if s.user_id is None or _may_receive(s.user)]
    if not due:
        return 0
    snapshot = month_snapshot(month, today=today, now=now)
    ReportDelivery.objects.bulk_create(
        [ReportDelivery(subscription=s, month=month, snapshot=snapshot) for s in due], ignore_conflicts=True
    )
    return len(due)


def _may_receive(user: User) -> bool:
    return user.is_active and access.can_see_reports(user)


# --- 2. sending ---


def _attempt_record(delivery_id: int, attempt: int, error: NotifyError | None) -> None:
    ReportSendAttempt.objects.create(
        delivery_id=delivery_id,
        attempt=attempt,
        status=ReportSendAttempt.Status.FAILED if error else ReportSendAttempt.Status.SENT,
        error=str(error)[:2000] if error else "",
    )


OUTBOX = Outbox(ReportDelivery, label="report delivery", record=_attempt_record)


class _Rendered:
    """The summary and the PDF of each snapshot (and the restated summary of each pair of versions), read on first
    use in this call: once for all recipients (the PDF itself is laid out once per version, finops.reports.tco_pdf)."""

    def __init__(self):
        self._cache: dict[int, tuple[dict, bytes, str]] = {}
        self._restated: dict[tuple[int, int], dict] = {}

    def get(self, snapshot: ReportSnapshot) -> tuple[dict, bytes, str]:
        if snapshot.id not in self._cache:
            from finops.reports.tco_pdf import snapshot_pdf  # WeasyPrint loads on use

            report = TcoReport.from_json(snapshot.figures)
            self._cache[snapshot.id] = (
                emails.report_context(report, snapshot),
                snapshot_pdf(snapshot),
                f"tco-report-{report.key}-v{snapshot.version}.pdf",
            )
        return self._cache[snapshot.id]

    def context(self, delivery: ReportDelivery) -> tuple[dict, bytes, str]:
        context, pdf, filename = self.get(delivery.snapshot)
        if delivery.restates_id is None:
            return context, pdf, filename
        pair = (delivery.restates_id, delivery.snapshot_id)
        if pair not in self._restated:
            self._restated[pair] = restated_context(delivery.restates, delivery.snapshot)
        return self._restated[pair], pdf, filename


def delivery_message(delivery: ReportDelivery, rendered: "_Rendered"):
    """The email of one delivery, exactly as sent: the monthly email or, for a delivery that `restates` an earlier
    version, the restated one (finops.notify.report_restated). The preview (command and admin button) renders this
    too."""
    subscription = delivery.subscription
    context, pdf, filename = rendered.context(delivery)
    kind = f"{delivery.month:%Y-%m} v{delivery.snapshot.version}" + (
        f" restates v{delivery.restates.version}" if delivery.restates_id else ""
    )
    headers = {"X-FinOps-Report": kind}
    if delivery.id:
        headers["X-FinOps-Delivery"] = str(delivery.id)
    return emails.report_email(
        context,
        to=subscription.email,
        unsubscribe_link=unsubscribe_link(subscription),
        pdf=pdf,
        filename=filename,
        headers=headers,
    )


def deliveries_send(now: dt.datetime, *, subscription: ReportSubscription | None = None) -> list[int]:
    """Send what is due (to `subscription` only, when given); the ids of the deliveries this call sent."""
    rendered, down = _Rendered(), None
    rows = ReportDelivery.objects.filter(subscription__active=True)
    if subscription is not None:
        rows = rows.filter(subscription=subscription)

    def send(delivery_id: int) -> NotifyError | None:
        nonlocal down
        delivery = ReportDelivery.objects.select_related("subscription__user", "snapshot", "restates").get(
            id=delivery_id
        )
        error = down or _send(delivery, rendered)
        if error is not None and error.channel_down:
            down = error  # the SMTP server is unreachable: the others fail with the same error, without waiting
        return error

    return OUTBOX.send_due(now, send, rows=rows)


def _send(delivery: ReportDelivery, rendered: _Rendered) -> NotifyError | None:
    subscription = delivery.subscription
    if subscription.user_id and not _may_receive(subscription.user):
        return NotifyError(
            f"{subscription.user.username} may no longer read the report "
            f"({subscription.user.get_role_display().lower()}, active: {subscription.user.is_active})",
            permanent=True,
        )
    message = delivery_message(delivery, rendered)
    try:
        message_send(message, subscription.email)
    except NotifyError as exc:
        log.warning("The %s report to %s failed: %s", f"{delivery.month:%Y-%m}", subscription.email, exc)
        return exc
    return None


def month_lock(cursor, month: dt.date) -> None:
    """The month's transaction-level advisory lock: one publisher of a month at a time (monthly or restated)."""
    cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [_LOCK_SPACE, month.year * 100 + month.month])


def reports_send(now: dt.datetime | None = None) -> list[int]:
    """The hourly send: create what is due (the monthly emails, then the restated ones: finops.notify.report_restated),
    then send it (and any retry now due). The ids of deliveries sent."""
    now = now or timezone.now()
    deliveries_create(now)
    restatements(reader=schedule_reader(), lock=month_lock, now=now)
    return deliveries_send(now)


# --- preview and send now (manage.py report_email, the subscriptions page's buttons) ---


def next_delivery(subscription: ReportSubscription, now: dt.datetime) -> tuple[ReportDelivery | None, str]:
    """What the schedule would send `subscription` now for last month, whatever its day: (the delivery, a sentence
    saying what it is). A delivery not yet sent is that row; otherwise an unsaved one — the monthly email, or the
    restated one when a later version differs from the one they were sent. None when the latest was sent.
    Nothing is written: a month not yet published previews the figures the schedule would publish."""
    month = add_months(month_of(now.date()), -1)
    pending = (
        subscription.deliveries.filter(month=month)
        .exclude(state__in=(State.SENT, State.GAVE_UP))
        .select_related("snapshot", "restates")
        .order_by("-id")
        .first()
    )
    if pending is not None:
        state = "" if pending.state == State.PENDING else f" ({pending.get_state_display().lower()})"
        return pending, f"{_describe(pending)}, waiting to be sent{state}."
    latest = ReportSnapshot.objects.filter(month=month).order_by("-version").first()
    sent = (
        subscription.deliveries.filter(month=month, state=State.SENT)
        .select_related("snapshot")
        .order_by("-snapshot__version")
        .first()
    )
    if sent is None:
        if latest is None:
            report = tco_report(schedule_reader(), month, today=now.date(), now=now)
            latest = ReportSnapshot(
                month=month,
                version=1,
                generated_at=report.generated_at,
                provisional=report.provisional,
                figures=report.as_json(),
            )
        delivery = ReportDelivery(subscription=subscription, month=month, snapshot=latest)
        return delivery, _describe(delivery) + (
            "." if latest.pk else " (not published yet: sending publishes these figures)."
        )
    if latest.version > sent.snapshot.version and diff(
        TcoReport.from_json(sent.snapshot.figures), TcoReport.from_json(latest.figures)
    ):
        delivery = ReportDelivery(subscription=subscription, month=month, snapshot=latest, restates=sent.snapshot)
        return delivery, _describe(delivery) + "."
    return (
        None,
        f"Nothing to send: version {sent.snapshot.version} of {month:%B %Y} was sent on {sent.sent_at:%Y-%m-%d}.",
    )


def _describe(delivery: ReportDelivery) -> str:
    what = f"The {delivery.month:%B %Y} report, version {delivery.snapshot.version}"
    return what + (f", restated from version {delivery.restates.version}" if delivery.restates_id else "")


def delivery_preview(delivery: ReportDelivery):
    """The email `delivery` sends, exactly (the same function the sender calls), without sending it."""
    return delivery_message(delivery, _Rendered())


def send_now(subscription: ReportSubscription, now: dt.datetime | None = None) -> list[int]:
    """Send `subscription` what is due for last month now, whatever its day: through the same rows, claims and
    attempts as the schedule, so it is never sent twice (a second click, or the hourly run, finds it sent)."""
    now = now or timezone.now()
    month = add_months(month_of(now.date()), -1)
    if subscription.active and (subscription.user_id is None or _may_receive(subscription.user)):
        if not subscription.deliveries.filter(month=month).exists():
            snapshot = month_snapshot(month, today=now.date(), now=now)
            ReportDelivery.objects.bulk_create(
                [ReportDelivery(subscription=subscription, month=month, snapshot=snapshot)], ignore_conflicts=True
            )
        restated_deliveries_create(month, ReportSubscription.objects.filter(id=subscription.id))
    return deliveries_send(now, subscription=subscription)
