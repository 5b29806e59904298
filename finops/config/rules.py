"""The `rules:` section: the file's list is the complete rule set (rules depend on their order, so a
partial set would mean nothing). Rules are written by the same service functions as the UI and the API
(finops.spend.services.rules: audited), and history is re-attributed once for the whole set."""

from finops.models import Account, AttributionRule, Provider, Workload
from finops.spend.services.attribution import Reattribution, history_reattribute
from finops.spend.services.rules import rule_create, rule_delete, rule_snapshot, rule_update

__all__ = ["rule_reference_errors", "rule_snapshot", "rules_apply"]

MATCH_FIELDS = ("project", "api_key", "user", "model")


def rule_reference_errors(entries: dict, providers: set[str]) -> list[str]:
    workloads = {e["slug"] for e in entries.get("workloads", [])} | set(Workload.objects.values_list("slug", flat=True))
    accounts = {e["name"] for e in entries.get("accounts", [])} | set(Account.objects.values_list("name", flat=True))
    errors = []
    for entry in entries.get("rules", []):
        match = entry.get("match") or {}
        if entry["workload"] not in workloads:
            errors.append(
                f"{entry['_label']}: workload: unknown workload {entry['workload']!r} (not in this file or the "
                f"database)"
            )
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


def rules_apply(entries: list[dict], *, changed_by=None) -> tuple[list[str], Reattribution | None]:
    """Make the rule set equal `entries` through the same writes as the UI and the API (audited, source "config"),
    then re-attribute history once if anything changed. Returns one outcome per entry (and "deleted" per removed
    rule), and the re-attribution (None when nothing changed); the caller signals spend changed for it."""
    current = list(AttributionRule.objects.select_related("workload", "account", "provider").order_by("priority", "id"))
    by_priority: dict[int, AttributionRule] = {}
    for rule in current:
        by_priority.setdefault(rule.priority, rule)
    outcomes, kept = [], set()
    writes = {"by": changed_by, "source": "config", "reattribute": False}
    for entry in entries:
        wanted = _wanted(entry)
        rule = by_priority.get(entry["priority"])
        if rule is None:
            rule, _ = rule_create(**writes, **wanted)
            outcomes.append("created")
        elif any(getattr(rule, k) != v for k, v in wanted.items()):
            rule_update(rule=rule, **writes, **wanted)
            outcomes.append("updated")
        else:
            outcomes.append("unchanged")
        kept.add(rule.id)
    for rule in current:
        if rule.id not in kept:
            rule_delete(rule=rule, **writes)
            outcomes.append("deleted")
    if any(o != "unchanged" for o in outcomes):
        return outcomes, history_reattribute()
    return outcomes, None
