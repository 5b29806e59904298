"""The `caps:` section: each entry creates or updates the cap of that name through finops.alerts.services.caps (the
same validation as the form and the API). Caps absent from the file are left as they are.

The webhook's signing secret comes from the environment variable `webhook_secret_env` names; without one, a cap
that already has a secret keeps it. The webhook URL is write-only too (it may carry a token or credentials): the
export leaves it out, and an entry without `webhook_url` keeps the cap's (`webhook_url: ""` removes it), so applying
an export changes nothing."""

from collections.abc import Mapping

from finops.alerts.services.caps import CapInvalid, cap_create, cap_snapshot, cap_target_identifier, cap_update
from finops.alerts.services.channels import channels_chosen
from finops.core import crypto
from finops.models import Account, Cap, Provider, Team, Workload


def chosen_ids(owner) -> list[int]:
    return [c.id for c in channels_chosen(owner)]


# A service field → the config field it comes from, so an error names what the file says.
CONFIG_FIELD = {"target": "scope", "alert_on_forecast": "forecast", "webhook_secret": "webhook_secret_env"}


def cap_reference_errors(entries: dict, environ: Mapping[str, str]) -> list[str]:
    known = {
        "team": {e["slug"] for e in entries.get("teams", [])} | set(Team.objects.values_list("slug", flat=True)),
        "workload": {e["slug"] for e in entries.get("workloads", [])}
        | set(Workload.objects.values_list("slug", flat=True)),
        "provider": {e["slug"] for e in entries.get("providers", [])}
        | set(Provider.objects.values_list("slug", flat=True)),
        "account": {e["name"] for e in entries.get("accounts", [])}
        | set(Account.objects.values_list("name", flat=True)),
    }
    errors = []
    for entry in entries.get("caps", []):
        kind, target = entry["scope"]
        if kind != "org" and target not in known[kind]:
            errors.append(f"{entry['_label']}: scope: unknown {kind} {target!r} (not in this file or the database)")
        variable = entry["webhook_secret_env"]
        if variable and not environ.get(variable):
            errors.append(f"{entry['_label']}: webhook_secret_env: environment variable {variable} is not set or empty")
        if variable and entry["webhook_url"] == "":
            errors.append(f"{entry['_label']}: webhook_secret_env: given without a webhook_url to sign for")
    return errors


def cap_apply(entry: dict, environ: Mapping[str, str]) -> tuple[str, list[str]]:
    """Create or update one cap; returns its outcome, or the errors naming the entry and the field."""
    kind, target = entry["scope"]
    variable = entry["webhook_secret_env"]
    fields = {
        "name": entry["name"],
        "scope": kind,
        "target": target,
        "period": entry["period"],
        "amount": entry["amount"],
        "thresholds": entry["thresholds"],
        "alert_on_forecast": entry["forecast"],
        "recipients": entry["recipients"],
        "webhook_url": entry["webhook_url"],
        "webhook_secret": environ.get(variable) if variable else None,
        "channels": entry["channels"],
    }
    if fields["webhook_url"] is None:
        del fields["webhook_url"]  # not in the file: the cap keeps its webhook (a new cap gets none)
    cap = Cap.objects.filter(name=entry["name"]).first()
    try:
        if cap is None:
            cap_create(by=None, **fields)
            return "created", []
        before = (cap_snapshot(cap), chosen_ids(cap))
        if fields["webhook_secret"] is not None and _stored_secret(cap) == fields["webhook_secret"]:
            fields["webhook_secret"] = None  # the same secret: no re-encryption, so nothing changes
        cap = cap_update(cap=cap, by=None, **fields)
        return ("unchanged" if (cap_snapshot(cap), chosen_ids(cap)) == before else "updated"), []
    except CapInvalid as exc:
        return "invalid", [
            f"{entry['_label']}: {CONFIG_FIELD.get(name, name)}: {message}" for name, message in exc.errors.items()
        ]


def _stored_secret(cap: Cap) -> str | None:
    try:
        return crypto.decrypt(cap.webhook_secret_ciphertext) if cap.webhook_secret_ciphertext else None
    except crypto.CredentialError:
        return None


def cap_entry(cap: Cap) -> dict:
    """A cap as `export_config` prints it: never the webhook's URL or secret (applying it keeps both)."""
    entry = {
        "name": cap.name,
        "scope": "org" if cap.scope == "org" else {cap.scope: cap_target_identifier(cap)},
        "period": cap.period,
        "amount": format(cap.amount.normalize(), "f"),
        "thresholds": list(cap.thresholds),
        "forecast": cap.alert_on_forecast,
        "recipients": list(cap.recipients),
    }
    chosen = [c.name for c in channels_chosen(cap)]
    if chosen:
        entry["channels"] = chosen  # by name only: a channel's URL and addresses are never exported
    return entry
