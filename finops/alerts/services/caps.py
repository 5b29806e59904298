"""Writes on spend caps: the ONE path used by the cap form, the API and `apply_config` (docs/architecture.md).

Every field is validated here, and every error names its field (`CapInvalid.errors`: {field: message}), so each
caller shows it its own way (a form error, a 400 body, a config line naming the entry). The scope's target is
given by its identifier, as people write it: a team, workload or provider slug, an account name (the object
itself is accepted too).

Who may write is finops.core.access's rule (admins any cap; a team lead only caps on their team or its workloads).
`by=None` is config as code: the file is trusted like a migration, as for every other section.
"""

from collections.abc import Iterable
from decimal import Decimal, InvalidOperation

from django.core.exceptions import PermissionDenied, ValidationError
from django.core.validators import URLValidator, validate_email
from django.db import transaction

from finops.alerts.models.caps import DEFAULT_THRESHOLDS
from finops.alerts.services.channels import cap_channels_sync, channels_choose, channels_resolve
from finops.core import access, crypto, egress
from finops.core.text import name_check
from finops.models import Account, AuditEntry, Cap, CapPeriod, CapScope, Provider, Team, Workload
from finops.org.services.audit import audit_record, snapshot

ROLE_RECIPIENTS = {
    "role:team_leads": "the leads of the cap's team (organisation-wide caps: every team lead)",
    "role:finance": "every finance user",
    "role:admins": "every admin",
}
THRESHOLD_MIN, THRESHOLD_MAX = 1, 1000
AMOUNT_MAX = Decimal(10) ** 15
# Where a scope's target is looked up, and by which field people name it.
TARGETS = {
    CapScope.TEAM: (Team, "slug"),
    CapScope.WORKLOAD: (Workload, "slug"),
    CapScope.PROVIDER: (Provider, "slug"),
    CapScope.ACCOUNT: (Account, "name"),
}
FIELDS = (
    "name",
    "scope",
    "target",
    "period",
    "amount",
    "thresholds",
    "alert_on_forecast",
    "recipients",
    "webhook_url",
    "webhook_secret",
    "channels",
)


class CapInvalid(Exception):
    def __init__(self, errors: dict[str, str]):
        super().__init__("; ".join(f"{name}: {message}" for name, message in errors.items()))
        self.errors = errors


def webhook_shown(cap: Cap) -> str:
    """What may be shown of a cap's webhook, and only to those who may edit the cap (finops.core.access.can_write_cap):
    its scheme and host. The URL (it may carry a token or credentials) and the signing secret are write-only
    outside the Django admin; the secret is never shown at all, not even its first characters."""
    return egress.url_label(cap.webhook_url) if cap.webhook_url else ""


def cap_target_identifier(cap: Cap) -> str | None:
    """The scope's target as people write it (slug or account name); None for the organisation."""
    if cap.scope == CapScope.ORG:
        return None
    model, key = TARGETS[cap.scope]
    return getattr(cap.scope_object, key)


@transaction.atomic
def cap_create(*, by, **fields) -> Cap:
    unknown = set(fields) - set(FIELDS)
    if unknown:
        raise TypeError(f"unknown cap fields: {sorted(unknown)}")
    fields.setdefault("period", CapPeriod.MONTH)
    fields.setdefault("thresholds", None)
    fields.setdefault("alert_on_forecast", True)
    fields.setdefault("webhook_url", "")
    fields.setdefault("webhook_secret", None)
    for required in ("name", "scope", "amount", "recipients"):
        fields.setdefault(required, None)
    cap = Cap(created_by=by if by is not None and by.is_authenticated else None)
    chosen = _apply(cap, by, fields)
    cap.save()
    cap_channels_sync(cap)
    if chosen is not None:
        channels_choose(cap, chosen)
    _audit(cap, AuditEntry.Action.CREATED, None, by)
    return cap


