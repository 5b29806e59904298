"""The demo organisation (docs/demo.md): what `make demo` loads, on Postgres and on the demo's SQLite."""

import datetime as dt
import html
import json
from collections import defaultdict
from decimal import Decimal

from django.conf import settings
from django.db import models
from django.db.models import Sum
from django.db.models.functions import TruncDate
from django.test import Client
from django.urls import reverse

from demo.exports import FIRST_MONTH_CREDIT, TAX_RATE
from demo.generate import RAMP_DAYS, SERIES, UNPRICED_MODEL, WINDOW_DAYS, price_change_day
from demo.load import CAP_BREACHING_TEAM, DEMO_PASSWORD, FORECAST_TEAMS, SUGGESTED_MONTHLY_CAP_USD
from finops.alerts.selectors.caps import cap_status
from finops.contracts.selectors import contract_status, renewals_ahead
from finops.models import (
    Account,
    AlertEvent,
    Cap,
    Contract,
    CostBasis,
    DailySpend,
    FxRate,
    GatewayCacheHit,
    IngestRun,
    ModelPrice,
    Team,
    UsageLine,
    User,
    Workload,
)
from finops.prices.selectors import PriceBook, Tokens, cost_from_price
from finops.spend.selectors.cache_hits import cache_savings
from tests.sqlite_databases import DEMO_URL, demo_sqlite, manage

TODAY = dt.date(2026, 11, 1)
FIRST_DAY, LAST_DAY = dt.date(2026, 7, 4), dt.date(2026, 10, 31)
TOKENS = ("input_tokens", "cached_input_tokens", "cache_write_tokens", "output_tokens")
SUMS = (*TOKENS, "requests", "cost", "reporting_cost")
MONTHS = [dt.date(2026, 7, 1), dt.date(2026, 8, 1), dt.date(2026, 9, 1), dt.date(2026, 10, 1)]
BEDROCK = "bedrock-us-east-1"


def test_the_demo_has_six_teams_and_workloads_of_every_latency_profile(loaded):
    assert loaded["summary"]["teams"] == 6
    slugs = set(Team.objects.values_list("slug", flat=True))
    assert slugs == {"support", "search", "devprod", "sales", "data", "marketing"}
    assert all(Team.objects.values_list("cost_center", flat=True))
    assert Workload.objects.count() >= 15
    assert set(Workload.objects.values_list("latency_profile", flat=True)) == {"realtime", "interactive", "batch"}
    assert Workload.objects.exclude(outcome_unit="").count() >= 4
    assert not Workload.objects.filter(sla_seconds__isnull=True).exists()


def test_each_provider_is_read_through_the_connector_a_real_customer_would_use_without_credentials(loaded):
    accounts = Account.objects.select_related("provider")
    assert {a.name: (a.provider.slug, a.connector) for a in accounts} == {
        "openai-prod": ("openai", "usage_csv"),  # its API connector cannot be called offline
        "anthropic-prod": ("anthropic", "usage_csv"),  # same
        "moonshot-cn": ("moonshot", "usage_csv"),  # bills in CNY: shows FX conversion
        "moonshot-gateway": ("moonshot", "litellm_api"),  # email drafts through the LiteLLM proxy: timed (issue 12),
        # a live LiteLLM source backfilled from its exported spend logs (issue 15)
        BEDROCK: ("aws-bedrock", "focus_file"),
        "groq-prod": ("groq", "gateway_log"),
        "cerebras-prod": ("cerebras", "gateway_log"),
    }
    assert not any(a.has_credentials or a.credentials_env for a in accounts)
    files = loaded["summary"]["files"]
    assert files[BEDROCK] == [f"{BEDROCK}-focus-{month:%Y-%m}.csv" for month in MONTHS]
    assert files["groq-prod"] == ["groq-prod-spend-logs.csv"]
    assert files["openai-prod"] == ["openai-prod-usage.csv"]


