"""`apply_config`: create or update, idempotently, what a platform team keeps in git.

Everything is validated first (every error is collected, each naming the file, the entry and the
field); then all sections are applied in one transaction. Nothing is deleted: entries absent from
the file are left as they are. Two exceptions: a user's `team` sets that user's memberships, and a
`rules:` section is the complete, ordered rule set (rules.py).
"""

import os
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from finops.alerts.services.spend_changes import spend_changed
from finops.core.modelids import normalise_model
from finops.models import FxRate, ModelPrice, Provider, Team, Workload
from finops.org.services.audit import audit_source
from finops.org.services.users import user_apply
from finops.prices.services import CATALOG_EFFECTIVE_FROM
from finops.sources.services.accounts import account_apply
from finops.spend.services.attribution import Reattribution, workload_team_sync

from . import offerings as offering_config
from .caps import cap_apply, cap_reference_errors
from .contracts import contract_apply
from .rules import rule_reference_errors, rules_apply
from .schema import SECTIONS


class ConfigInvalid(Exception):
    def __init__(self, errors: list[str]):
        super().__init__("\n".join(errors))
        self.errors = errors


@dataclass
class ApplyResult:
    changes: dict[str, Counter] = field(default_factory=dict)

    def count(self, section: str, outcome: str) -> None:
        self.changes.setdefault(section, Counter())[outcome] += 1

    @property
    def changed(self) -> bool:
        return any(c["created"] or c["updated"] or c["deleted"] for c in self.changes.values())

    def summary(self) -> str:
        if not self.changes:
            return "nothing to apply"
        return "; ".join(
            f"{section}: {c['created']} created, {c['updated']} updated, {c['unchanged']} unchanged"
            + (f", {c['deleted']} deleted" if c["deleted"] else "")
            for section, c in self.changes.items()
        )


def config_apply(*, path: str | Path, text: str | None = None, environ: Mapping[str, str] = os.environ) -> ApplyResult:
    """Apply the config at `path` (or `text`, named `path` in messages). Raises ConfigInvalid, applying nothing."""
    path = Path(path)
    if text is None:
        try:
            text = path.read_text()
        except OSError as exc:
            raise ConfigInvalid([f"{path}: cannot be read ({exc.strerror})"]) from None
    entries = _validated(path.name, text, environ)
    result = ApplyResult()
    moves: list[Reattribution] = []  # what changed spend: workloads moved to another team, a rule set re-attributed
    with transaction.atomic(), audit_source("config"):
        for section, items in entries.items():
            if section == "rules":
                outcomes, reattribution = rules_apply(items)
                for outcome in outcomes:
                    result.count(section, outcome)
                moves += [reattribution] if reattribution else []
                continue
            if section in ("caps", "contracts"):
                errors = []
                for item in items:
                    outcome, problems = cap_apply(item, environ) if section == "caps" else contract_apply(item)
                    errors.extend(problems)
                    if not problems:
                        result.count(section, outcome)
                if errors:  # every bad cap (contract) named at once; raising rolls the whole file back
                    raise ConfigInvalid(errors)
                continue
            if section in offering_config.APPLIERS:
                for item in items:
                    try:
                        result.count(section, offering_config.APPLIERS[section](item))
                    except ValueError as exc:
                        raise ConfigInvalid([str(exc)]) from None
                continue
            apply_entry = _APPLIERS[section]
            for item in items:
                try:
                    if section == "workloads":
                        result.count(section, _apply_workload(item, environ, moved=moves.append))
                    else:
                        result.count(section, apply_entry(item, environ))
                except IntegrityError as exc:
                    # A unique name taken by another row (a team name under another slug): name the entry, roll back.
                    raise ConfigInvalid([f"{item['_label']}: {' '.join(str(exc).split())}"]) from None
        _spend_changed(moves)
    return result


def _spend_changed(moves: list[Reattribution]) -> None:
    """One signal for the whole apply (sent if it commits), with every day and scope that moved.

    Prices and FX rates change no stored spend: a line's estimated cost and reporting-currency amount are fixed
    when it is imported (re-importing the window applies new ones, and that import signals). So only rules and
    workloads moved to another team count here.
    """
    spend_changed(
        days=set().union(*(m.days for m in moves)),
        reason="config",
        workload_ids=set().union(*(m.workloads for m in moves)),
        team_ids=set().union(*(m.teams for m in moves)),
    )


