"""The emails the product sends: one function per kind, each rendering templates/emails/<name>-subject.txt,
-body.txt and -body.html (a text part and an HTML part with inline styles and no external assets).

The subject is the event's title behind "[FinOps] ", so a person can triage from the inbox. Every alert email
reads like the cap's: the reason in one sentence, the figures formatted as the pages format them, and an absolute
link (SITE_URL) to the page that explains it. What each kind says, and where its figures come from, is in
finops.notify.alert_emails.
"""

import contextlib
import contextvars
from decimal import Decimal, InvalidOperation

from django.conf import settings
from django.core.mail import EmailMultiAlternatives
from django.template.loader import render_to_string

from finops.core import display
from finops.models import AlertEvent, AlertKind
from finops.notify import alert_emails

SUBJECT_PREFIX = "[FinOps] "
TOP_DRIVERS = 5


site_link = alert_emails.site_link


def event_link(event: AlertEvent) -> str:
    """The page to act from: /caps/<id>/ (the cap page, URL name cap-detail) or /alerts/."""
    return site_link(f"/caps/{event.cap_id}/" if event.cap_id else "/alerts/")


def _decimal(value) -> Decimal | None:
    try:
        return Decimal(str(value)) if value not in (None, "") else None
    except InvalidOperation:
        return None


def _money(value, currency: str) -> str:
    return display.money_exact(_decimal(value), currency)


def _percent(value) -> str:
    number = _decimal(value)
    return display.DASH if number is None else f"{number:.0f}%"


def _render(name: str, context: dict, *, to: str, event: AlertEvent) -> EmailMultiAlternatives:
    subject = " ".join(render_to_string(f"emails/{name}-subject.txt", context).split())  # one line, always
    text = render_to_string(f"emails/{name}-body.txt", context)
    html = render_to_string(f"emails/{name}-body.html", context)
    message = EmailMultiAlternatives(
        subject=subject,
        body=text,
        from_email=settings.DEFAULT_FROM_EMAIL,
        to=[to],
        headers={"X-FinOps-Event": str(event.id), "X-FinOps-Kind": event.kind},
    )
    message.attach_alternative(html, "text/html")
    return message


def _base_context(event: AlertEvent) -> dict:
    return {
        "event": event,
        "title": event.title,
        "prefix": SUBJECT_PREFIX,
        "link": event_link(event),
        "alerts_link": site_link("/alerts/"),
        "kind_label": event.get_kind_display(),
    }


def _cap_context(event: AlertEvent) -> dict:
    d = event.details or {}
    currency = d.get("currency") or display.reporting_currency()
    drivers = d.get("drivers") or {}

    def rows(key):
        return [
            {
                "name": row.get("name", "?"),
                "cost": _money(row.get("cost"), currency),
                "unpriced_tokens": display.tokens_compact(row.get("unpriced_tokens"))
                if row.get("unpriced_tokens")
                else "",
            }
            for row in (drivers.get(key) or [])[:TOP_DRIVERS]
        ]

    unpriced = int(d.get("unpriced_tokens") or 0)
    return {
        **_base_context(event),
        "cap_name": d.get("cap", str(event.cap or "")),
        "scope": d.get("scope", ""),
        "period": d.get("period", ""),
        "spent": _money(d.get("spent"), currency),
        "amount": _money(d.get("amount"), currency),
        "percent": _percent(d.get("percent")),
        "forecast": display.forecast_figures(d.get("forecast"), d.get("forecast_low"), d.get("forecast_high"), currency)
        if _decimal(d.get("forecast")) is not None
        else "",
        "forecast_percent": _percent(d.get("forecast_percent")),
        "forecast_method": d.get("forecast_method", ""),
        "daily_rate": _money(d.get("daily_rate"), currency),
        "days_left": d.get("days_left"),
        "has_forecast": _decimal(d.get("forecast")) is not None,
        "unpriced_tokens": unpriced,
        "unpriced_label": display.tokens_compact(unpriced) if unpriced else "",
        "workloads": rows("workloads"),
        "models": rows("models"),
        "threshold": event.threshold,
        "is_forecast": event.kind == AlertKind.CAP_FORECAST,
    }


def _generic_context(event: AlertEvent) -> dict:
    """A kind without its own email (none today): its title, and a link to the Alerts page."""
    return {**_base_context(event), "reason": "", "facts": [], "action": "Open the alerts"}


# The contexts of the events being sent, inside `contexts_shared()`: None outside it (each call builds its own).
_SHARED: contextvars.ContextVar[dict | None] = contextvars.ContextVar("email_contexts", default=None)