def test_the_litellm_gateway_shows_what_its_own_cache_served_apart_from_provider_usage(loaded):
    hits = GatewayCacheHit.objects.all()
    assert set(hits.values_list("account__name", flat=True)) == {"moonshot-gateway"}
    assert not hits.filter(signature__workload=None).exists()  # attributed like the gateway's usage lines
    workload = Workload.objects.get(slug="email-drafts")
    savings = cache_savings(start=FIRST_DAY, end=LAST_DAY, workload=workload)
    assert savings.total["requests"] == hits.aggregate(n=Sum("requests"))["n"] > 100
    assert savings.total["list_cost"] > 0  # kimi-k2.6 at list: an estimate of what the cache saved
    # Not provider usage: no usage line of the gateway is a cache hit's, and its requests are not in the lines.
    assert not UsageLine.objects.filter(account__name="moonshot-gateway", charge_category="gateway_cache_hit").exists()


def test_every_account_has_usage_on_each_of_the_120_days_ending_yesterday(loaded):
    for account in Account.objects.all():
        lines = UsageLine.objects.filter(account=account).annotate(d=TruncDate("period_start"))
        days = set(lines.values_list("d", flat=True))
        assert len(days) == WINDOW_DAYS, account.name
        assert (min(days), max(days)) == (FIRST_DAY, LAST_DAY), account.name
    assert 3_000 <= UsageLine.objects.count() <= 20_000
    # The usage an earlier demo imported as a daily usage CSV was replaced, not counted a second time.
    previous = UsageLine.objects.filter(account__name="groq-prod", ingest_run__file_name__endswith="-usage.csv")
    assert not previous.exists()


def test_daily_spend_is_a_few_thousand_dollars_and_grows_with_weekly_seasonality(loaded):
    daily = dict(DailySpend.objects.values_list("day").annotate(Sum("reporting_cost")).order_by())
    weekdays = [cost for day, cost in sorted(daily.items()) if day.weekday() < 5]
    assert Decimal(1_000) < min(weekdays) and max(weekdays) < Decimal(10_000)
    assert min(daily.values()) > Decimal(300)  # Bedrock's credit does not turn its day negative
    first_weeks, last_weeks = sum(weekdays[:10]) / 10, sum(weekdays[-10:]) / 10
    assert first_weeks * Decimal("1.4") < last_weeks
    weekend = [cost for day, cost in daily.items() if day.weekday() >= 5]
    assert sum(weekend) / len(weekend) < sum(weekdays) / len(weekdays) * Decimal("0.8")


def test_billed_estimated_and_unpriced_usage_come_from_the_providers_that_produce_them(loaded):
    bases = defaultdict(set)
    for slug, basis, currency in UsageLine.objects.values_list("provider__slug", "cost_basis", "currency").distinct():
        bases[slug].add((basis, currency))
    for slug in ("openai", "anthropic", "aws-bedrock"):
        assert bases[slug] == {(CostBasis.BILLED, "USD")}, slug
    # Moonshot's bill (the usage CSV, in CNY) and the gateway's requests (estimated) are different streams.
    assert bases["moonshot"] == {(CostBasis.BILLED, "CNY"), (CostBasis.ESTIMATED, "USD")}
    assert set(
        UsageLine.objects.filter(account__name="moonshot-cn").values_list("cost_basis", "currency").distinct()
    ) == {(CostBasis.BILLED, "CNY")}
    assert bases["groq"] == {(CostBasis.ESTIMATED, "USD")}
    assert bases["cerebras"] == {(CostBasis.ESTIMATED, "USD"), (CostBasis.UNPRICED, "USD")}
    unpriced = UsageLine.objects.filter(cost_basis=CostBasis.UNPRICED)
    assert set(unpriced.values_list("model", flat=True)) == {UNPRICED_MODEL}
    assert not unpriced.exclude(cost=None, reporting_cost=None).exists()  # never $0
    assert len(set(unpriced.annotate(d=TruncDate("period_start")).values_list("d", flat=True))) == WINDOW_DAYS
    assert loaded["summary"]["lines_by_basis"][CostBasis.UNPRICED] == unpriced.count() > WINDOW_DAYS  # hourly


