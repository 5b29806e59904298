"""What each alert kind's email says (finops.notify.emails renders it): the reason in one sentence, the figures as the
linked page shows them, and the page that explains it. No dict, list, Decimal, ISO date or True/False ever reaches
a template: every value here is already text, formatted by finops.core.display as the pages format it.

Where the figures come from (one figure, one definition):

- **caps, spikes, unpriced usage, cost per outcome**: the event's `details`, written when it was raised by the
  selector the linked page reads (cap_status, spikes_find on the daily rollup, outcomes.by_workload). Those figures
  belong to a closed period or a day and say what was true when it fired; delivery follows within minutes.
- **contracts**: re-read when the email is rendered, from `contract_status(contract, today)` — the contract page's
  selector — so the email and /contracts/<id>/ agree on the day it arrives (a notice countdown and a projection move
  every day; an event raised yesterday and sent today would otherwise be a day out).
- **sources**: the account's status when the email is rendered (`account_status`, the Sources page's selector),
  with the condition's start from the event; the error is said once.

Links: a cap's page, the contract's page, the source's page, the workload's page for the spike's day or the
outcome's month (the unattributed page for unattributed spend), the provider's page for an unpriced model.
"""

import datetime as dt
from decimal import Decimal, InvalidOperation

from django.conf import settings
from django.urls import reverse
from django.utils import timezone

from finops.alerts.selectors.spikes import BASELINE_DAYS
from finops.core import display
from finops.models import AlertEvent, Workload


def site_link(path: str) -> str:
    return settings.SITE_URL.rstrip("/") + path


def today_utc() -> dt.date:
    return timezone.now().astimezone(dt.UTC).date()


def decimal(value) -> Decimal | None:
    try:
        return Decimal(str(value)) if value not in (None, "") else None
    except InvalidOperation:
        return None


def _fact(label: str, value: str) -> dict:
    return {"label": label, "value": value}


# --- spend spike ---


def spike_context(event: AlertEvent) -> dict:
    d, currency = event.details or {}, (event.details or {}).get("currency") or display.reporting_currency()
    day = dt.date.fromisoformat(d["day"]) if d.get("day") else event.period_start
    money = lambda key: display.money_exact(decimal(d.get(key)), currency)  # noqa: E731
    ratio = decimal(d.get("ratio"))
    name = d.get("workload") or display.UNATTRIBUTED
    query = f"?start={day.isoformat()}&end={(day + dt.timedelta(days=1)).isoformat()}"
    workload = Workload.objects.filter(id=event.workload_id).only("slug").first() if event.workload_id else None
    if workload is not None:
        link = site_link(reverse("workload-detail", args=[workload.slug]) + query)
    elif name == display.UNATTRIBUTED:
        link = site_link(reverse("unattributed") + query)
    else:  # the workload was deleted since: its spike is still listed with the alerts
        link = site_link(reverse("alert-list"))
    reason = (
        f"{name} spent {money('cost')} on {display.day(day)}"
        + (f", {ratio:.1f} times its usual {money('baseline_median')} a day" if ratio is not None else "")
        + f", far above {money('threshold')}, the most its usual day-to-day swings reach: a spike."
    )
    facts = [
        _fact("Workload", name + (f" ({d['team']})" if d.get("team") else "")),
        _fact("Spent on " + display.day(day), money("cost")),
        _fact(f"Usual day (median of the {BASELINE_DAYS} days before)", money("baseline_median")),
        _fact("Spike above", money("threshold")),
    ]
    return {
        "reason": reason,
        "facts": facts,
        "link": link,
        "action": "Open the day's spend",
        "note": (
            f"How a spike is judged: against the median of the {BASELINE_DAYS} days before, a day far outside "
            "their usual spread, at least the minimum change above the median and at least twice it."
        ),
    }


# --- unpriced usage ---


