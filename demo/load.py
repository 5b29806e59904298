"""The demo organisation that `make demo` loads (docs/demo.md).

load_demo() goes through the same doors as a real installation: config.yaml through config_apply
(apply_config), the generated export files through usage_file_import (import_usage), each read by its
account's connector. Loading it again for the same `today` changes no total: each import replaces what
its file covers (the days of a usage CSV, the billing month of a FOCUS file, the hours of a gateway log).
"""

import datetime as dt
import tempfile
from decimal import Decimal
from pathlib import Path

import yaml
from django.conf import settings
from django.contrib.auth.hashers import make_password
from django.db.models import Count, Sum

from finops.config import config_apply
from finops.models import Account, IngestRun, Team, UsageLine, User, Workload
from finops.sources.models import ConnectorKind
from finops.spend.services.rollups import rollup_rebuild
from finops.whatif.services import offerings_seed
from ingest.services import usage_file_import

from .contracts import contracts_load, rounded_up
from .evals import evals_load
from .generate import CAP_BREACHING_TEAM, CONFIG_PATH, SUGGESTED_MONTHLY_CAP_USD, generate, render_config, window
from .outcomes import outcomes_load
from .reports import reports_load

__all__ = ["CAP_BREACHING_TEAM", "DEMO_PASSWORD", "SUGGESTED_MONTHLY_CAP_USD", "DemoLoadError", "load_demo"]

DEMO_PASSWORD = "demo-password"


class DemoLoadError(Exception):
    """An import of the demo failed; the message names each failed file and why."""


def load_demo(*, today: dt.date, export_dir: Path | None = None) -> dict:
    """Apply the demo config, generate its export files for the window ending before `today` and import them.

    Files go to `export_dir` (kept) or a temporary directory (removed). Raises DemoLoadError if any import
    failed; the other accounts' imports stay (each import is all or nothing on its own, as in production).
    The demo's stand-in Slack answers at the demo's address while it loads (demo/slack.py).
    """
    from . import slack

    with slack.stand_in():
        return _load_demo(today=today, export_dir=export_dir)


def _load_demo(*, today: dt.date, export_dir: Path | None) -> dict:
    text = render_config(today)
    config = yaml.safe_load(text)
    # Only the variables the demo config may refer to: none, since demo accounts hold no credentials.
    # The process environment is deliberately not passed, so a stray variable cannot change the demo.
    config_apply(path=CONFIG_PATH, text=text, environ={})
    # The offerings people buy (issue 28), after the config's own so the demo's entered figures stand.
    offerings_seed()
    slack_left_out = slack_channel_load()  # before the imports: their evaluations raise what it takes

    if export_dir is not None:
        runs = _import_all(today, Path(export_dir))
    else:
        with tempfile.TemporaryDirectory(prefix="finops-demo-") as tmp:
            runs = _import_all(today, Path(tmp))
    failed = [run for run in runs if run.status != IngestRun.Status.SUCCEEDED]
    if failed:
        raise DemoLoadError(
            "The demo usage import failed for "
            + "; ".join(f"{run.account.name} ({run.file_name}): {run.error}" for run in failed)
        )

    # One hash for the demo's one published password: PBKDF2 (make demo's settings) costs ~0.25 s of CPU a hash,
    # and the five logins share the password anyway (printed on screen), so a shared salt tells nobody anything.
    hashed = make_password(DEMO_PASSWORD)
    usernames = [entry["username"] for entry in config["users"]]
    User.objects.filter(username__in=usernames).update(password=hashed)
    outcomes = outcomes_load(today=today)  # before the caps: their evaluation judges cost per outcome too
    evals_load(today=today)  # eval scores and reported metrics (issue 12), through their API services
    contracts = contracts_load(today=today)  # before the caps: their evaluation looks at the contracts too
    channels_load()  # before the evaluation: where its alerts go
    caps = caps_load(today=today)
    reports = reports_load(today=today)  # last: the report reads everything above
    return {
        **_summary(today, config, runs),
        "caps": caps,
        "contracts": contracts,
        "outcomes": outcomes,
        "scorecard": _scorecard_story(today),
        "savings": _savings_story(today),
        "reports": reports,
        "slack_left_out": slack_left_out,
    }