@transaction.atomic
def cap_update(*, cap: Cap, by, **fields) -> Cap:
    """Change the given fields; the others stay. `webhook_secret`: None (or absent) keeps the stored one, a
    string replaces it; clearing `webhook_url` drops the secret with it."""
    unknown = set(fields) - set(FIELDS)
    if unknown:
        raise TypeError(f"unknown cap fields: {sorted(unknown)}")
    if by is not None and not access.can_write_cap(by, cap):
        raise PermissionDenied("You may not change this cap.")
    if "scope" in fields and "target" not in fields and fields["scope"] != cap.scope:
        fields["target"] = None  # a new scope needs its own target: say so rather than keep the old one
    current = {
        "name": cap.name,
        "scope": cap.scope,
        "target": cap.scope_object,
        "period": cap.period,
        "amount": cap.amount,
        "thresholds": cap.thresholds,
        "alert_on_forecast": cap.alert_on_forecast,
        "recipients": cap.recipients,
        "webhook_url": cap.webhook_url,
        "webhook_secret": None,
    }
    before, audited = cap_snapshot(cap), cap_audit_snapshot(cap)
    chosen = _apply(cap, by, {**current, **fields})
    if cap_snapshot(cap) != before:  # saving an unchanged cap would only move updated_at
        cap.save()
        cap_channels_sync(cap)
        _audit(cap, AuditEntry.Action.UPDATED, audited, by)
    if chosen is not None:
        channels_choose(cap, chosen)
    return cap


def cap_snapshot(cap: Cap) -> tuple:
    """Every value a write can change, to tell a change from a restatement."""
    return (
        cap.name,
        cap.scope,
        cap.team_id,
        cap.workload_id,
        cap.provider_id,
        cap.account_id,
        cap.period,
        Decimal(cap.amount),
        list(cap.thresholds),
        cap.alert_on_forecast,
        list(cap.recipients),
        cap.webhook_url,
        cap.webhook_secret_ciphertext,
    )


@transaction.atomic
def cap_delete(*, cap: Cap, by) -> None:
    """The cap and its alert history go (AlertEvent.cap cascades); sent emails stay sent."""
    if by is not None and not access.can_write_cap(by, cap):
        raise PermissionDenied("You may not delete this cap.")
    before, cap_id = cap_audit_snapshot(cap), cap.pk
    cap.delete()
    cap.pk = cap_id
    _audit(cap, AuditEntry.Action.DELETED, before, by)


def cap_audit_snapshot(cap: Cap) -> dict:
    """What the audit log shows of a cap; `webhook_secret` is masked by audit_record."""
    target = cap_target_identifier(cap) if cap.scope else None
    return snapshot(
        cap,
        ("name", "scope", "period", "amount", "thresholds", "alert_on_forecast", "recipients", "webhook_url"),
        target=target,
        webhook=webhook_shown(cap),
        webhook_secret=cap.webhook_secret_ciphertext,
    )


def _audit(cap: Cap, action: str, before: dict | None, by) -> None:
    audit_record(
        entity_type=AuditEntry.Entity.CAP,
        action=action,
        label=cap.name,
        entity_id=cap.pk,
        by=by,
        before=before,
        after=None if action == AuditEntry.Action.DELETED else cap_audit_snapshot(cap),
        secrets=("webhook_url", "webhook_secret"),
    )  # the URL reads "set"/"changed"; `webhook` its host


# --- validation ---


