"""The demo's monthly TCO report story (issue 14), for load_demo to call after its imports:

- the finance user (cfo) gets the report by email by default: their subscription is created as the monthly send
  would create it;
- the last full month's report is published once, as the schedule publishes it (version 1, by nobody), and sent
  to cfo through the real delivery pipeline (send now: whatever the day of the month);
- then Anthropic restates one day of that month (a line of usage it had missed: one line's requests, tokens and
  cost doubled, still at list price), imported like any corrected export through the usage CSV connector;
- the month is published again as version 2 — by the schedule's restatement rule when its sources have settled
  (finops.notify.report_restated), else by cfo as finance would from the Reports page — and cfo's "restated" email is
  due: the Reports page shows the diff and "Sent to: cfo v1, v2 on its way"; Reports → subscriptions → Preview
  email shows the restated email exactly as it will be sent (Send now sends it).

The emails go through the configured backend; with the default console backend they are kept in memory instead
(a PDF printed as base64 helps nobody). Loading the demo again changes nothing more: the month is published only
when it has no version yet or its figures differ from the latest, the deliveries exist once, and the correction
replaces the same day with the same figures (load_demo's own import first puts the original back).
"""

import contextlib
import csv
import datetime as dt
import io
import tempfile
from decimal import Decimal
from pathlib import Path

import yaml
from django.conf import settings
from django.test.utils import override_settings
from django.utils import timezone

from finops.models import Account, IngestRun, ReportSnapshot, ReportSubscription, User
from finops.notify.report_deliveries import month_lock, month_snapshot, schedule_reader, send_now
from finops.notify.report_restated import restated_deliveries_create, restatement_publish
from finops.prices.selectors import Tokens
from finops.reports.restatement import diff
from finops.reports.selectors.tco_report import TcoReport, last_full_month, tco_report
from finops.reports.services.reports import report_publish
from finops.reports.services.subscriptions import subscriptions_default_ensure
from ingest.services import usage_file_import

from .exports import COST_QUANTUM
from .generate import generate, render_config
from .prices import PriceList

RESTATED_ACCOUNT = "anthropic-prod"
RESTATED_DAY = 14
RESTATED_SCALE = 2  # the corrected line carries twice the usage: the records the first export had missed
COUNTS = ("input_tokens", "cached_input_tokens", "cache_write_tokens", "output_tokens", "requests")


class DemoReportError(Exception):
    """The demo's restatement import failed; the message says why."""


def reports_load(*, today: dt.date) -> dict:
    """Subscribe finance, publish the last full month and email it, restate a day of it, publish the restatement.
    Returns what the summary prints."""
    subscriptions_default_ensure()
    month = last_full_month(today)
    now = timezone.now() if timezone.now().date() == today else dt.datetime.combine(today, dt.time(12), tzinfo=dt.UTC)
    snapshot = month_snapshot(month, today=today, now=now)
    with _quiet_email():
        for subscription in ReportSubscription.objects.filter(active=True):
            send_now(subscription, now)
    day, before, after = _restate(today, month.replace(day=RESTATED_DAY))
    restated = _restatement(month, today=today, now=max(now, timezone.now()))  # read after the re-import's run
    return {
        "month": month,
        "version": snapshot.version,
        "provisional": snapshot.provisional,
        "restated_account": RESTATED_ACCOUNT,
        "restated_day": day,
        "published_cost": before,
        "restated_cost": after,
        "restated_version": restated.version if restated else None,
    }


def _restatement(month: dt.date, *, today: dt.date, now: dt.datetime):
    """Version 2 of the month and the restated deliveries it makes due (left pending: the preview shows them)."""
    latest = ReportSnapshot.objects.filter(month=month).order_by("-version").first()
    reader = schedule_reader()
    live = tco_report(reader, month, today=today, now=now)
    # The schedule's rule publishes only settled figures (restatement_publish returns None for provisional ones
    # without publishing): it is asked only then, and from this same report, so the month's report is computed
    # once, not twice.
    snapshot = (
        None
        if live.provisional
        else restatement_publish(month, reader=reader, lock=month_lock, today=today, now=now, live=live)
    )
    if snapshot is None and diff(TcoReport.from_json(latest.figures), live):  # not settled: finance publishes it
        snapshot = report_publish(report=live, by=User.objects.filter(role=User.Role.FINANCE).order_by("id").first())
    restated_deliveries_create(month)
    return snapshot or ReportSnapshot.objects.filter(month=month).order_by("-version").first()


@contextlib.contextmanager
def _quiet_email():
    """The console backend would print the attached PDF as base64: keep those emails in memory instead."""
    if settings.EMAIL_BACKEND == "django.core.mail.backends.console.EmailBackend":
        with override_settings(EMAIL_BACKEND="django.core.mail.backends.locmem.EmailBackend"):
            yield
    else:
        yield


def _list_cost(today: dt.date, row: dict, day: dt.date) -> Decimal:
    """The line's tokens at the demo's list price of the day, to six decimals: exactly how every billed demo line is
    priced (demo/exports.py), so the restated line is billed at list price like the others."""
    prices = PriceList(yaml.safe_load(render_config(today)))
    every_input, cached, write, output = (int(row.get(name) or 0) for name in COUNTS[:4])
    tokens = Tokens(every_input - cached - write, cached, write, output)  # the usage CSV's input is cache-inclusive
    return prices.list_cost(row["provider"], row["model"], day, tokens).quantize(COST_QUANTUM)


def _restate(today: dt.date, day: dt.date) -> tuple[dt.date, Decimal, Decimal]:
    """Import the account's rows of `day` again with its first line's usage and cost doubled (the file replaces
    that day): the cost stays tokens × list price, as every billed demo line is."""
    with tempfile.TemporaryDirectory(prefix="finops-demo-restated-") as tmp:
        path = generate(today=today, out_dir=Path(tmp), accounts={RESTATED_ACCOUNT})[RESTATED_ACCOUNT][0]
        with path.open(newline="", encoding="utf-8") as fh:
            reader = csv.DictReader(fh)
            columns, rows = reader.fieldnames, [row for row in reader if row["day"] == f"{day:%Y-%m-%d}"]
    if not rows:
        raise DemoReportError(f"the demo has no {RESTATED_ACCOUNT} usage on {day}")
    before = Decimal(rows[0]["cost"])
    for name in COUNTS:
        if rows[0].get(name):
            rows[0][name] = str(int(rows[0][name]) * RESTATED_SCALE)
    after = _list_cost(today, rows[0], day)
    rows[0]["cost"] = str(after)
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    text = out.getvalue()
    run = usage_file_import(
        account=Account.objects.get(name=RESTATED_ACCOUNT),
        stream=io.BytesIO(text.encode()),
        file_name=f"{RESTATED_ACCOUNT}-restated-{day}.csv",
        trigger=IngestRun.Trigger.COMMAND,
    )
    if run.status != IngestRun.Status.SUCCEEDED:
        raise DemoReportError(f"the restated {RESTATED_ACCOUNT} export for {day} failed: {run.error}")
    return day, before, after