def _scorecard_story(today: dt.date) -> dict:
    """The quarter to date as the admin's scorecard shows it: which workloads fail their SLA, and why."""
    from finops.performance.selectors.scorecard import quarter, scorecard

    admin = User.objects.get(username="admin")
    card = scorecard(admin, quarter(None, today=today), today=today)
    failing = [(row["label"], row["verdict"]["title"]) for row in card.rows if row["verdict"]["status"] == "fails"]
    return {"quarter": card.quarter.title, "workloads": len(card.rows), "failing": failing}


def _savings_story(today: dt.date) -> dict:
    from finops.whatif.selectors import savings

    report = savings(User.objects.get(username="admin"), today)
    best = max(report.rows, key=lambda r: r.saving, default=None)
    return {
        "total": report.saving_total,
        "share": report.saving_share,
        "best": None
        if best is None or not best.saving
        else (
            best.workload.name,
            best.best.offering.label,
            best.saving,
        ),
    }


# --- caps ---

# The demo's caps are made here, through the cap service, after its usage is in: two of their amounts come from
# that usage and from the day the demo is loaded (a fixed figure in config.yaml's `caps:` would tell "forecast to
# breach" on some days and not on others).
BREACHING_CAP = "Sales Intelligence monthly"
OK_CAP = "Organisation quarterly"
FORECAST_TEAMS = ("support", "search", "data", "devprod", "marketing")  # the first whose forecast allows it
# How far over its spend a team's forecast must be for its cap to go between them: the monthly report's story
# (reports_load, after the caps) restates a day of Anthropic usage, adding ~2.5 % to Support's month; a cap set
# halfway to a forecast 5 % over the spend stays above the spend after it.
FORECAST_MARGIN = Decimal("1.05")


FINANCE_CHANNEL = "Finance email"
PLATFORM_SLACK = "Platform team Slack"


def slack_channel_load() -> str | None:
    """The platform team's Slack (issue 25), for what the platform team fixes (a source failing, a model without a
    price, a spike nobody else took), the organisation's default for those kinds; made before the imports, whose
    evaluations raise such alerts. A demo has no Slack workspace: it posts to the demo's stand-in
    (demo/slack.py, /demo/slack/), or to FINOPS_DEMO_SLACK_URL when that names a real incoming webhook. The
    egress policy refuses the stand-in's loopback address unless the demo's settings allow it: then the channel is
    left out, and the reason returned (load_demo prints it)."""
    import os

    from django.core.exceptions import ValidationError

    from finops.alerts.services.channels import channel_save
    from finops.models import AlertKind, Channel, ChannelKind

    from . import slack

    url = os.environ.get("FINOPS_DEMO_SLACK_URL", "") or (slack.hook_url() if slack.enabled() else "")
    if not url:
        return "the platform team's Slack channel is left out (FINOPS_DEMO_SLACK is off; `make demo` turns it on)"
    try:
        channel_save(
            by=None,
            channel=Channel.objects.filter(name=PLATFORM_SLACK, team=None).first(),
            name=PLATFORM_SLACK,
            kind=ChannelKind.SLACK,
            url=url,
            kinds=[AlertKind.SOURCE_FAILING, AlertKind.UNPRICED_USAGE, AlertKind.SPEND_SPIKE],
            is_default=True,
        )
    except ValidationError as exc:
        return (
            f"the platform team's Slack channel is left out: {' '.join(exc.messages)} "
            "(the demo's settings allow FINOPS_EGRESS_ALLOWED_NETWORKS=127.0.0.1/32; see docs/alerts.md)"
        )
    return None


def channels_load() -> None:
    """Finance's email list, which every contract chooses (contract alerts reach finance and each contract's owner
    through it)."""
    from finops.alerts.services.channels import channel_save
    from finops.models import Channel, ChannelKind, Contract

    owners = sorted({c.owner for c in Contract.objects.exclude(owner="")})
    finance = channel_save(
        by=None,
        channel=Channel.objects.filter(name=FINANCE_CHANNEL, team=None).first(),
        name=FINANCE_CHANNEL,
        kind=ChannelKind.EMAIL,
        addresses=["role:finance", *owners],
    )
    finance.contracts.set(Contract.objects.all())