def _apply(cap: Cap, by, fields: dict) -> list | None:
    """Validate every field (collecting every error), check who writes, then set them on `cap` (unsaved); the
    channels it chooses (None: not given, the chosen ones stay)."""
    errors: dict[str, str] = {}

    def check(name, clean, value):
        try:
            return clean(value)
        except ValidationError as exc:
            errors[name] = " ".join(exc.messages)
            return None

    name = check("name", _name, fields["name"])
    if name and Cap.objects.filter(name=name).exclude(pk=cap.pk).exists():
        errors["name"] = f"A cap named “{name}” exists; cap names are unique."
    scope = check("scope", _scope, fields["scope"])
    target = check("target", lambda value: _target(scope, value, by), fields.get("target")) if scope else None
    period = check("period", _period, fields["period"])
    amount = check("amount", _amount, fields["amount"])
    thresholds = check("thresholds", _thresholds, fields["thresholds"])
    recipients = check("recipients", _recipients, fields["recipients"])
    webhook_url = check("webhook_url", _webhook_url, fields["webhook_url"])
    chosen = None
    if fields.get("channels") is not None:
        try:
            chosen = channels_resolve(fields["channels"], by=by)
        except ValidationError as exc:
            errors["channels"] = " ".join(exc.message_dict["channels"])
    secret = fields.get("webhook_secret")
    if secret is not None and not isinstance(secret, str):
        errors["webhook_secret"] = "Must be text."
    secret = (secret or "").strip() or None
    if "webhook_url" not in errors:
        has_secret = secret is not None or (bool(cap.webhook_secret_ciphertext) and bool(webhook_url))
        if webhook_url and not has_secret:
            errors["webhook_secret"] = (
                "A webhook needs a signing secret (receivers verify the HMAC-SHA256 signature with it)."
            )
        elif secret and not webhook_url:
            errors["webhook_url"] = "A signing secret was given without a webhook URL to sign for."
    if errors:
        raise CapInvalid(errors)
    if by is not None and not access.can_write_cap_scope(by, scope, target):
        raise PermissionDenied(
            "Only admins set caps on the whole organisation, a provider or an account; a team lead sets caps on "
            "their own team and its workloads."
        )
    cap.name, cap.scope, cap.period, cap.amount = name, scope, period, amount
    cap.team = cap.workload = cap.provider = cap.account = None
    if target is not None:
        setattr(cap, scope, target)
    cap.thresholds, cap.recipients = thresholds, recipients
    cap.alert_on_forecast = bool(fields["alert_on_forecast"])
    cap.webhook_url = webhook_url
    if not webhook_url:
        cap.webhook_secret_ciphertext = ""
    elif secret is not None:
        cap.webhook_secret_ciphertext = crypto.encrypt(secret)
    return chosen


def _name(value) -> str:
    name = (value or "").strip() if isinstance(value, str) or value is None else None
    if name is None:
        raise ValidationError("Must be text.")
    if not name:
        raise ValidationError("Give the cap a name (it is how emails and pages call it).")
    name_check(name)
    if len(name) > Cap._meta.get_field("name").max_length:
        raise ValidationError(f"At most {Cap._meta.get_field('name').max_length} characters.")
    return name


def _scope(value) -> str:
    if value not in CapScope.values:
        raise ValidationError(f"Unknown scope {value!r}; one of: {', '.join(CapScope.values)}.")
    return value


def _target(scope: str, value, by):
    """The scope's object, from its identifier. One another team's member may not see reads as unknown, so
    a lead naming another team's workload learns nothing about it (docs/architecture.md invariant 9)."""
    if scope == CapScope.ORG:
        if value not in (None, ""):
            raise ValidationError("A cap on the whole organisation has no target; leave it out.")
        return None
    model, key = TARGETS[scope]
    if value in (None, ""):
        raise ValidationError(f"A {scope} cap needs the {scope} it is on ({model.__name__.lower()} {key}).")
    if isinstance(value, model):
        found = value
    elif isinstance(value, str):
        found = model.objects.filter(**{key: value.strip()}).first()
    else:
        raise ValidationError(f"Name the {scope} by its {key}.")
    visible = found is not None and (by is None or _visible_target(by, scope, found))
    if not visible:
        shown = getattr(value, key, value)
        raise ValidationError(f"No {scope} with the {key} {shown!r}.")
    return found


