"""Helpers of the demo tests (tests/demo_story/, and the modules that read the demo)."""

import csv
import datetime as dt
from contextlib import contextmanager
from pathlib import Path

from django.db import transaction
from django.db.models import Count, Sum

from demo.generate import WINDOW_DAYS, generate, render_config
from demo.load import load_demo
from finops.config import config_apply
from finops.models import (
    Account,
    AlertEvent,
    Cap,
    DailySpend,
    FxRate,
    GatewayCacheHit,
    IngestRun,
    ModelPrice,
    OutcomeCount,
    Team,
    UsageLine,
    User,
    Workload,
)
from finops.spend.services.monthly_rollup import MEASURES as MONTHLY_MEASURES
from ingest.services import usage_file_import
from tests.conftest import reseed_reference_data
from tests.demo_snapshot import demo_loaded

TODAY = dt.date(2026, 11, 1)
LAST_DAY = TODAY - dt.timedelta(days=1)
OCTOBER = dt.date(2026, 10, 1)  # TODAY's last full month: the report's default
# The instant the report modules make October's report at (tests/test_report_pdf.py, tests/test_report_files.py,
# whose command runs then): the same figures at the same minute are the same document, laid out once a run
# (tests/conftest.py `_each_pdf_laid_out_once`), and its published version the same too.
OCTOBER_AT = dt.datetime.combine(TODAY, dt.time(9), tzinfo=dt.UTC)


def leave_lines_of_the_previous_demo(tmp: Path) -> None:
    """What a demo loaded before Groq read gateway logs left: groq-prod as a usage_csv account with daily lines.

    The line is put on a day whose gateway log has no request in its first hour, so the hourly import alone
    would leave it beside the new lines (a daily line starts at midnight).
    """
    log = generate(today=TODAY, out_dir=tmp / "files", accounts={"groq-prod"})["groq-prod"][0]
    with log.open(newline="") as fh:
        midnight_hours = {row["startTime"][:10] for row in csv.DictReader(fh) if row["startTime"][11:13] == "00"}
    day = next(d for d in (LAST_DAY - dt.timedelta(days=n) for n in range(WINDOW_DAYS)) if str(d) not in midnight_hours)
    config_apply(path=Path("demo.yaml"), text=render_config(TODAY).replace("gateway_log", "usage_csv"), environ={})
    path = tmp / "groq-prod-usage.csv"
    path.write_text(
        "day,provider,model,input_tokens,output_tokens,requests,cost,currency,project,api_key,tags\n"
        f"{day},groq,openai/gpt-oss-120b,90000000,3000000,75000,,USD,,key_ticket_triage_prod,team=support\n"
    )
    with path.open("rb") as stream:
        run = usage_file_import(account=Account.objects.get(name="groq-prod"), stream=stream, file_name=path.name)
    assert run.status == IngestRun.Status.SUCCEEDED, run.error


# The usage-line sums compared after each load: the monthly rollup's measures but its count of lines.
TOTALLED = tuple(measure for measure in MONTHLY_MEASURES if measure != "line_count")


def demo_totals() -> dict:
    """Everything a second load of the demo must leave as it is."""
    lines = UsageLine.objects.aggregate(lines=Count("id"), **{f: Sum(f) for f in TOTALLED})
    rollup = DailySpend.objects.aggregate(lines=Sum("line_count"), **{f: Sum(f) for f in TOTALLED})
    per_account = dict(UsageLine.objects.values_list("account__name").annotate(Sum("reporting_cost")).order_by())
    per_month = dict(
        UsageLine.objects.filter(account__name="bedrock-us-east-1")
        .values_list("billing_period_start")
        .annotate(Sum("reporting_cost"))
        .order_by()
    )
    counts = {m.__name__: m.objects.count() for m in (Team, Workload, Account, User, ModelPrice, FxRate)}
    caps = {cap.name: (cap.amount, tuple(cap.recipients)) for cap in Cap.objects.all()}
    alerts = sorted(AlertEvent.objects.values_list("kind", "subject", "period_start", "threshold"))
    outcomes = OutcomeCount.objects.aggregate(rows=Count("id"), outcomes=Sum("count"))
    cache_hits = GatewayCacheHit.objects.aggregate(rows=Count("id"), requests=Sum("requests"), cost=Sum("list_cost"))
    return {
        "lines": lines,
        "rollup": rollup,
        "per_account": per_account,
        "bedrock_months": per_month,
        "counts": counts,
        "caps": caps,
        "alerts": alerts,
        "outcomes": outcomes,
        "cache_hits": cache_hits,
    }


def october_report():
    """The demo's October as cfo (finance: the whole organisation) reads it at OCTOBER_AT."""
    from finops.reports.selectors.tco_report import tco_report

    return tco_report(User.objects.get(username="cfo"), OCTOBER, today=TODAY, now=OCTOBER_AT)


@contextmanager
def demo_settings(tmp: Path):
    """The settings `make demo` runs with: the stand-in Slack on (demo/slack.py) at a free local port, the
    egress policy allowing exactly that host (as the demo's .env does)."""
    import ipaddress
    import socket

    from django.test import override_settings

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with override_settings(
        FINOPS_DEMO_SLACK=True,
        FINOPS_DEMO_SLACK_LOG=str(tmp / "demo-slack.jsonl"),
        FINOPS_EGRESS_ALLOWED_NETWORKS=[ipaddress.ip_network("127.0.0.1/32")],
        SITE_URL=f"http://127.0.0.1:{port}",
    ):
        yield


@contextmanager
def demo_loaded_twice(django_db_blocker, tmp: Path, totals=lambda: None):
    """The demo loaded twice for TODAY, in a transaction rolled back afterwards (what a module's tests share).

    Before the first load, the database holds what the previous version of the demo left (daily usage-CSV
    lines on an account that now reads gateway logs): loading must not count that usage twice. `totals()` is
    read after each load.
    """
    with django_db_blocker.unblock(), demo_settings(tmp), transaction.atomic():
        reseed_reference_data()
        leave_lines_of_the_previous_demo(tmp)
        summary = load_demo(today=TODAY)
        after_first = totals()
        load_demo(today=TODAY)
        yield {"summary": summary, "after_first": after_first, "after_second": totals()}
        transaction.set_rollback(True)


@contextmanager
def demo_loaded_once(django_db_blocker, tmp_path_factory):
    """The demo loaded once for TODAY, in a transaction rolled back afterwards (a module's tests share it when
    they read the demo rather than test its loading)."""
    with django_db_blocker.unblock(), transaction.atomic():
        reseed_reference_data()
        summary = demo_loaded(TODAY, tmp_path_factory)
        yield summary
        transaction.set_rollback(True)
