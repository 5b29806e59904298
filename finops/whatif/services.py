"""Writes of offerings, model families and routing policies (issue 13): the one write path the admin forms and
`apply_config` (finops/config/offerings.py) both call. Keyword-only; each validates everything first and
raises OfferingInvalid naming every bad field, writing nothing.

Decisions (docs/whatif.md):
- An offering is keyed by (provider, normalised model). Its family defaults to the model's family
  (finops.whatif.families) when none is given.
- An offering needs a price of some kind unless the catalog prices it (checked at read time, not here: the catalog
  may gain the price later); separate input/output prices go together (one without the other is refused).
- A routing policy's primary and fallback are offerings; its allowed set, when given, must hold the primary.
"""

import csv
from decimal import Decimal
from pathlib import Path

from django.core.exceptions import PermissionDenied
from django.db import transaction

from finops.core import access, display
from finops.core.modelids import normalise_model
from finops.models import AuditEntry, ModelFamily, Offering, Provider, RoutingPolicy, Workload
from finops.org.services.audit import audit_record, snapshot
from finops.whatif.families import FamilyMap

PRICE_FIELDS = (
    "input_per_mtok",
    "cached_input_per_mtok",
    "cache_write_per_mtok",
    "output_per_mtok",
    "blended_per_mtok",
)
FIGURE_FIELDS = (
    *PRICE_FIELDS,
    "output_tokens_per_s",
    "ttft_seconds",
    "context_window",
    "requests_per_minute",
    "tokens_per_minute",
)
TIERS = tuple(Offering.Tier.values)


class OfferingInvalid(Exception):
    def __init__(self, errors: dict[str, str]):
        super().__init__("; ".join(f"{name}: {message}" for name, message in errors.items()))
        self.errors = errors


def _may_write(by) -> None:
    if by is not None and not access.can_manage_configuration(by):
        raise PermissionDenied("Only admins change offerings and routing policies.")


def offering_errors(figures: dict) -> dict[str, str]:
    errors = {}
    for name in FIGURE_FIELDS:
        value = figures.get(name)
        if value is not None and value < 0:
            errors[name] = "must be ≥ 0"
    if (figures.get("input_per_mtok") is None) != (figures.get("output_per_mtok") is None):
        missing = "output_per_mtok" if figures.get("output_per_mtok") is None else "input_per_mtok"
        errors[missing] = "give input and output prices together (or one blended_per_mtok)"
    if figures.get("output_tokens_per_s") == 0:
        errors["output_tokens_per_s"] = "must be greater than 0 (leave it empty when unknown)"
    return errors


@transaction.atomic
def offering_upsert(
    *, by=None, provider: Provider, model: str, family: str = "", tier: str = Offering.Tier.STANDARD, **figures
) -> tuple[Offering, str]:
    """Create or update the offering of `provider` serving `model` on `tier`; returns it and
    created|updated|unchanged."""
    _may_write(by)
    unknown = set(figures) - set(FIGURE_FIELDS)
    if unknown:
        raise OfferingInvalid({name: "unknown field" for name in sorted(unknown)})
    values = {name: figures.get(name) for name in FIGURE_FIELDS}
    errors = offering_errors(values)
    model = normalise_model(model) if model and model.strip() else ""
    if not model:
        errors["model"] = "required"
    tier = tier or Offering.Tier.STANDARD
    if tier not in TIERS:
        errors["tier"] = f"must be one of {', '.join(TIERS)}"
    if errors:
        raise OfferingInvalid(errors)
    values["family"] = family.strip() or FamilyMap().family_of(model)
    offering = Offering.objects.filter(provider=provider, model=model, tier=tier).first()
    if offering is None:
        offering = Offering.objects.create(provider=provider, model=model, tier=tier, **values)
        _audit(AuditEntry.Entity.OFFERING, offering, AuditEntry.Action.CREATED, None, by)
        return offering, "created"
    before = offering_snapshot(offering)
    changed = [name for name, value in values.items() if getattr(offering, name) != value]
    for name in changed:
        setattr(offering, name, values[name])
    if changed:
        offering.save()
        _audit(AuditEntry.Entity.OFFERING, offering, AuditEntry.Action.UPDATED, before, by)
    return offering, ("updated" if changed else "unchanged")


def offering_snapshot(offering: Offering) -> dict:
    return snapshot(offering, ("model", "family", "tier", *FIGURE_FIELDS), provider=offering.provider.slug)


def family_snapshot(family: ModelFamily) -> dict:
    return snapshot(family, ("slug", "name", "aliases"))


def policy_snapshot(policy: RoutingPolicy) -> dict:
    return snapshot(
        policy,
        ("primary", "fallback", "constraint"),
        workload=policy.workload.slug,
        allowed=sorted(str(o) for o in policy.allowed.all()),
    )


SNAPSHOTS = {
    AuditEntry.Entity.OFFERING: offering_snapshot,
    AuditEntry.Entity.FAMILY: family_snapshot,
    AuditEntry.Entity.ROUTING: policy_snapshot,
}


def _audit(entity_type: str, obj, action: str, before: dict | None, by) -> None:
    audit_record(
        entity_type=entity_type,
        action=action,
        label=str(obj),
        entity_id=obj.pk,
        by=by,
        before=before,
        after=None if action == AuditEntry.Action.DELETED else SNAPSHOTS[entity_type](obj),
    )