def test_billed_amounts_are_list_price_to_six_decimals(loaded):
    books = {}
    billed = UsageLine.objects.filter(
        provider__slug__in=["openai", "anthropic", "aws-bedrock"], charge_category="usage"
    ).select_related("provider")
    assert billed.filter(provider__slug="aws-bedrock").count() > 3 * WINDOW_DAYS
    for line in billed:
        assert line.cost == line.cost.quantize(Decimal("0.000001"))
        if line.provider_id not in books:
            books[line.provider_id] = PriceBook.for_provider(line.provider)
        book = books[line.provider_id]
        tokens = Tokens(line.input_tokens, line.cached_input_tokens, line.cache_write_tokens, line.output_tokens)
        list_cost = cost_from_price(book.price_on(line.model, line.period_start.date()), tokens)
        assert abs(line.cost - list_cost) <= Decimal("0.0000005")


def test_moonshot_cny_amounts_are_converted_with_the_rate_of_their_day(loaded):
    rates = list(FxRate.objects.filter(currency="CNY").order_by("-day").values_list("day", "rate"))
    assert rates[-1][0] <= FIRST_DAY
    lines = UsageLine.objects.filter(currency="CNY")
    assert lines.count() == WINDOW_DAYS * sum(s.account == "moonshot-cn" for s in SERIES)
    for line in lines:
        day = line.period_start.date()
        rate = next(rate for rate_day, rate in rates if rate_day <= day)
        assert line.reporting_cost == line.cost * rate
        assert line.reporting_cost < line.cost / 5  # converted, never taken 1:1


def test_the_kimi_price_cut_lowers_its_cost_per_million_tokens_from_the_day_it_applies(loaded):
    cut = price_change_day(TODAY)
    assert cut == LAST_DAY - dt.timedelta(days=45)
    assert ModelPrice.objects.filter(provider__slug="moonshot", model="kimi-k2.6", effective_from=cut).exists()
    lines = UsageLine.objects.filter(provider__slug="moonshot", model="kimi-k2.6")
    tokens = sum((Sum(f) for f in TOKENS[1:]), Sum(TOKENS[0]))

    def usd_per_mtok(qs):
        agg = qs.aggregate(cost=Sum("reporting_cost"), tokens=tokens)
        return agg["cost"] / agg["tokens"] * 1_000_000

    before = usd_per_mtok(lines.filter(period_start__date__lt=cut))
    after = usd_per_mtok(lines.filter(period_start__date__gte=cut))
    assert after < before * Decimal("0.8")
    last_day_before = lines.filter(period_start__date=cut - dt.timedelta(days=1))
    first_day_after = lines.filter(period_start__date=cut)
    assert usd_per_mtok(first_day_after) < usd_per_mtok(last_day_before) * Decimal("0.8")


def test_the_cap_breaching_team_ramps_up_steeply_in_the_last_three_weeks(loaded):
    # Lines are not attributed yet (no rules in the demo); its project says whose they are.
    daily = dict(
        UsageLine.objects.filter(project_ref=f"proj_{CAP_BREACHING_TEAM}")
        .annotate(d=TruncDate("period_start"))
        .values_list("d")
        .annotate(Sum("reporting_cost"))
        .order_by()
    )
    ramp_start = LAST_DAY - dt.timedelta(days=RAMP_DAYS - 1)
    ramp = [cost for day, cost in daily.items() if day >= ramp_start]
    earlier = [cost for day, cost in daily.items() if day < ramp_start]
    assert len(ramp) == RAMP_DAYS
    assert sum(ramp) / len(ramp) > 2 * sum(earlier) / len(earlier)
    last_30 = sum(cost for day, cost in daily.items() if day > LAST_DAY - dt.timedelta(days=30))
    before_ramp_30 = sum(cost for day, cost in daily.items() if ramp_start - dt.timedelta(days=30) <= day < ramp_start)
    assert before_ramp_30 < SUGGESTED_MONTHLY_CAP_USD < last_30


def test_the_daily_rollup_equals_the_usage_lines_per_day_account_and_model(loaded):
    measures = {f: Sum(f) for f in SUMS}
    raw = {
        (r.pop("d"), r.pop("account_id"), r.pop("model")): r
        for r in UsageLine.objects.annotate(d=TruncDate("period_start"))
        .values("d", "account_id", "model")
        .annotate(**measures)
        .order_by()
    }
    rolled = {
        (r.pop("day"), r.pop("account_id"), r.pop("model")): r
        for r in DailySpend.objects.values("day", "account_id", "model").annotate(**measures).order_by()
    }
    assert rolled == raw
    assert len(raw) >= 2_000