# --- validation ---


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key given twice in one mapping (YAML would silently keep the last)."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"the key {key!r} is given twice in one entry", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _validated(name: str, text: str, environ: Mapping[str, str]) -> dict[str, list[dict]]:
    try:
        document = yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigInvalid([f"{name}: not valid YAML{where}: {problem}"]) from None
    if document is None:
        document = {}
    if not isinstance(document, dict):
        raise ConfigInvalid([f"{name}: the top level must be a mapping of sections ({', '.join(SECTIONS)})"])

    errors = [
        f"{name}: unknown section {key!r} (sections: {', '.join(SECTIONS)})" for key in document if key not in SECTIONS
    ]
    entries: dict[str, list[dict]] = {}
    for section, (serializer_class, label_field) in SECTIONS.items():
        items = document.get(section)
        if items is None:
            continue
        if not isinstance(items, list):
            errors.append(f"{name}: {section}: must be a list of entries")
            continue
        valid, seen = [], set()
        for index, item in enumerate(items):
            label = _label(name, section, index, item, label_field)
            serializer = serializer_class(data=item)
            if not serializer.is_valid():
                errors.extend(f"{label}: {fld}: {_message(msgs)}" for fld, msgs in serializer.errors.items())
                continue
            data = serializer.validated_data
            identity = _identity(section, data)
            if identity in seen:
                errors.append(
                    f"{label}: duplicate entry (another {section} entry has the same {', '.join(map(str, identity))})"
                )
            seen.add(identity)
            data["_label"] = label
            valid.append(data)
        entries[section] = valid
    errors.extend(_reference_errors(entries, environ))
    if errors:
        raise ConfigInvalid(errors)
    return entries


def _label(name, section, index, item, label_field) -> str:
    value = item.get(label_field) if isinstance(item, dict) else None
    return f"{name}: {section}[{index}]" + (f" ({label_field}={value})" if value is not None else "")


def _message(messages) -> str:
    if isinstance(messages, dict):
        return "; ".join(f"{k}: {_message(v)}" for k, v in messages.items())
    if isinstance(messages, list):
        return " ".join(str(m) for m in messages)
    return str(messages)


def _identity(section: str, data: dict) -> tuple:
    if section == "prices":
        # An undated price starts on the catalog date: it is the same row as one dated that day.
        return (data["provider"], normalise_model(data["model"]), data["effective_from"] or CATALOG_EFFECTIVE_FROM)
    if section == "fx_rates":
        return (data["day"], data["currency"].upper())
    if section == "rules":
        return ("priority", data["priority"])
    if section in offering_config.SECTIONS:
        return offering_config.identity(section, data)
    key = {"accounts": "name", "users": "username", "caps": "name", "contracts": "name"}.get(section, "slug")
    return (data[key],)


def _reference_errors(entries: dict[str, list[dict]], environ: Mapping[str, str]) -> list[str]:
    teams = {e["slug"] for e in entries.get("teams", [])} | set(Team.objects.values_list("slug", flat=True))
    providers = {e["slug"] for e in entries.get("providers", [])} | set(Provider.objects.values_list("slug", flat=True))
    errors = []
    for entry in entries.get("workloads", []):
        if entry["team"] not in teams:
            errors.append(f"{entry['_label']}: team: unknown team {entry['team']!r} (not in this file or the database)")
    for section in ("accounts", "prices"):
        for entry in entries.get(section, []):
            if entry["provider"] not in providers:
                errors.append(
                    f"{entry['_label']}: provider: unknown provider {entry['provider']!r} "
                    "(add it under `providers:` or pick a seeded one)"
                )
    for entry in entries.get("accounts", []):
        variable = entry["credentials_env"]
        if variable and not environ.get(variable):
            errors.append(f"{entry['_label']}: credentials_env: environment variable {variable} is not set or empty")
    for entry in entries.get("users", []):
        if entry["team"] and entry["team"] not in teams:
            errors.append(f"{entry['_label']}: team: unknown team {entry['team']!r} (not in this file or the database)")
    errors.extend(rule_reference_errors(entries, providers))
    errors.extend(cap_reference_errors(entries, environ))
    workloads = {e["slug"] for e in entries.get("workloads", [])} | set(Workload.objects.values_list("slug", flat=True))
    errors.extend(offering_config.offering_reference_errors(entries, providers, workloads))
    return errors


# --- writing ---


def _upsert(model, lookup: dict, values: dict) -> tuple[object, str]:
    obj = model.objects.filter(**lookup).first()
    if obj is None:
        return model.objects.create(**lookup, **values), "created"
    changed = [name for name, value in values.items() if getattr(obj, name) != value]
    if changed:
        for name in changed:
            setattr(obj, name, values[name])
        obj.save()
        return obj, "updated"
    return obj, "unchanged"


