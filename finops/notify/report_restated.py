"""Restatements of a month already emailed (issue 24): when the month's figures change after subscribers were sent
them, the hourly `send_reports` publishes the month again and each subscriber gets one short "restated" email
(what changed, by how much, why: the sources that re-imported) with the new version attached.

When a restatement is published as a new version (docs/report-email.md, "Restatements"):
- only a month some subscriber has been sent (a delivery in state sent), among the RESTATEMENT_MONTHS last full
  months (providers restate within weeks: AWS finalises a bill early the next month, usage exports re-read days);
- only once the month's sources have settled (the live report is final, not provisional): while sources still
  re-read the month, every hour would otherwise publish a version;
- only when the live figures differ from the latest version (finops.reports.restatement.diff: an amount or a count
  differs). The report's sections are as of the month's end, so the same data gives the same figures whenever it is
  read, and a version is published only for a real change.
Publishing holds the month's advisory lock (finops.notify.report_deliveries.month_snapshot's), so two beats
publish once.

Who gets a restated email: each active subscription whose latest sent email of the month carries an older version
whose figures differ from the latest version's. One ReportDelivery per subscription × version (unique: two
workers create it once), with `restates` the version the recipient had; it is claimed, attempted and retried like
the monthly email. A recipient who skipped versions (sent v1, the month now at v3) gets one email from v1 to v3.
"""

import datetime as dt
import logging

from django.db import connection, transaction
from django.db.models import OuterRef, Subquery

from finops.contracts.selectors import add_months
from finops.core import display
from finops.core.months import month_of
from finops.models import ReportDelivery, ReportSnapshot, ReportSubscription
from finops.notify import emails
from finops.reports.restatement import diff
from finops.reports.selectors.tco_report import TcoReport, restated_sources, settled_tco_report
from finops.reports.services.reports import report_publish
from finops.reports.tco_tables import TITLES

log = logging.getLogger(__name__)

RESTATEMENT_MONTHS = 2  # the last full month and the one before it
CHANGES_SHOWN = 8  # the email lists the largest figure changes; the page and the attached PDF have them all
State = ReportDelivery.State


def watched_months(today: dt.date) -> list[dt.date]:
    """The months whose restatements are published and emailed: the RESTATEMENT_MONTHS last full months that some
    subscriber was sent."""
    months = [add_months(month_of(today), -n) for n in range(1, RESTATEMENT_MONTHS + 1)]
    sent = set(ReportDelivery.objects.filter(month__in=months, state=State.SENT).values_list("month", flat=True))
    return [month for month in months if month in sent]


def restatement_publish(
    month: dt.date, *, reader, lock, today: dt.date, now: dt.datetime, live: TcoReport | None = None
) -> ReportSnapshot | None:
    """Publish `month` again when its settled live figures differ from its latest version; the new version, or
    None. `lock(cursor, month)` takes the month's advisory lock (the one the monthly publication takes). `live` is
    the month's report as `reader` reads it at `today` and `now` when the caller has made it already (the demo's
    story, demo/reports.py): it is not made a second time."""
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                lock(cursor, month)
        latest = ReportSnapshot.objects.filter(month=month).order_by("-version").first()
        if latest is None:
            return None
        # A provisional month is not restated: its report is not made (settled_tco_report) while its sources settle.
        if live is None:
            live = settled_tco_report(reader, month, today=today, now=now)
        elif live.provisional:
            live = None
        if live is None or not diff(TcoReport.from_json(latest.figures), live):
            return None
        snapshot = report_publish(report=live, by=None)
        log.info("%s was restated: the schedule published version %s", live.key, snapshot.version)
        return snapshot