def test_bedrock_is_read_from_one_focus_export_per_billing_month_with_a_tax_or_credit_row_each(loaded):
    lines = UsageLine.objects.filter(account__name=BEDROCK)
    for line in lines:
        month = line.period_start.date().replace(day=1)
        assert line.billing_period_start == dt.datetime.combine(month, dt.time(), tzinfo=dt.UTC), line.period_start
    assert sorted(d.date() for d in lines.values_list("billing_period_start", flat=True).distinct()) == MONTHS
    usage = lines.filter(charge_category="usage")
    # One line per day × stream × token direction: exactly one of the four token classes.
    for row in usage.values(*TOKENS):
        assert sum(1 for f in TOKENS if row[f]) == 1, row
    assert all(usage.filter(**{f"{f}__gt": 0}).exists() for f in TOKENS)
    models = {"claude-haiku-4-5", "claude-sonnet-4-5", "nova-pro", "nova-lite"}
    assert set(usage.values_list("model", flat=True)) == models
    for line in usage.filter(period_start__date=LAST_DAY).select_related("tag_set"):  # its tags: one query
        # Tags of the workload's application inference profile; the project from SubAccountId; the model from
        # the usage type (USE1-Claude4.5Haiku-input-tokens → claude-haiku-4-5).
        team, workload, env = line.tags["team"], line.tags["workload"], line.tags["env"]
        assert line.project_ref == f"proj_{team}" and line.tags["resource"] == f"{workload}-{env}"
        assert line.tags["meter"].startswith("USE1-") and line.tags["x_ServiceCode"] == "AmazonBedrock"
        assert line.model_raw == line.model
    others = {
        (line.billing_period_start.date(), line.charge_category): line
        for line in lines.exclude(charge_category="usage")
    }
    assert set(others) == {(MONTHS[0], "credit"), *((month, "tax") for month in MONTHS[1:])}
    for (month, category), line in others.items():
        month_usage = usage.filter(billing_period_start__date=month).aggregate(s=Sum("cost"))["s"]
        expected = -FIRST_MONTH_CREDIT if category == "credit" else month_usage * TAX_RATE
        assert abs(line.cost - expected) <= Decimal("0.005"), (month, category)
        assert line.model == "" and line.project_ref == "" and line.cost_basis == CostBasis.BILLED
    assert others[(MONTHS[0], "credit")].period_start.date() == FIRST_DAY  # the window starts inside July


def test_reloading_restates_each_bedrock_month_and_changes_no_total(loaded):
    runs = IngestRun.objects.filter(account__name=BEDROCK).order_by("id")
    assert runs.count() == 2 * len(MONTHS)
    assert {run.status for run in runs} == {IngestRun.Status.SUCCEEDED}
    by_file = defaultdict(list)
    for run in runs:
        by_file[run.file_name].append(run)
    assert sorted(by_file) == [f"{BEDROCK}-focus-{month:%Y-%m}.csv" for month in MONTHS]
    for first, second in by_file.values():
        assert first.lines_written == second.lines_written == second.lines_replaced > 0
    assert loaded["after_second"]["bedrock_months"] == loaded["after_first"]["bedrock_months"]
    assert len(loaded["after_first"]["bedrock_months"]) == len(MONTHS)


def test_the_bedrock_exports_are_whole_account_exports_and_say_what_they_left_out(loaded):
    """EC2, S3, a Savings Plan fee and the tax on EC2 beside Bedrock: left out, counted, shown on the Sources page."""
    lines = UsageLine.objects.filter(account__name=BEDROCK)
    assert not lines.filter(tag_set__tags__x_ServiceCode__in=["AmazonEC2", "AmazonS3"]).exists()
    assert set(lines.values_list("tag_set__tags__x_ServiceCode", flat=True)) == {"AmazonBedrock"}
    for run in IngestRun.objects.filter(account__name=BEDROCK):
        month = dt.datetime.fromisoformat(run.file_name.removesuffix(".csv")[-7:] + "-01T00:00:00+00:00")
        days = {line.period_start.date() for line in lines.filter(billing_period_start=month, charge_category="usage")}
        assert days
        services = {entry["service"]: entry for entry in run.left_out["services"]}
        assert set(services) == {
            "Amazon Elastic Compute Cloud",
            "Amazon Simple Storage Service",
            "Savings Plans for AWS Compute usage",
        }
        assert run.left_out["rows"] == 2 * len(days) + 2
        assert services["Amazon Elastic Compute Cloud"]["rows"] == len(days) + 1  # a day each and the month's tax
        assert {entry["reason"] for entry in services.values()} == {"not LLM inference"}
        assert run.left_out_summary.startswith(f"left out {run.left_out['rows']} rows, $")

    client = Client(HTTP_HOST="127.0.0.1")
    client.post(reverse("login"), {"username": "admin", "password": "demo-password"})
    page = client.get(reverse("source-list")).content.decode()
    latest = IngestRun.objects.filter(account__name=BEDROCK).order_by("-finished_at").first()
    assert f"Last import {latest.left_out_brief}" in html.unescape(page)


