import datetime as dt
import os
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from demo.load import DemoLoadError, load_demo


class Command(BaseCommand):
    help = (
        "Load the demo organisation (docs/demo.md): 6 teams, their workloads, 6 provider accounts and 120 days "
        "of usage ending yesterday (UTC), imported like any usage file. Running it again changes no total."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--today", type=dt.date.fromisoformat, help="Pretend today is YYYY-MM-DD (UTC); default: today."
        )
        parser.add_argument("--export-dir", type=Path, help="Keep the generated export files in this directory.")
        parser.add_argument(
            "--url",
            default="http://127.0.0.1:8000",
            help="Where the demo is served: the message, and the links of the emails it sends "
            "(unless SITE_URL is set).",
        )
        parser.add_argument(
            "--force",
            action="store_true",
            help="Load even though DEBUG is off. The demo users, an admin among them, have a published password.",
        )

    def handle(self, *args, today, export_dir, url, force, **options):
        if not settings.DEBUG and not force:
            raise CommandError(
                "DEBUG is off, so this looks like a real installation: the demo creates an admin whose password is "
                "published (demo-password). Use --force to load it anyway."
            )
        if "SITE_URL" not in os.environ:  # set by the operator (or the .env): theirs wins
            # The load sends the demo's emails (caps, contracts, the report): they link to where it is served
            # (`make demo PORT=18200` passes --url), as the served demo's own do (settings.served_site_url).
            settings.SITE_URL = url.rstrip("/")
        today = today or timezone.now().astimezone(dt.UTC).date()
        try:
            summary = load_demo(today=today, export_dir=export_dir)
        except DemoLoadError as exc:
            raise CommandError(str(exc)) from exc
        self._print_summary(summary, export_dir, url)

    def _print_summary(self, s: dict, export_dir: Path | None, url: str) -> None:
        out, currency = self.stdout.write, s["reporting_currency"]
        out(self.style.SUCCESS(f"Demo organisation loaded: {s['window_start']} to {s['window_end']} (UTC)."))
        out(f"  {s['teams']} teams, {s['workloads']} workloads, {s['accounts']} accounts, {s['lines']:,} usage lines")
        for basis, lines in s["lines_by_basis"].items():
            spend = s["reporting_spend_by_basis"][basis]
            amount = "no known price (never counted as $0)" if basis == "unpriced" else f"{spend:,.2f} {currency}"
            out(f"    {basis:<9} {lines:>6,} lines  {amount}")
        out(f"  total spend: {s['total_reporting_spend']:,.2f} {currency}")
        out(f"  caps ({currency}), as of today:")
        for cap in s["caps"]:
            forecast = "no forecast" if cap["forecast"] is None else f"forecast {cap['forecast']:,.0f}"
            out(
                f"    {cap['name']:<28} {cap['amount']:>10,.0f} a {cap['period']:<14} spent {cap['spent']:>10,.0f}, "
                f"{forecast}: {cap['status_label']} ({cap['alerts']} alert{'s' if cap['alerts'] != 1 else ''})"
            )
        out(f"  contracts ({currency}), as of today:")
        for c in s["contracts"]:
            renewal = f", renews unless notice by {c['notice_deadline']}" if c["auto_renew"] else ""
            advice = f" (renew at or below {c['renewal_advice']:,.0f})" if c["renewal_advice"] is not None else ""
            out(
                f"    {c['name']:<28} {c['committed']:>10,.0f} committed, projected {c['projected']:>10,.0f}: "
                f"{c['status_label']}{renewal}{advice}"
            )
        card = s["scorecard"]
        out(f"  scorecard, {card['quarter']}: {card['workloads']} workloads, {len(card['failing'])} failing their SLA")
        for name, why in card["failing"]:
            out(f"    {name}: {why}")
        saving = s["savings"]
        if saving["share"] is not None:
            out(f"  routing savings: {saving['total']:,.2f} {currency} a month ({saving['share']:.1%} less than today)")
        if saving["best"]:
            name, offering, amount = saving["best"]
            out(f"    biggest: {name} on {offering}, {amount:,.2f} {currency} a month")
        report = s["reports"]
        out(
            f"  TCO report {report['month']:%B %Y}: published as version {report['version']}"
            f"{' (provisional)' if report['provisional'] else ''}; then {report['restated_account']} restated "
            f"{report['restated_day']} ({report['published_cost']:,.2f} → {report['restated_cost']:,.2f})"
            f"; cfo was emailed version {report['version']}"
            + (
                f"; version {report['restated_version']} publishes the restatement and cfo's 'restated' email is due "
                f"(Reports → subscriptions → Preview email; manage.py report_email --to <cfo's address>)"
                if report.get("restated_version") and report["restated_version"] != report["version"]
                else ""
            )
        )
        if s.get("slack_left_out"):
            out(self.style.WARNING(f"  Note: {s['slack_left_out']}"))
        else:
            out(f"  the platform team's Slack channel posts to {url.rstrip('/')}/demo/slack/ (the demo's Slack)")
        if export_dir is not None:
            out(f"  usage files kept in {export_dir}")
        out("")
        out(f"Open {url} and sign in as:")
        width = max(len(login["username"]) for login in s["logins"])
        for login in s["logins"]:
            out(f"  {login['username']:<{width}} / {login['password']}   ({login['description']})")