def caps_load(*, today: dt.date) -> list[dict]:
    """Three caps with three stories, then their evaluation (an alert history, as a running installation would
    have one):

    - Sales Intelligence, $15,000 a month (SUGGESTED_MONTHLY_CAP_USD): its campaign takes it over. On the caps
      page it is breached once the month-to-date passes $15,000, and forecast to breach before that (the first
      days of a month); the alert history holds the breach either way: it is evaluated as of yesterday too, the
      last day with data, as the evaluation after that day's import would have been.
    - Support Platform (or the next team of FORECAST_TEAMS, should its figures not allow it), monthly: an amount
      between what it has spent and its forecast, whichever day `today` is, so it is "forecast to breach" and has
      not breached (neither as of yesterday, nor today).
    - The organisation, quarterly: an amount well above its forecast and twice its spend, so it is "ok".
    """
    from finops.alerts import evaluate as evaluations
    from finops.alerts.selectors.caps import cap_status
    from finops.alerts.services.spend_changes import SpendChange
    from finops.tasks import deliver_alerts

    yesterday = today - dt.timedelta(days=1)
    sales = Team.objects.get(slug=CAP_BREACHING_TEAM)
    breaching = _cap(
        BREACHING_CAP,
        scope="team",
        team=sales,
        amount=SUGGESTED_MONTHLY_CAP_USD,
        recipients=["role:team_leads", "role:finance"],
    )
    forecast = _forecast_cap(today, yesterday)
    whole = _cap(
        OK_CAP, scope="org", period="quarter", amount=Decimal(1), recipients=["role:finance", "finops@demo.example"]
    )
    # As of yesterday too: on the first day of a quarter that is the previous quarter, spent in full.
    statuses = (cap_status(whole, today=today), cap_status(whole, today=yesterday))
    highest = max(max(s.spent * 2, s.forecast or s.spent) for s in statuses)
    whole = _cap(OK_CAP, scope="org", amount=rounded_up(highest * Decimal("1.2"), Decimal(10_000)))

    # The breaching team as of yesterday (its month may have ended then), then everything as of today.
    evaluations.alerts_evaluate(
        change=SpendChange(days=(yesterday,), reason="demo", team_ids=(sales.id,)), today=yesterday
    )
    evaluations.alerts_evaluate(today=today)
    deliver_alerts.delay()  # inline in the demo: its emails print to the console (EMAIL_URL's default)
    return [_cap_line(cap, today) for cap in (breaching, forecast, whole)]


def _cap(name: str, *, scope: str, team=None, **values):
    """Create or update a demo cap through the cap service (the write path of the form, the API and config).
    Their amounts come from the generated data, so they are made here rather than in config.yaml's `caps:`."""
    from finops.alerts.services.caps import cap_create, cap_update
    from finops.models import Cap

    fields = {"scope": scope, "target": team.slug if team is not None else None, **values}
    existing = Cap.objects.filter(name=name).first()
    if existing is None:
        return cap_create(by=None, name=name, **fields)
    return cap_update(cap=existing, by=None, **fields)


def _forecast_cap(today: dt.date, yesterday: dt.date):
    """A team's monthly cap above what it has spent (as of today and as of yesterday, whose month may be the
    previous one) and below today's forecast: the middle, in whole dollars, for the first team of FORECAST_TEAMS
    whose forecast is FORECAST_MARGIN over its spend."""
    from finops.alerts.selectors.caps import cap_status
    from finops.alerts.services.caps import cap_delete
    from finops.models import Cap

    for slug in FORECAST_TEAMS:
        team = Team.objects.get(slug=slug)
        probe = Cap(id=0, name="probe", scope="team", team=team, amount=Decimal(1))  # never saved
        now, before = cap_status(probe, today=today), cap_status(probe, today=yesterday)
        spent = max(now.spent, before.spent)
        if now.forecast is not None and now.forecast > spent * FORECAST_MARGIN:
            for stale in Cap.objects.filter(
                name__endswith=" monthly", scope="team", team__slug__in=FORECAST_TEAMS
            ).exclude(team=team):
                cap_delete(cap=stale, by=None)
            return _cap(
                f"{team.name} monthly",
                scope="team",
                team=team,
                amount=((spent + now.forecast) / 2).quantize(Decimal(1)),
                recipients=["role:team_leads", f"{slug}-oncall@demo.example"],
            )
    raise DemoLoadError("no demo team is forecast above what it has spent; has the generator changed?")