def test_loading_the_demo_a_second_time_changes_no_total(loaded):
    assert loaded["after_second"] == loaded["after_first"]
    assert loaded["after_first"]["lines"]["lines"] == loaded["summary"]["lines"]
    assert loaded["after_first"]["lines"]["reporting_cost"] == loaded["summary"]["total_reporting_spend"]


def test_the_demo_has_a_breaching_a_forecast_to_breach_and_an_ok_cap_and_an_alert_history(loaded):
    yesterday = TODAY - dt.timedelta(days=1)  # TODAY is the 1st: yesterday ends October, the last month with data
    sales = Cap.objects.get(team__slug=CAP_BREACHING_TEAM)
    assert (sales.scope, sales.period, sales.amount) == ("team", "month", SUGGESTED_MONTHLY_CAP_USD)
    assert cap_status(sales, today=yesterday).status == "breached"
    assert cap_status(sales, today=TODAY).status == "forecast"  # November has no spend yet; its forecast is over
    breach = AlertEvent.objects.get(cap=sales, kind="cap_threshold", threshold=100)
    assert breach.period_start == dt.date(2026, 10, 1) and breach.title.startswith("Sales Intelligence at ")

    # Support Platform, or the next team of FORECAST_TEAMS whose forecast allows the story on this day (the 1st:
    # November's forecast starts from October's days, by day of week, so it need not top October's spend).
    forecast = Cap.objects.get(scope="team", period="month", team__slug__in=FORECAST_TEAMS)
    for day in (yesterday, TODAY):  # under its amount in October and in November, over it in November's forecast
        assert cap_status(forecast, today=day).spent < forecast.amount
    assert cap_status(forecast, today=TODAY).status == "forecast"
    assert AlertEvent.objects.filter(cap=forecast, kind="cap_forecast", period_start=dt.date(2026, 11, 1)).exists()
    assert not AlertEvent.objects.filter(cap=forecast, kind="cap_threshold", threshold__gte=100).exists()

    whole = Cap.objects.get(scope="org")
    assert whole.period == "quarter"
    assert cap_status(whole, today=TODAY).status == cap_status(whole, today=yesterday).status == "ok"
    assert not AlertEvent.objects.filter(cap=whole).exists()

    assert Cap.objects.count() == 3
    recipients = {r for cap in Cap.objects.all() for r in cap.recipients}
    assert {"role:team_leads", "role:finance"} <= recipients and any("@" in r for r in recipients)
    assert [(c["name"], c["status"]) for c in loaded["summary"]["caps"]] == [
        (sales.name, "forecast"),
        (forecast.name, "forecast"),
        (whole.name, "ok"),
    ]


