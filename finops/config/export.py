"""`export_config`: the current configuration in the format `apply_config` reads (a round trip changes nothing).

Secrets are never exported: an account carries the name of the environment variable its key came from.
Seeded catalog prices and built-in providers are left out; they come with every install.
"""

from decimal import Decimal

import yaml

from finops.models import Account, AttributionRule, Cap, Contract, FxRate, ModelPrice, Provider, Team, User, Workload

from .caps import cap_entry
from .contracts import contract_entry
from .offerings import export_sections as offering_sections


def _decimal(value: Decimal | None) -> str | None:
    return None if value is None else format(value.normalize(), "f")


def _compact(entry: dict) -> dict:
    """Drop optional fields at their default, so the export reads like a hand-written file."""
    return {k: v for k, v in entry.items() if v not in (None, "")}


def config_document() -> dict:
    document = {
        "providers": [
            {"slug": p.slug, "name": p.name} for p in Provider.objects.filter(builtin=False).order_by("slug")
        ],
        "teams": [
            _compact({"name": t.name, "slug": t.slug, "cost_center": t.cost_center})
            for t in Team.objects.order_by("slug")
        ],
        "workloads": [
            _compact(
                {
                    "name": w.name,
                    "slug": w.slug,
                    "team": w.team.slug,
                    "latency_profile": w.latency_profile,
                    "sla_seconds": _decimal(w.sla_seconds),
                    "batch_window_hours": w.batch_window_hours,
                    "outcome_unit": w.outcome_unit,
                    "target_cost_per_outcome": _decimal(w.target_cost_per_outcome),
                    # By name only: a channel's URL and addresses are never exported.
                    "channels": [c.name for c in w.channels.order_by("name", "id")] or None,
                }
            )
            for w in Workload.objects.select_related("team").order_by("slug")
        ],
        "accounts": [
            _compact(
                {
                    "name": a.name,
                    "provider": a.provider.slug,
                    "connector": a.connector,
                    "base_url": a.base_url,
                    "credentials_env": a.credentials_env,
                    "enabled": a.enabled,
                    "sync_interval_minutes": a.sync_interval_minutes,
                    "focus_services_include": a.focus_services_include or None,
                    "focus_services_exclude": a.focus_services_exclude or None,
                }
            )
            for a in Account.objects.select_related("provider").order_by("name")
        ],
        "prices": [
            _compact(
                {
                    "provider": p.provider.slug,
                    "model": p.model,
                    "effective_from": p.effective_from.isoformat(),
                    "effective_to": p.effective_to.isoformat() if p.effective_to else None,
                    **{
                        name: _decimal(getattr(p, name))
                        for name in (
                            "input_per_mtok",
                            "output_per_mtok",
                            "cached_input_per_mtok",
                            "cache_write_per_mtok",
                            "batch_input_per_mtok",
                            "batch_output_per_mtok",
                        )
                    },
                }
            )
            for p in ModelPrice.objects.exclude(source=ModelPrice.Source.CATALOG).select_related("provider")
        ],
        "fx_rates": [
            {"day": r.day.isoformat(), "currency": r.currency, "rate": _decimal(r.rate)}
            for r in FxRate.objects.order_by("currency", "day")
        ],
        "users": [_user_entry(u) for u in User.objects.prefetch_related("memberships__team").order_by("username")],
        "rules": [
            {
                "workload": r.workload.slug,
                "priority": r.priority,
                **({"match": r.conditions()} if r.conditions() else {}),
            }
            for r in AttributionRule.objects.select_related("workload", "account", "provider").order_by(
                "priority", "id"
            )
        ],
        "caps": [
            cap_entry(c) for c in Cap.objects.select_related("team", "workload", "provider", "account").order_by("name")
        ],
        "contracts": [
            contract_entry(c)
            for c in Contract.objects.select_related("provider").prefetch_related("accounts").order_by("name")
        ],
        **offering_sections(),
    }
    return {section: entries for section, entries in document.items() if entries}


def _user_entry(user: User) -> dict:
    entry = {"username": user.username, "email": user.email, "role": user.role, "time_zone": user.time_zone}
    memberships = list(user.memberships.all())
    if len(memberships) == 1:
        entry["team"] = memberships[0].team.slug
        if memberships[0].role != "member":
            entry["team_role"] = memberships[0].role
    return _compact(entry)


def config_export() -> str:
    return yaml.safe_dump(config_document(), sort_keys=False, allow_unicode=True, width=120)