def unpriced_context(event: AlertEvent) -> dict:
    """The model's tokens of unknown cost from the day it was first seen to today, read as the provider's page reads
    its "by model" table over the same days (spend.sums), so the two say the same figure."""
    from finops.models import DailySpend, MonthlySpend
    from finops.spend.selectors import spend

    d = event.details or {}
    model_id, slug = d.get("model") or "", d.get("provider") or ""
    model, provider = display.model_name(model_id), d.get("provider_name") or slug
    first = dt.date.fromisoformat(d["first_day"]) if d.get("first_day") else event.created_at.date()
    today = today_utc()
    end = max(today, first) + dt.timedelta(days=1)
    rows = spend.sums(
        DailySpend.objects.filter(provider__slug=slug, model=model_id),
        MonthlySpend.objects.filter(provider__slug=slug, model=model_id),
        first,
        end,
        ("model",),
        today=today,
    )
    tokens = sum(int(row.get("unpriced_tokens") or 0) for row in rows) or int(d.get("tokens") or 0)
    accounts = [str(a) for a in d.get("accounts") or []]
    reason = (
        f"No price is known for {model} at {provider}, so the cost of its {display.tokens_compact(tokens)} tokens "
        "is unknown and in no total (never counted as $0) until the model has a price."
    )
    facts = [
        _fact("Model", f"{model} ({model_id})"),
        _fact("Provider", provider),
        _fact("Tokens of unknown cost", f"{display.tokens_compact(tokens)} ({display.count(tokens)})"),
        _fact("First seen", display.day(first)),
    ]
    if accounts:
        facts.append(_fact("Account" + ("s" if len(accounts) > 1 else ""), ", ".join(accounts)))
    path = (
        reverse("provider-detail", args=[slug]) + f"?start={first.isoformat()}&end={end.isoformat()}"
        if slug
        else reverse("alert-list")
    )
    return {"reason": reason, "facts": facts, "link": site_link(path), "action": "Open the provider's models"}


# --- source failing or silent ---


def source_context(event: AlertEvent) -> dict:
    from finops.sources.selectors.account_status import account_status

    d = event.details or {}
    account = event.account
    status = account_status(account, today_utc()) if account is not None else None
    name = d.get("account") or (account.name if account else "The source")
    error = (d.get("error") or "").strip()
    if error:
        reason = f"{name}'s last {'sync' if account is not None and account.is_api else 'import'} failed: {error}"
        reason += "" if reason.endswith(".") else "."
    elif d.get("silent_since"):
        reason = f"{name} has not synced since {display.utc_time(d['silent_since'])}, longer than its schedule allows."
    elif d.get("stale_since"):
        reason = (
            f"{name} has no data after {display.day(dt.date.fromisoformat(d['stale_since']) - dt.timedelta(days=1))}."
        )
    else:
        reason = event.title
    facts = [_fact("Source", name + (f" ({account.provider.name})" if account is not None else ""))]
    since = d.get("failing_since") or d.get("silent_since") or d.get("stale_since")
    if since:
        facts.append(_fact("Since", display.day(since[:10])))
    if status is not None:
        facts.append(_fact("State today", status.label))
        facts.append(_fact("Newest data", display.day(status.latest_day) if status.latest_day else "no data yet"))
        facts.append(
            _fact(
                "Last successful sync or import",
                display.utc_time(account.last_success_at) if account.last_success_at else "never",
            )
        )
    link = site_link(reverse("source-detail", args=[account.pk]) if account is not None else reverse("source-list"))
    return {"reason": reason, "facts": facts, "link": link, "action": "Open the source"}


# --- contracts ---


def contract_status_today(event: AlertEvent):
    from finops.contracts.selectors import contract_status

    return contract_status(event.contract, today=today_utc())


