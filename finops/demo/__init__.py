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
from django.db.models import Count, Sum

from finops.models import Account, IngestRun, Team, UsageLine, User, Workload
from finops.models.sources import ConnectorKind
from finops.services.config import config_apply
from finops.services.rollups import rollup_rebuild
from ingest.services import usage_file_import

from .generate import CAP_BREACHING_TEAM, CONFIG_PATH, SUGGESTED_MONTHLY_CAP_USD, generate, render_config, window

__all__ = ["CAP_BREACHING_TEAM", "DEMO_PASSWORD", "SUGGESTED_MONTHLY_CAP_USD", "DemoLoadError", "load_demo"]

DEMO_PASSWORD = "demo-password"


class DemoLoadError(Exception):
    """An import of the demo failed; the message names each failed file and why."""


def load_demo(*, today: dt.date, export_dir: Path | None = None) -> dict:
    """Apply the demo config, generate its export files for the window ending before `today` and import them.

    Files go to `export_dir` (kept) or a temporary directory (removed). Raises DemoLoadError if any import
    failed; the other accounts' imports stay (each import is all or nothing on its own, as in production).
    """
    text = render_config(today)
    config = yaml.safe_load(text)
    # Only the variables the demo config may refer to: none, since demo accounts hold no credentials.
    # The process environment is deliberately not passed, so a stray variable cannot change the demo.
    config_apply(path=CONFIG_PATH, text=text, environ={})

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

    usernames = [entry["username"] for entry in config["users"]]
    for user in User.objects.filter(username__in=usernames):
        user.set_password(DEMO_PASSWORD)
        user.save(update_fields=["password"])
    return _summary(today, config, runs)


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
