"""The unattributed page: the spend of a period no rule claims, by what a rule could match it by (API key,
project, user, tag), each group one click from the rule form that would claim it, pre-filled.

Finance and admins only: unattributed spend belongs to no team, so members answer 404 (finops.core.access)."""

import json
from urllib.parse import urlencode

from django.http import Http404, HttpResponseBadRequest
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_safe

from finops.core import access
from finops.reports import unattributed_tables as specs
from finops.spend.selectors import line_groups
from finops.spend.selectors import unattributed as selector
from finops.spend.selectors.shared_charges import shared_charges
from finops.web.period import period_from_request, picker_context, today_utc
from finops.web.tables import csv_requested

NO_REF = {"api_key": "(no API key)", "project": "(no project)", "user": "(no user)"}
NO_TAGS = "(no tags)"
TABLES = {"api_key": specs.BY_API_KEY, "project": specs.BY_PROJECT, "user": specs.BY_USER, "tag": specs.BY_TAG}
TITLES = {"api_key": "By API key", "project": "By project", "user": "By user"}


@require_safe
def unattributed(request):
    if not access.can_see_unattributed(request.user):
        raise Http404("No such page.")
    period = period_from_request(request)
    summary = selector.summary(request.user, period.start, period.end, today=today_utc())
    too_long = line_groups.too_long(period.start, period.end)
    if too_long and request.GET.get("csv"):
        return HttpResponseBadRequest(
            f"The groups read the usage lines themselves: pick a period of at most {line_groups.MAX_DAYS} days.\n",
            content_type="text/plain; charset=utf-8",
        )
    groups = {} if too_long else selector.groups(request.user, period.start, period.end)
    can_write_rules = access.can_manage_configuration(request.user)
    tables = {
        TABLES[grouping].name: (TABLES[grouping], _shown(grouping, rows, _names(groups), rule_links=can_write_rules))
        for grouping, rows in groups.items()
    }
    csv = csv_requested(request, "unattributed", tables, stem=f"{period.start}-{period.end}")
    if csv is not None:
        return csv
    context = {
        **picker_context(request),
        "summary": summary,
        "too_long": too_long,
        "max_days": line_groups.MAX_DAYS,
        "tables": [(title, *tables[TABLES[grouping].name]) for grouping, title in TITLES.items()] if tables else [],
        "tag_table": tables.get(specs.BY_TAG.name),
        "can_write_rules": can_write_rules,
        # Tax, fees and credits are in this spend but no rule can claim them: the page says they are allocated.
        "shared": shared_charges(period.start, period.end),
    }
    return render(request, "finops/unattributed.html", context)


def _names(groups: dict[str, list[dict]]) -> tuple[dict, dict]:
    rows = [row for found in groups.values() for row in found]
    return line_groups.source_names(
        sorted({a for row in rows for a in row["account_ids"]}),
        sorted({p for row in rows for p in row["provider_ids"]}),
    )


def _shown(grouping: str, rows: list[dict], names: tuple[dict, dict], *, rule_links: bool) -> list[dict]:
    """Rows as the table shows them: a label, the accounts and providers by name, and for those who write rules
    (admins; finance reads this page, an admin writes the rule) the "Create a rule" link where a rule could match
    the group (a line without an API key cannot be claimed by its API key)."""
    accounts, providers = names
    for row in rows:
        if grouping == "tag":
            condition = (
                {"tags_text": rule_tags_text(row["tag_key"], row["tag_value"])} if row["tag_key"] is not None else None
            )
            row["label"] = NO_TAGS if condition is None else f"{row['tag_key']}={row['tag_value']}"
        else:
            condition = {grouping: row["group"]} if row["group"] else None
            row["label"] = row["group"] or NO_REF[grouping]
        row["muted"] = condition is None
        row["accounts"] = ", ".join(sorted(accounts.get(a, str(a)) for a in row["account_ids"]))
        row["providers"] = ", ".join(sorted(providers.get(p, str(p)) for p in row["provider_ids"]))
        if condition is not None and rule_links:
            row["action"] = ("Create a rule", rule_url(condition, row["account_ids"], row["provider_ids"]))
    return rows


def rule_url(condition: dict, account_ids: list[int], provider_ids: list[int]) -> str:
    """The rule form, pre-filled with the condition, and with the account and the provider where the group's
    lines all come from one (finops.sources.forms.RuleForm.initial_from_query)."""
    query = dict(condition)
    if len(account_ids) == 1:
        query["account"] = account_ids[0]
    if len(provider_ids) == 1:
        query["provider"] = provider_ids[0]
    return f"{reverse('rule-create')}?{urlencode(query)}"


def rule_tags_text(key: str, value: str) -> str:
    """The rule form's Tags box for one pair: `k=v`, or the JSON object where `k=v;…` cannot carry the pair
    (a ';' in it, an '=' in the key, spaces at its ends, a key starting with '{'; ingest.connectors.parsing)."""
    if ";" in key + value or "=" in key or key.startswith("{") or key != key.strip() or value != value.strip():
        return json.dumps({key: value})
    return f"{key}={value}"