def contract_context(event: AlertEvent) -> dict:
    from finops.alerts import contract_notice, contract_risk
    from finops.models import AlertKind

    status = contract_status_today(event)
    contract, currency = status.contract, status.contract.currency
    money = lambda value: display.money_exact(value, currency)  # noqa: E731
    titles = {
        AlertKind.CONTRACT_NOTICE: contract_notice.notice_title,
        AlertKind.CONTRACT_SHORTFALL: contract_risk.shortfall_title,
        AlertKind.CONTRACT_OVERAGE: contract_risk.overage_title,
    }
    still = {
        AlertKind.CONTRACT_NOTICE: status.days_to_notice_deadline >= 0,
        AlertKind.CONTRACT_SHORTFALL: contract_risk.shortfall_risk(status),
        AlertKind.CONTRACT_OVERAGE: contract_risk.overage_risk(status),
    }[event.kind]
    title = titles[event.kind](status) if still else event.title
    deadline = display.day(status.notice_deadline)
    if not still:  # sent after the figures moved on (a retry, a worker that was down): say what holds today
        reason = (
            f"This was true when the alert was raised; on {display.day(status.today)} {contract.name} reads "
            f"“{status.status_label}” on its page, projected at {money(status.projected)} of {money(status.committed)}."
        )
    elif event.kind == AlertKind.CONTRACT_NOTICE:
        reason = (
            f"{contract.name} renews by itself on {display.day(contract.end)} for {contract.renewal_term_months} "
            f"months unless notice is given by {deadline}, {_in_days(status.days_to_notice_deadline)}."
        )
    elif event.kind == AlertKind.CONTRACT_SHORTFALL:
        reason = (
            f"At today's pace {contract.name} uses {money(status.projected)} of the {money(status.committed)} "
            f"committed by {display.day(contract.end - dt.timedelta(days=1))}: {money(status.shortfall)} would be "
            "paid for and not used."
        )
    else:
        reason = (
            f"At today's pace {contract.name} spends {money(status.projected)} against {money(status.committed)} "
            f"committed: {money(status.overage)} more than the commitment."
        )
    facts = [
        _fact("Contract", f"{contract.name} ({contract.provider.name})"),
        _fact("Term", f"{display.day(contract.start)} to {display.day(contract.end - dt.timedelta(days=1))}"),
        _fact("Committed", money(status.committed)),
        _fact("Used so far", money(status.consumed)),
        _fact("Expected by today", money(status.expected_to_date)),
        _fact("Projected for the term", money(status.projected)),
    ]
    if status.shortfall:
        facts.append(_fact("Projected shortfall", money(status.shortfall)))
    if status.overage:
        facts.append(_fact("Projected overage", money(status.overage)))
    if contract.auto_renew:
        facts.append(
            _fact("Renews", f"automatically; notice by {deadline} ({_in_days(status.days_to_notice_deadline)})")
        )
    else:
        facts.append(_fact("Renews", "no, it ends with its term"))
    advice = status.renewal_advice
    if advice is not None:
        facts.append(
            _fact("Renewal advice", f"renew at or below {money(advice)} for {contract.renewal_term_months} months")
        )
    rows = (
        [
            {
                "cells": [
                    f"{display.day(p.start)} to {display.day(p.end - dt.timedelta(days=1))}",
                    money(p.committed),
                    money(p.consumed),
                    money(p.projected),
                ]
            }
            for p in status.periods
        ]
        if len(status.periods) > 1
        else []
    )
    return {
        "title": title,
        "reason": reason,
        "facts": facts,
        "action": "Open the contract",
        "link": site_link(reverse("contract-detail", args=[contract.pk])),
        "table": {"headers": ["Period", "Committed", "Used", "Projected"], "rows": rows} if rows else None,
        "note": f"Figures as of {display.day(status.today)}, as the contract's page shows them that day.",
    }


def _in_days(days: int) -> str:
    if days < 0:
        return f"passed {display.days_count(-days)} ago"
    return "today" if days == 0 else f"in {display.days_count(days)}"


# --- cost per outcome ---


def outcome_context(event: AlertEvent) -> dict:
    d = event.details or {}
    month = dt.date.fromisoformat(d["month"]) if d.get("month") else event.period_start
    unit = d.get("unit") or "outcome"
    workload = Workload.objects.filter(id=event.workload_id).first() if event.workload_id else None
    name = workload.name if workload else d.get("workload", "")
    per, target = display.per_outcome(decimal(d.get("cost_per_outcome"))), display.per_outcome(decimal(d.get("target")))
    reason = f"{name} cost {per} per {unit} in {month:%B %Y}, above its target of {target} per {unit}."
    facts = [
        _fact("Workload", name),
        _fact("Month", f"{month:%B %Y}"),
        _fact("Spend", display.money_exact(decimal(d.get("cost")))),
        _fact(f"Outcomes ({unit})", display.count(d.get("outcomes"))),
        _fact(f"Cost per {unit}", per),
        _fact("Target", target),
    ]
    if d.get("unpriced_tokens"):
        facts.append(_fact("Tokens of unknown cost", display.count(d["unpriced_tokens"])))
    path = (
        reverse("workload-detail", args=[workload.slug]) + f"?period={month:%Y-%m}"
        if workload
        else reverse("alert-list")
    )
    return {"reason": reason, "facts": facts, "link": site_link(path), "action": "Open the workload"}