def restated_deliveries_create(month: dt.date, subscriptions=None) -> int:
    """A restated delivery for each active subscription (of `subscriptions`, default all) whose latest sent email of
    `month` has an older version than the month's latest, when their figures differ. Returns how many were created."""
    latest = ReportSnapshot.objects.filter(month=month).order_by("-version").first()
    if latest is None:
        return 0
    last_sent = (
        ReportDelivery.objects.filter(subscription=OuterRef("pk"), month=month, state=State.SENT)
        .order_by("-snapshot__version")
        .values("snapshot_id")[:1]
    )
    subscriptions = (
        (ReportSubscription.objects.all() if subscriptions is None else subscriptions)
        .filter(active=True)
        .exclude(deliveries__snapshot=latest)
        .annotate(sent_snapshot=Subquery(last_sent))
        .filter(sent_snapshot__isnull=False)
        .exclude(sent_snapshot=latest.id)
    )
    wanted = [(s, s.sent_snapshot) for s in subscriptions]
    if not wanted:
        return 0
    snapshots = ReportSnapshot.objects.in_bulk({snapshot_id for _, snapshot_id in wanted})
    new = TcoReport.from_json(latest.figures)
    differs = {
        snapshot_id: bool(diff(TcoReport.from_json(snapshot.figures), new))
        for snapshot_id, snapshot in snapshots.items()
    }
    rows = [
        ReportDelivery(subscription=s, month=month, snapshot=latest, restates_id=snapshot_id)
        for s, snapshot_id in wanted
        if differs[snapshot_id] and snapshots[snapshot_id].version < latest.version
    ]
    ReportDelivery.objects.bulk_create(rows, ignore_conflicts=True)
    return len(rows)


def restatements(*, reader, lock, now: dt.datetime) -> None:
    """The hourly part of send_reports about restatements: publish what changed, then create who must hear of it."""
    for month in watched_months(now.date()):
        restatement_publish(month, reader=reader, lock=lock, today=now.date(), now=now)
        restated_deliveries_create(month)


# --- the email ---


def restated_context(old: ReportSnapshot, new: ReportSnapshot) -> dict:
    """What the restated email says: the version the recipient had and the new one, the headline figures of both,
    the largest changes (by absolute amount) and the sources whose runs between the two read days of the month."""
    before, after = TcoReport.from_json(old.figures), TcoReport.from_json(new.figures)
    currency = after.currency
    changes = diff(before, after)
    shown = sorted(changes, key=_weight)[:CHANGES_SHOWN]
    old_total, new_total = before.summary.get("cost"), after.summary.get("cost")
    delta = None if old_total is None or new_total is None else new_total - old_total
    sources = restated_sources(old, after, until=new.generated_at)
    context = emails.report_context(after, new)
    context.update(
        {
            "restated": True,
            "old": old,
            "new": new,
            "subject": restated_subject(after, old=old, new=new, delta=delta),
            "old_total": display.money_exact(old_total, currency),
            "new_total": display.money_exact(new_total, currency),
            "total_delta": display.DASH
            if delta is None
            else ("+" if delta > 0 else "") + display.money_exact(delta, currency),
            "old_change": display.percent_change(before.summary.get("change")),
            "new_change": display.percent_change(after.summary.get("change")),
            "changes": shown,
            "changes_more": max(0, len(changes) - len(shown)),
            "changes_total": len(changes),
            "sources": sources,
        }
    )
    return context


SPEND_TABLES = [TITLES[name] for name in ("summary", "by_provider", "by_team", "by_workload")]


def _weight(change: dict) -> tuple:
    """The order the email lists changes in: the spend where a CFO reads it (the total, then by provider, team and
    workload, each by the size of the change), then every other amount by size, then counts."""
    spend = change["table"] in SPEND_TABLES and change["figure"] == "Spend"
    return (
        not spend,
        SPEND_TABLES.index(change["table"]) if spend else 0,
        change["kind"] != "money",
        -abs(change["delta"] or 0),
    )


def restated_subject(report: TcoReport, *, old: ReportSnapshot, new: ReportSnapshot, delta) -> str:
    """ "TCO report, October 2026 RESTATED: $76,062.87 (+$409.11 from version 1)"."""
    total = display.money_exact(report.summary.get("cost"), report.currency)
    moved = (
        "no change in the total"
        if not delta
        else ("+" if delta > 0 else "") + display.money_exact(delta, report.currency)
    )
    return f"TCO report, {report.label} RESTATED (version {new.version}): {total} ({moved} from version {old.version})"
