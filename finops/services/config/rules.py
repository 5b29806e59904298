"""The `rules:` section: the file's list is the complete rule set (rules depend on their order, so a
partial set would mean nothing). Every change is audited, and history is re-attributed once."""

from finops.models import Account, AttributionRule, Provider, RuleChange, Workload
from finops.services.attribution import history_reattribute

MATCH_FIELDS = ("project", "api_key", "user", "model")


def rule_reference_errors(entries: dict, providers: set[str]) -> list[str]:
    workloads = {e["slug"] for e in entries.get("workloads", [])} | set(Workload.objects.values_list("slug", flat=True))
    accounts = {e["name"] for e in entries.get("accounts", [])} | set(Account.objects.values_list("name", flat=True))
    errors = []
    for entry in entries.get("rules", []):
        match = entry.get("match") or {}
        if entry["workload"] not in workloads:
            errors.append(f"{entry['_label']}: workload: unknown workload {entry['workload']!r} (not in this file or the database)")
        if "account" in match and match["account"] not in accounts:
            errors.append(f"{entry['_label']}: match.account: unknown account {match['account']!r}")
        if "provider" in match and match["provider"] not in providers:
            errors.append(f"{entry['_label']}: match.provider: unknown provider {match['provider']!r}")
    return errors


def _wanted(entry: dict) -> dict:
    match = entry.get("match") or {}
    return {
        "workload": Workload.objects.get(slug=entry["workload"]),
        "priority": entry["priority"],
        "account": Account.objects.get(name=match["account"]) if match.get("account") else None,
        "provider": Provider.objects.get(slug=match["provider"]) if match.get("provider") else None,
        **{name: match.get(name, "") for name in MATCH_FIELDS},
        "tags": dict(match.get("tag") or {}),
    }


def rule_snapshot(rule: AttributionRule) -> dict:
    return {"workload": rule.workload.slug, "priority": rule.priority, "match": rule.conditions()}


def rules_apply(entries: list[dict], *, changed_by=None) -> list[str]:
    """Make the rule set equal `entries`; returns one outcome per entry (and "deleted" per removed rule)."""
    current = list(AttributionRule.objects.select_related("workload", "account", "provider").order_by("priority", "id"))
    by_priority: dict[int, AttributionRule] = {}
    for rule in current:
        by_priority.setdefault(rule.priority, rule)
    outcomes, kept = [], set()
    for entry in entries:
        wanted = _wanted(entry)
        rule = by_priority.get(entry["priority"])
        if rule is None:
            rule = AttributionRule.objects.create(**wanted)
            _audit(rule, RuleChange.Action.CREATED, None, changed_by)
            outcomes.append("created")
        elif any(getattr(rule, k) != v for k, v in wanted.items()):
            before = rule_snapshot(rule)
            for key, value in wanted.items():
                setattr(rule, key, value)
            rule.save()
            _audit(rule, RuleChange.Action.UPDATED, before, changed_by)
            outcomes.append("updated")
        else:
            outcomes.append("unchanged")
        kept.add(rule.id)
    for rule in current:
        if rule.id not in kept:
            _audit(rule, RuleChange.Action.DELETED, rule_snapshot(rule), changed_by)
            rule.delete()
            outcomes.append("deleted")
    if any(o != "unchanged" for o in outcomes):
        history_reattribute()
    return outcomes


def _audit(rule: AttributionRule, action: str, before: dict | None, changed_by) -> None:
    after = None if action == RuleChange.Action.DELETED else rule_snapshot(rule)
    RuleChange.objects.create(
        rule=None if action == RuleChange.Action.DELETED else rule,
        rule_label=str(rule),
        action=action,
        before=before,
        after=after,
        changed_by=changed_by,
        source="config",
    )