@transaction.atomic
def family_upsert(*, by=None, slug: str, name: str = "", aliases: list[str] = ()) -> tuple[ModelFamily, str]:
    _may_write(by)
    aliases = sorted({normalise_model(a) for a in aliases if a and a.strip()})
    family = ModelFamily.objects.filter(slug=slug).first()
    if family is None:
        family = ModelFamily.objects.create(slug=slug, name=name, aliases=aliases)
        _audit(AuditEntry.Entity.FAMILY, family, AuditEntry.Action.CREATED, None, by)
        return family, "created"
    if (family.name, family.aliases) == (name, aliases):
        return family, "unchanged"
    before = family_snapshot(family)
    family.name, family.aliases = name, aliases
    family.save()
    _audit(AuditEntry.Entity.FAMILY, family, AuditEntry.Action.UPDATED, before, by)
    return family, "updated"


@transaction.atomic
def routing_policy_set(
    *,
    by=None,
    workload: Workload,
    primary: Offering,
    fallback: Offering | None = None,
    constraint: str = RoutingPolicy.Constraint.COST,
    allowed: list[Offering] | None = None,
) -> tuple[RoutingPolicy, str]:
    """Set the workload's routing policy (one per workload)."""
    _may_write(by)
    errors = {}
    if constraint not in RoutingPolicy.Constraint.values:
        errors["constraint"] = f"must be one of {', '.join(RoutingPolicy.Constraint.values)}"
    if fallback is not None and fallback.pk == primary.pk:
        errors["fallback"] = "must differ from the primary"
    allowed = list(allowed or [])
    if allowed and primary.pk not in {o.pk for o in allowed}:
        errors["allowed"] = "must include the primary offering"
    if errors:
        raise OfferingInvalid(errors)
    policy = RoutingPolicy.objects.filter(workload=workload).first()
    wanted = {"primary_id": primary.pk, "fallback_id": fallback.pk if fallback else None, "constraint": constraint}
    allowed_ids = sorted(o.pk for o in allowed)
    if policy is None:
        policy = RoutingPolicy.objects.create(workload=workload, **wanted)
        policy.allowed.set(allowed_ids)
        _audit(AuditEntry.Entity.ROUTING, policy, AuditEntry.Action.CREATED, None, by)
        return policy, "created"
    before = ({k: getattr(policy, k) for k in wanted}, sorted(policy.allowed.values_list("id", flat=True)))
    if before == (wanted, allowed_ids):
        return policy, "unchanged"
    audited = policy_snapshot(policy)
    for name, value in wanted.items():
        setattr(policy, name, value)
    policy.save()
    policy.allowed.set(allowed_ids)
    policy.refresh_from_db()  # the primary and fallback objects, not the ids just set
    _audit(AuditEntry.Entity.ROUTING, policy, AuditEntry.Action.UPDATED, audited, by)
    return policy, "updated"


@transaction.atomic
def offering_delete(*, by=None, offering: Offering) -> None:
    _may_write(by)
    if (
        RoutingPolicy.objects.filter(primary=offering).exists()
        or RoutingPolicy.objects.filter(fallback=offering).exists()
    ):
        raise OfferingInvalid({"offering": "a routing policy uses it; change the policy first"})
    before, offering_id = offering_snapshot(offering), offering.pk
    offering.delete()
    offering.pk = offering_id
    _audit(AuditEntry.Entity.OFFERING, offering, AuditEntry.Action.DELETED, before, by)


SEED_PATH = Path(__file__).resolve().parent.parent / "data" / "offerings.csv"
INTEGER_SEED = ("context_window", "requests_per_minute", "tokens_per_minute")


@transaction.atomic
def offerings_seed(*, path: Path = SEED_PATH) -> int:
    """Create the seed offerings (finops/data/offerings.csv, issue 28) the install does not have yet; returns how
    many. Idempotent, and never overwrites an offering set by config or by hand (config and the admin form have the
    last word). A row with no prices is priced by the catalog (its batch columns for the batch tier); its figures
    are marketing figures until the gateway logs measure the provider (measured beats entered)."""
    providers = {p.slug: p for p in Provider.objects.all()}
    existing = set(Offering.objects.values_list("provider__slug", "model", "tier"))
    named = set(ModelFamily.objects.values_list("slug", flat=True))
    created = 0
    with path.open(newline="") as fh:
        for row in csv.DictReader(fh):
            if row["provider"] not in providers or (row["provider"], row["model"], row["tier"]) in existing:
                continue
            figures = {
                name: (int(row[name]) if name in INTEGER_SEED else Decimal(row[name])) if row.get(name) else None
                for name in (*PRICE_FIELDS[:4], "output_tokens_per_s", "ttft_seconds", *INTEGER_SEED)
            }
            offering_upsert(
                provider=providers[row["provider"]],
                model=row["model"],
                family=row["family"],
                tier=row["tier"],
                **figures,
            )
            existing.add((row["provider"], row["model"], row["tier"]))
            created += 1
            if row["family"] not in named:
                family_upsert(slug=row["family"], name=display.model_name(row["family"]))
                named.add(row["family"])
    return created