def test_the_demo_sends_contract_alerts_to_finance_by_a_channel_and_each_cap_by_its_own_channels(loaded):
    """Issue 25: the finance email channel takes every contract's alerts, and they were delivered through it; each
    demo cap's recipients are its own email channel, which migration 0034 would have made of them (running it on
    the demo changes nothing) and which tells the same people the recipients named before channels."""
    import importlib

    from django.apps import apps

    from demo.load import FINANCE_CHANNEL
    from finops.models import Channel, Notification
    from finops.notify.recipients import event_targets
    from tests.test_channels_defaults import cap_recipients_before

    finance = Channel.objects.get(name=FINANCE_CHANNEL, team=None)
    assert set(finance.contracts.all()) == set(Contract.objects.all())
    delivered = Notification.objects.filter(via=finance, status="sent").select_related("event")
    assert delivered.exists() and {n.event.kind for n in delivered} <= {
        "contract_notice",
        "contract_shortfall",
        "contract_overage",
    }
    cap_events = list(AlertEvent.objects.exclude(cap=None).select_related("cap"))
    assert cap_events
    before = {e.id: sorted((t.channel, t.recipient) for t in event_targets(e)) for e in cap_events}
    channels = Channel.objects.count()
    importlib.import_module("finops.migrations.0034_cap_recipients_and_webhooks_to_channels").caps_to_channels(
        apps, None
    )
    assert Channel.objects.count() == channels
    for event in cap_events:
        assert sorted((t.channel, t.recipient) for t in event_targets(event)) == before[event.id]
        emailed = {t.recipient.lower() for t in event_targets(event) if t.channel == "email"}
        assert emailed == cap_recipients_before(event)  # the people the cap's recipients named before channels
    for cap in Cap.objects.all():
        own = Channel.objects.get(for_cap=cap, kind="email")
        assert own.addresses == cap.recipients and cap in own.caps.all()


def test_the_demo_has_a_slack_channel_for_the_platform_team_and_an_email_channel_for_finance_both_delivered(
    loaded, client_as
):
    """Issue 25: the platform team's Slack posts to the demo's stand-in (/demo/slack/), which the demo's settings
    allow on loopback; its alerts were delivered (sent) and show on /alerts/; finance's email channel too."""
    from demo import slack
    from demo.load import FINANCE_CHANNEL, PLATFORM_SLACK
    from finops.models import Channel, Notification

    assert loaded["summary"]["slack_left_out"] is None
    platform = Channel.objects.get(name=PLATFORM_SLACK, team=None, is_default=True, kind="slack")
    assert platform.url_label == settings.SITE_URL + "/…"
    to_slack = Notification.objects.filter(via=platform, status="sent").select_related("event")
    assert to_slack.exists()
    posted = [m["payload"] for m in slack.received()]
    # Each delivery posted once per load (the demo is loaded twice: its events are raised once).
    assert sorted(p["text"].removeprefix("[FinOps] ") for p in posted) == sorted(n.event.title for n in to_slack)
    assert all(p["blocks"][0]["type"] == "header" for p in posted)
    to_finance = Notification.objects.filter(via__name=FINANCE_CHANNEL, channel="email", status="sent")
    assert to_finance.exists()

    admin = client_as(User.objects.get(username="admin"))
    alerts = admin.get("/alerts/").content.decode()
    assert f"Slack · {settings.SITE_URL}/…" in alerts and to_slack[0].event.title in html.escape(alerts, False)
    page = admin.get("/demo/slack/").content.decode()
    assert html.escape(to_slack[0].event.title) in page
    channels = admin.get("/alerts/channels/").content.decode()
    assert PLATFORM_SLACK in channels and FINANCE_CHANNEL in channels and "/demo/slack/hook" not in channels


def test_migration_0037_on_the_demo_tells_the_same_people_as_the_rules_did(loaded):
    """The demo's rows as they were before 0037 (no default channel it makes): the old rules' recipients for every
    alert equal what the default channels it makes tell."""
    from django.apps import apps

    from tests.test_channels_defaults import _migration, after_targets, as_before_the_migration, before_targets

    events = list(AlertEvent.objects.select_related("cap", "contract", "team"))
    assert {e.kind for e in events} >= {"cap_threshold", "outcome_cost", "unpriced_usage", "contract_notice"}
    as_before_the_migration()
    before = {e.id: before_targets(e) for e in events}
    _migration().default_channels(apps, None)
    assert {e.id: after_targets(e) for e in events} == before