@contextlib.contextmanager
def contexts_shared():
    """Build each event's context once for all its recipients, while sending it (finops.notify.deliver): the
    context depends on the event only, and a contract's figures (its status, whose forecast reads the usage) cost
    a fraction of a second each; the demo's load built 20 contract statuses for its 29 alert emails before."""
    token = _SHARED.set({})
    try:
        yield
    finally:
        _SHARED.reset(token)


def _kind_context(build):
    """The base context with what finops.notify.alert_emails says about this kind (reason, facts, link, title)."""

    def context(event: AlertEvent) -> dict:
        shared = _SHARED.get()
        if shared is None or event.pk is None:
            return {**_base_context(event), **build(event)}
        if event.pk not in shared:
            shared[event.pk] = {**_base_context(event), **build(event)}
        return shared[event.pk]

    return context


# --- one function per kind ---


def cap_threshold_email(event: AlertEvent, *, to: str) -> EmailMultiAlternatives:
    return _render("cap_threshold", _cap_context(event), to=to, event=event)


def cap_forecast_email(event: AlertEvent, *, to: str) -> EmailMultiAlternatives:
    return _render("cap_forecast", _cap_context(event), to=to, event=event)


CONTEXTS = {
    AlertKind.SPEND_SPIKE: _kind_context(alert_emails.spike_context),
    AlertKind.UNPRICED_USAGE: _kind_context(alert_emails.unpriced_context),
    AlertKind.SOURCE_FAILING: _kind_context(alert_emails.source_context),
    AlertKind.CONTRACT_NOTICE: _kind_context(alert_emails.contract_context),
    AlertKind.CONTRACT_SHORTFALL: _kind_context(alert_emails.contract_context),
    AlertKind.CONTRACT_OVERAGE: _kind_context(alert_emails.contract_context),
    AlertKind.OUTCOME_COST: _kind_context(alert_emails.outcome_context),
}


def kind_email(event: AlertEvent, *, to: str) -> EmailMultiAlternatives:
    """Every kind but the caps': one template set (templates/emails/alert-*), the kind's own words."""
    return _render("alert", CONTEXTS[event.kind](event), to=to, event=event)


def event_summary(event: AlertEvent) -> dict:
    """What a chat message says under the title: the email's reason and its facts (label, value), so Slack, Teams
    and the email carry the same figures. A cap's are its spend against the cap, the forecast and the period."""
    if event.kind in (AlertKind.CAP_THRESHOLD, AlertKind.CAP_FORECAST):
        c = _cap_context(event)
        facts = [("Spent", f"{c['spent']} of {c['amount']} ({c['percent']})")]
        if c["has_forecast"]:
            facts.append(("Forecast", f"{c['forecast']} ({c['forecast_percent']} of the cap)"))
        facts += [(label, c[key]) for label, key in (("Period", "period"), ("Scope", "scope")) if c[key]]
        return {"reason": "", "facts": facts}
    context = CONTEXTS[event.kind](event) if event.kind in CONTEXTS else _generic_context(event)
    return {"reason": context.get("reason", ""), "facts": [(f["label"], f["value"]) for f in context["facts"]]}


EMAILS = {
    AlertKind.CAP_THRESHOLD: cap_threshold_email,
    AlertKind.CAP_FORECAST: cap_forecast_email,
    **{kind: kind_email for kind in CONTEXTS},
}


def alert_email(event: AlertEvent, *, to: str) -> EmailMultiAlternatives:
    """The message for an event of any kind (a kind added later without its own email gets the generic one)."""
    function = EMAILS.get(event.kind)
    if function is None:
        return _render("alert", _generic_context(event), to=to, event=event)
    return function(event, to=to)


# --- the monthly TCO report (issue 14; sent by finops.notify.report_deliveries) ---

REPORT_MOVERS = 3
REPORT_ROWS = 5


def report_page_link(report, version: int | None = None) -> str:
    return site_link(f"/reports/{report.key}/" + (f"?version={version}" if version else ""))


def report_subject(report, *, provisional: bool) -> str:
    """ "TCO report, October 2026: $12,345.67 (+12.5 % from last month)"; "[provisional]" behind it until every
    source has settled."""
    summary = report.summary
    if not report.has_data:
        text = f"TCO report, {report.label}: no spend recorded"
    else:
        change = (
            f"{display.percent_change(summary['change'])} from last month"
            if summary.get("change") is not None
            else "no spend last month to compare"
        )
        text = f"TCO report, {report.label}: {display.money_exact(summary['cost'], report.currency)} ({change})"
    return text + (" [provisional]" if provisional else "")