def _visible_target(by, scope: str, target) -> bool:
    if access.sees_everything(by):
        return True
    if scope == CapScope.TEAM:
        return access.visible_teams(by).filter(id=target.id).exists()
    if scope == CapScope.WORKLOAD:
        return access.visible_workloads(by).filter(id=target.id).exists()
    return True  # providers and accounts are no team's secret; writing a cap on them is refused anyway


def _period(value) -> str:
    if value not in CapPeriod.values:
        raise ValidationError(f"Unknown period {value!r}; one of: {', '.join(CapPeriod.values)}.")
    return value


def _amount(value) -> Decimal:
    if value is None or value == "" or isinstance(value, (bool, float)):
        raise ValidationError(
            'Give the amount as a decimal number, e.g. "5000" or "1250.50".'
            if value in (None, "")
            else 'Give the amount as a decimal string ("5000.00"), not a float.'
        )
    try:
        amount = value if isinstance(value, Decimal) else Decimal(str(value).strip().replace(",", ""))
    except InvalidOperation:
        raise ValidationError(f"{value!r} is not a decimal number.") from None
    if not amount.is_finite() or amount <= 0:
        raise ValidationError("Must be more than 0.")
    if amount >= AMOUNT_MAX:
        raise ValidationError("Too large.")
    return amount


def _thresholds(value) -> list[int]:
    """Whole percentages 1–1000, deduplicated and sorted; none given means the default 50, 80, 100."""
    if value is None or value == [] or value == "":
        return list(DEFAULT_THRESHOLDS)
    if isinstance(value, str):
        value = [part for part in value.replace(";", ",").split(",") if part.strip()]
    if not isinstance(value, Iterable):
        raise ValidationError("Give a list of percentages, e.g. 50, 80, 100.")
    found = set()
    for item in value:
        text = item.strip().rstrip("%").strip() if isinstance(item, str) else item
        if isinstance(text, bool) or not (isinstance(text, int) or (isinstance(text, str) and text.isdigit())):
            raise ValidationError(f"{item!r} is not a whole percentage (e.g. 80).")
        number = int(text)
        if not THRESHOLD_MIN <= number <= THRESHOLD_MAX:
            raise ValidationError(f"{number} % is outside {THRESHOLD_MIN}–{THRESHOLD_MAX} %.")
        found.add(number)
    return sorted(found)


def _recipients(value, extra_roles: dict | None = None) -> list[str]:
    """Email addresses and roles, in the order given, each once (`extra_roles`: roles a channel may name too)."""
    roles = {**ROLE_RECIPIENTS, **(extra_roles or {})}
    if isinstance(value, str):
        value = value.replace(";", ",").replace("\n", ",").split(",")
    if not isinstance(value, Iterable):
        raise ValidationError("Give a list of email addresses and roles.")
    found: list[str] = []
    for item in value:
        if not isinstance(item, str):
            raise ValidationError(f"{item!r} is not an email address or a role.")
        text = item.strip()
        if not text:
            continue
        if text.startswith("role:"):
            if text not in roles:
                raise ValidationError(f"Unknown role {text!r}; the roles are {', '.join(roles)}.")
        else:
            try:
                validate_email(text)
            except ValidationError:
                raise ValidationError(
                    f"{text!r} is neither an email address nor a role ({', '.join(roles)})."
                ) from None
        if text not in found:
            found.append(text)
    if not found:
        raise ValidationError("Give at least one recipient: an email address or a role such as role:team_leads.")
    return found


def _webhook_url(value) -> str:
    url = (value or "").strip() if isinstance(value, str) or value is None else None
    if url is None:
        raise ValidationError("Must be text.")
    if url:
        URLValidator(schemes=["http", "https"], message="Must be an http(s) URL.")(url)
        if len(url) > Cap._meta.get_field("webhook_url").max_length:
            raise ValidationError("Too long.")
        try:
            egress.url_check(url)  # checked again at every send: what the name resolves to may change
        except egress.EgressRefused as exc:
            raise ValidationError(f"Refused: {exc}.") from None
    return url