def test_the_demo_has_a_shortfall_renewing_soon_a_contract_on_track_and_a_monthly_commitment_going_over(loaded):
    anthropic = Contract.objects.get(name="Anthropic enterprise")
    status = contract_status(anthropic, today=TODAY)
    assert status.status == "shortfall" and status.shortfall > 0
    assert anthropic.auto_renew and 0 <= status.days_to_notice_deadline < 183
    assert [s.contract.name for s in renewals_ahead(today=TODAY)][0] == "Anthropic enterprise"
    assert status.renewal_advice is not None and status.renewal_advice < anthropic.commitment
    assert [a.name for a in anthropic.accounts.all()] == ["anthropic-prod"]

    openai = contract_status(Contract.objects.get(name="OpenAI scale tier"), today=TODAY)
    assert openai.status == "on_track" and openai.projected > 0

    bedrock = Contract.objects.get(name="Bedrock monthly commit")
    monthly = contract_status(bedrock, today=TODAY)
    assert bedrock.commitment_basis == "monthly" and len(monthly.periods) == 12
    assert monthly.status == "overage" and monthly.overage > 0

    assert Contract.objects.count() == 3  # loading twice updates them
    assert [(c["name"], c["status"]) for c in loaded["summary"]["contracts"]] == [
        ("Anthropic enterprise", "shortfall"),
        ("OpenAI scale tier", "on_track"),
        ("Bedrock monthly commit", "overage"),
    ]


def test_the_demo_users_sign_in_with_the_demo_password_and_have_their_roles(loaded):
    users = {u.username: u for u in User.objects.prefetch_related("memberships__team")}
    assert users["admin"].role == "admin" and users["admin"].is_superuser
    assert users["cfo"].role == "finance" and not users["cfo"].is_staff
    leads = {u.memberships.get().team.slug for u in users.values() if u.role == "member"}
    assert {"support", CAP_BREACHING_TEAM} <= leads
    assert all(u.check_password(DEMO_PASSWORD) for u in users.values())
    assert {login["username"] for login in loaded["summary"]["logins"]} == set(users)


OVERVIEW_SCRIPT = r"""
import datetime as dt, json, re
import time_machine
from django.db.models import Sum
from django.test import Client
from django.urls import reverse
from finops.models import DailySpend
from finops.core.display import money_compact as money

result = {}
# What the overview's "last 30 days" figure must say, in the page's own number format.
last_30 = DailySpend.objects.filter(day__gte=dt.date(2026, 10, 2), day__lt=dt.date(2026, 11, 1))
result["expected_last_30_days"] = money(last_30.aggregate(s=Sum("reporting_cost"))["s"])
# The demo was loaded for --today 2026-11-01; the overview reads the clock, so look at it on that day.
with time_machine.travel(dt.datetime(2026, 11, 1, 12, tzinfo=dt.UTC), tick=False):
    client = Client(HTTP_HOST="127.0.0.1")  # the demo's ALLOWED_HOSTS, as a browser on runserver sends it
    signed_in = client.post(reverse("login"), {"username": "admin", "password": "demo-password"})
    result["login_status"] = signed_in.status_code
    result["login_redirect"] = signed_in.get("Location", "")
    page = client.get("/")
    result["status"] = page.status_code
    body = page.content.decode()
    result["amounts"] = re.findall(r"\$[0-9][0-9,.]*[kMB]?", body)
    result["shows_last_30_days"] = result["expected_last_30_days"] in body
    result["mentions_unpriced"] = "unpriced" in body.lower()
    # Explore's filter lists are raw SQL (a recursive skip-scan for the models): they must parse on SQLite too.
    explore = client.get("/explore/")
    result["explore_status"] = explore.status_code
    models = re.search(r'<select[^>]*name="model"[^>]*>(.*?)</select>', explore.content.decode(), re.S)
    result["explore_models"] = len(re.findall(r'<option value="[^"]+"', models.group(1))) if models else 0
print("RESULT " + json.dumps(result))
"""