def _cap_line(cap, today: dt.date) -> dict:
    from finops.alerts.selectors.caps import cap_status
    from finops.models import AlertEvent

    status = cap_status(cap, today=today)
    return {
        "name": cap.name,
        "scope": cap.scope_label(),
        "period": status.period_label,
        "amount": cap.amount,
        "spent": status.spent,
        "forecast": status.forecast,
        "status": status.status,
        "status_label": status.status_label,
        "recipients": list(cap.recipients),
        "alerts": AlertEvent.objects.filter(cap=cap).count(),
    }


def _import_all(today: dt.date, directory: Path) -> list[IngestRun]:
    files = generate(today=today, out_dir=directory)
    _drop_superseded_lines(list(files))
    runs = []
    for name, paths in files.items():
        account = Account.objects.get(name=name)
        for path in paths:  # a FOCUS export's months in order, as they were delivered
            with path.open("rb") as stream:
                run = usage_file_import(
                    account=account, stream=stream, file_name=path.name, trigger=IngestRun.Trigger.COMMAND
                )
            runs.append(run)
    return runs


def _drop_superseded_lines(names: list[str]) -> None:
    """Remove the daily usage-CSV lines an earlier demo wrote on accounts that now read another format.

    Before Bedrock, Groq and Cerebras read their own export formats, the demo imported a usage CSV
    (`<account>-usage.csv`) for each. An hourly gateway log replaces only the hours it has lines for, so
    it would leave those daily lines beside its own and count the usage twice.
    """
    stale = UsageLine.objects.filter(account__name__in=names, ingest_run__file_name__endswith="-usage.csv").exclude(
        account__connector=ConnectorKind.USAGE_CSV
    )
    touched = {
        (account_id, start.astimezone(dt.UTC).date())
        for account_id, start in stale.values_list("account_id", "period_start")
    }
    if not touched:
        return
    stale.delete()
    rollup_rebuild(days={day for _, day in touched}, account_ids=sorted({account_id for account_id, _ in touched}))


def _summary(today: dt.date, config: dict, runs: list[IngestRun]) -> dict:
    first, last = window(today)
    accounts = [entry["name"] for entry in config["accounts"]]
    lines = UsageLine.objects.filter(
        account__name__in=accounts, period_start__date__gte=first, period_start__date__lte=last
    )
    by_basis = {
        row["cost_basis"]: {"lines": row["lines"], "reporting_cost": row["spend"] or Decimal(0)}
        for row in lines.values("cost_basis").annotate(lines=Count("id"), spend=Sum("reporting_cost")).order_by()
    }
    total = lines.aggregate(spend=Sum("reporting_cost"))["spend"] or Decimal(0)
    teams = {t.slug: t.name for t in Team.objects.filter(slug__in=[e["slug"] for e in config["teams"]])}
    return {
        "window_start": first,
        "window_end": last,
        "teams": len(teams),
        "workloads": Workload.objects.filter(slug__in=[e["slug"] for e in config["workloads"]]).count(),
        "accounts": len(accounts),
        "files": _files(runs),
        "lines": sum(b["lines"] for b in by_basis.values()),
        "lines_by_basis": {basis: b["lines"] for basis, b in sorted(by_basis.items())},
        "reporting_spend_by_basis": {basis: b["reporting_cost"] for basis, b in sorted(by_basis.items())},
        "total_reporting_spend": total,
        "reporting_currency": settings.FINOPS_REPORTING_CURRENCY,
        "cap_breaching_team": CAP_BREACHING_TEAM,
        "suggested_monthly_cap": SUGGESTED_MONTHLY_CAP_USD,
        "logins": [_login(entry, teams) for entry in config["users"]],
    }


def _files(runs: list[IngestRun]) -> dict[str, list[str]]:
    files: dict[str, list[str]] = {}
    for run in runs:
        files.setdefault(run.account.name, []).append(run.file_name)
    return files


def _login(entry: dict, teams: dict[str, str]) -> dict:
    role = entry.get("role", User.Role.MEMBER)
    if role == User.Role.ADMIN:
        description = "admin: sees and configures everything"
    elif role == User.Role.FINANCE:
        description = "finance: reads everything"
    elif entry.get("team"):
        kind = "team lead" if entry.get("team_role") == "lead" else "member"
        description = f"{kind} of {teams.get(entry['team'], entry['team'])}: sees only that team"
    else:
        description = "member of no team"
    return {"username": entry["username"], "password": DEMO_PASSWORD, "role": role, "description": description}