def report_context(report, snapshot) -> dict:
    """What the report's email says, from the published figures (the snapshot), never re-read: the same for
    every recipient, so it is built once per snapshot and send."""
    currency, summary = report.currency, report.summary

    def money(value, row_currency=None):
        return display.money_exact(value, row_currency or currency)

    def signed(value):
        return display.DASH if value is None else ("+" if value > 0 else "") + money(value)

    savings = [row for row in report.rows("savings") if row.get("saving")]
    return {
        "report": report,
        "snapshot": snapshot,
        "provisional": snapshot.provisional,
        "subject": report_subject(report, provisional=snapshot.provisional),
        "link": report_page_link(report, snapshot.version),
        "total": money(summary["cost"]),
        "previous": money(summary.get("previous_cost")),
        "change": display.percent_change(summary.get("change")),
        "has_change": summary.get("change") is not None,
        "forecast": display.forecast_figures(
            summary.get("forecast_next"), summary.get("forecast_next_low"), summary.get("forecast_next_high"), currency
        ),
        "unattributed": money(summary.get("unattributed_cost")),
        "unpriced_tokens": display.tokens_compact(summary["unpriced_tokens"]) if summary.get("unpriced_tokens") else "",
        "movers": [
            {
                "label": row["label"],
                "team": row.get("team") or "",
                "change": signed(row["change"]),
                "why": row.get("why") or "",
            }
            for row in sorted(report.rows("movers"), key=lambda r: -abs(r["change"]))[:REPORT_MOVERS]
        ],
        "caps": [
            {
                "label": row["label"],
                "scope": row.get("scope") or "",
                "period": row.get("period") or "",
                "spent": money(row.get("spent")),
                "amount": money(row.get("amount")),
                "status": row.get("status") or "",
            }
            for row in report.rows("caps")[:REPORT_ROWS]
        ],
        "caps_more": max(0, len(report.rows("caps")) - REPORT_ROWS),
        "renewals": [
            {
                "label": row["label"],
                "provider": row.get("provider") or "",
                "renews_on": row.get("renews_on"),
                "notice_deadline": row.get("notice_deadline"),
                "committed": money(row.get("committed"), row.get("currency")),
            }
            for row in report.rows("renewals")[:REPORT_ROWS]
        ],
        **_savings_lines(savings, money),
        "savings_basis": summary.get("label", ""),
    }


def _savings_lines(savings: list[dict], money) -> dict:
    """The report's savings as the email lists them: the largest REPORT_ROWS, then one line for the rest, and a
    total that is the sum of those lines (each saving is rounded to the cent where it is computed)."""
    ordered = sorted(savings, key=lambda r: -r["saving"])
    shown, rest = ordered[:REPORT_ROWS], ordered[REPORT_ROWS:]
    lines = [
        {"workload": row.get("workload") or "", "best": row.get("best") or "", "saving": money(row["saving"])}
        for row in shown
    ]
    if rest:
        lines.append(
            {
                "workload": f"{len(rest)} other part{'s' if len(rest) != 1 else ''}",
                "best": "see the report",
                "saving": money(sum((row["saving"] for row in rest), Decimal(0))),
            }
        )
    total = sum((row["saving"] for row in ordered), Decimal(0))
    return {"savings": lines, "savings_total": money(total) if savings else ""}


def report_email(
    context: dict, *, to: str, unsubscribe_link: str, pdf: bytes, filename: str, headers: dict | None = None
) -> EmailMultiAlternatives:
    """The report for one recipient: the summary as text and HTML, the PDF attached, and the unsubscribe link in
    the body and as List-Unsubscribe headers (RFC 8058 one-click: mail clients POST to it)."""
    context = {**context, "unsubscribe_link": unsubscribe_link}
    body = "report-restated-body" if context.get("restated") else "report-body"  # finops.notify.report_restated
    text = render_to_string(f"emails/{body}.txt", context)
    html = render_to_string(f"emails/{body}.html", context)
    message = EmailMultiAlternatives(
        subject=context["subject"],
        body=text,
        from_email=settings.DEFAULT_FROM_EMAIL,
        to=[to],
        headers={
            "List-Unsubscribe": f"<{unsubscribe_link}>",
            "List-Unsubscribe-Post": "List-Unsubscribe=One-Click",
            # RFC 3834: sent by a schedule, so out-of-office replies are not sent back to it.
            "Auto-Submitted": "auto-generated",
            **(headers or {}),
        },
    )
    message.attach_alternative(html, "text/html")
    message.attach(filename, pdf, "application/pdf")
    return message