def _apply_provider(entry, environ) -> str:
    return _upsert(Provider, {"slug": entry["slug"]}, {"name": entry["name"]})[1]


def _apply_team(entry, environ) -> str:
    return _upsert(Team, {"slug": entry["slug"]}, {"name": entry["name"], "cost_center": entry["cost_center"]})[1]


def _apply_workload(entry, environ, moved=lambda reattribution: None) -> str:
    previous_team = Workload.objects.filter(slug=entry["slug"]).values_list("team_id", flat=True).first()
    values = {
        "name": entry["name"],
        "team": Team.objects.get(slug=entry["team"]),
        "latency_profile": entry["latency_profile"],
        "sla_seconds": entry["sla_seconds"],
        "batch_window_hours": entry["batch_window_hours"],
        "outcome_unit": entry["outcome_unit"],
        "target_cost_per_outcome": entry["target_cost_per_outcome"],
    }
    workload, outcome = _upsert(Workload, {"slug": entry["slug"]}, values)
    if entry["channels"] is not None:
        from finops.alerts.services.channels import channels_choose, channels_chosen, channels_resolve

        try:
            chosen = channels_resolve(entry["channels"], by=None)
        except ValidationError as exc:
            raise ConfigInvalid([f"{entry['_label']}: channels: {' '.join(exc.message_dict['channels'])}"]) from None
        before = {c.id for c in channels_chosen(workload)}
        channels_choose(workload, chosen)
        if outcome == "unchanged" and before != {c.id for c in chosen}:
            outcome = "updated"
    if previous_team is not None and previous_team != workload.team_id:
        # Its history moves to the new team: the admin's move does the same (workload_team_move), but signals on its
        # own; here the apply signals once for everything.
        result = workload_team_sync(workload=workload)
        result.teams.add(previous_team)
        moved(result)
    return outcome


def _apply_account(entry, environ) -> str:
    values = {
        "provider": Provider.objects.get(slug=entry["provider"]),
        "connector": entry["connector"],
        "base_url": entry["base_url"],
        "credentials_env": entry["credentials_env"],
        "enabled": entry["enabled"],
        "sync_interval_minutes": entry["sync_interval_minutes"],
        "focus_services_include": entry["focus_services_include"],
        "focus_services_exclude": entry["focus_services_exclude"],
    }
    secret = environ.get(entry["credentials_env"], "") if entry["credentials_env"] else None
    return account_apply(name=entry["name"], values=values, secret=secret)


def _apply_price(entry, environ) -> str:
    lookup = {
        "provider": Provider.objects.get(slug=entry["provider"]),
        "model": normalise_model(entry["model"]),
        "effective_from": entry["effective_from"] or CATALOG_EFFECTIVE_FROM,
    }
    values = {
        name: entry[name]
        for name in (
            "effective_to",
            "input_per_mtok",
            "output_per_mtok",
            "cached_input_per_mtok",
            "cache_write_per_mtok",
            "batch_input_per_mtok",
            "batch_output_per_mtok",
        )
    }
    existing = ModelPrice.objects.filter(**lookup).first()
    # Config takes over a catalog row (so a catalog reload leaves it) or any price it changes; a hand-entered
    # price restated as it is stays as it is, so applying an export changes nothing.
    if (
        existing is None
        or existing.source == ModelPrice.Source.CATALOG
        or any(getattr(existing, name) != value for name, value in values.items())
    ):
        values["source"] = ModelPrice.Source.CONFIG
    return _upsert(ModelPrice, lookup, values)[1]


def _apply_fx_rate(entry, environ) -> str:
    return _upsert(FxRate, {"day": entry["day"], "currency": entry["currency"].upper()}, {"rate": entry["rate"]})[1]


def _apply_user(entry, environ) -> str:
    return user_apply(
        username=entry["username"],
        email=entry["email"],
        time_zone=entry["time_zone"],
        role=entry["role"],
        team=Team.objects.get(slug=entry["team"]) if entry["team"] else None,
        team_role=entry["team_role"],
    )


_APPLIERS = {
    "providers": _apply_provider,
    "teams": _apply_team,
    "workloads": _apply_workload,
    "accounts": _apply_account,
    "prices": _apply_price,
    "fx_rates": _apply_fx_rate,
    "users": _apply_user,
}