def test_the_demo_loads_on_sqlite_and_the_admin_sees_spend_on_the_overview(tmp_path, tmp_path_factory, demo):
    database = tmp_path / "demo.sqlite3"
    out = demo_sqlite(tmp_path_factory, database)  # make demo PORT=18200: migrate, then load_demo
    assert "2026-07-04 to 2026-10-31" in out
    # The same lines and the same money as the Postgres load of this module.
    postgres = demo["summary"]
    assert f"6 teams, 19 workloads, 7 accounts, {postgres['lines']:,} usage lines" in out
    assert f"total spend: {postgres['total_reporting_spend']:,.2f} USD" in out
    assert f"Open {DEMO_URL} and sign in as:" in out
    # The emails the load sends (printed by the console backend) link to where the demo is served (issue 24).
    assert f"{DEMO_URL}/caps/" in out and f"{DEMO_URL}/contracts/" in out
    assert "127.0.0.1:8000" not in out
    for login in ("admin        / demo-password", "cfo          / demo-password", "sales-lead   / demo-password"):
        assert login in out
    assert "team lead of Sales Intelligence" in out
    assert "Sales Intelligence monthly" in out and "Organisation quarterly" in out and ": OK (0 alerts)" in out

    result_line = next(
        line
        for line in manage(database, "shell", "-c", OVERVIEW_SCRIPT).stdout.splitlines()
        if line.startswith("RESULT ")
    )
    result = json.loads(result_line.removeprefix("RESULT "))
    assert result["login_status"] == 302 and result["login_redirect"] == "/", result
    assert result["status"] == 200, result
    assert any(amount.strip("$0.,") for amount in result["amounts"]), result  # a non-zero dollar figure
    assert result["shows_last_30_days"], result  # the demo's spend of the last 30 days, e.g. "$95.3k"
    assert result["mentions_unpriced"], result
    assert result["explore_status"] == 200 and result["explore_models"] >= 5, result  # the demo's models to filter by


def test_the_demo_attributes_everything_but_the_personal_sandbox_key(loaded):
    unattributed = UsageLine.objects.filter(signature__workload__isnull=True)
    # Usage from the untagged personal key, and Bedrock's monthly tax and credit, which no workload incurred.
    assert set(unattributed.filter(charge_category="usage").values_list("api_key_ref", flat=True)) == {
        "key_personal_jdoe_sandbox"
    }
    assert set(unattributed.exclude(charge_category="usage").values_list("charge_category", flat=True)) == {
        "tax",
        "credit",
    }
    assert UsageLine.objects.filter(signature__workload__isnull=False).count() > 0.9 * UsageLine.objects.count()
    assert (
        UsageLine.objects.filter(api_key_ref="key_document_extraction_staging")
        .exclude(signature__workload__slug="document-extraction")
        .count()
        == 0
    )
    # every line's team is its workload's team, and the rollup agrees
    assert (
        not UsageLine.objects.filter(signature__workload__isnull=False)
        .exclude(signature__team=models.F("signature__workload__team"))
        .exists()
    )
    by_team_raw = dict(
        UsageLine.objects.values_list("signature__team__slug").annotate(s=Sum("reporting_cost")).order_by()
    )
    by_team_rolled = dict(DailySpend.objects.values_list("team__slug").annotate(s=Sum("reporting_cost")).order_by())
    assert by_team_raw == by_team_rolled


def test_a_team_leads_pages_show_the_teams_cap_and_its_share_of_the_bedrock_tax(loaded):
    """The demo's sales lead opens the team page and the overview: the Sales cap is there as on /caps/, breached or
    forecast to breach; the team's share of October's Bedrock sales tax is its own line, and the shares of all
    teams add up to the tax billed (no rule could claim it: it is allocated, not left unattributed)."""
    from finops.spend.selectors.shared_charges import shared_charges

    sales = Team.objects.get(slug=CAP_BREACHING_TEAM)
    cap = Cap.objects.get(team=sales)
    lead = Client()
    lead.force_login(User.objects.get(username=f"{CAP_BREACHING_TEAM}-lead"))
    for url in (reverse("team-detail", args=[sales.slug]), reverse("overview")):
        page = lead.get(url, {"period": "2026-10"}).content.decode()
        assert f'data-cap="{html.escape(cap.name)}"' in page, url

    october = shared_charges(dt.date(2026, 10, 1), dt.date(2026, 11, 1))
    billed = DailySpend.objects.filter(
        account__name=BEDROCK, day__gte="2026-10-01", day__lt="2026-11-01", charge_category="tax"
    ).aggregate(Sum("reporting_cost"))["reporting_cost__sum"]
    assert billed and october.charges == billed.quantize(Decimal("0.01"))
    assert sum(row.allocated for row in october.rows) == october.charges
    share = october.share(sales.id)
    assert share and share.allocated > 0 and set(share.by_category) == {"Tax"}
    page = lead.get(reverse("team-detail", args=[sales.slug]), {"period": "2026-10"}).content.decode()
    assert f'data-testid="team-shared-amount">${share.allocated:,.2f}<' in page
