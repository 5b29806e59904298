"""The `families:`, `offerings:` and `routing:` sections (issue 13), applied through finops.whatif.services (the
same writes as the admin forms). docs/config.md describes them.

    families: [{slug: llama-3.3-70b, name: Llama 3.3 70B, aliases: [llama3-3-70b-instruct, llama3.3-70b]}]
    offerings: [{provider: groq, model: llama-3.3-70b, family: llama-3.3-70b, input_per_mtok: "0.59",
                 output_per_mtok: "0.79", output_tokens_per_s: "275", ttft_seconds: "0.2", context_window: 131072}]
    routing: [{workload: support-agent, primary: {provider: groq, model: llama-3.3-70b},
               fallback: {provider: cerebras, model: llama3.3-70b}, constraint: latency,
               allowed: [{provider: groq, model: llama-3.3-70b}, {provider: cerebras, model: llama3.3-70b}]}]

A routing entry's offerings must exist (in this file or the database). Entries absent from the file are left as
they are, like every section.
"""

from decimal import Decimal

from finops.core.modelids import normalise_model
from finops.models import ModelFamily, Offering, Provider, RoutingPolicy, Workload
from finops.whatif.services import (
    FIGURE_FIELDS,
    OfferingInvalid,
    family_upsert,
    offering_errors,
    offering_upsert,
    routing_policy_set,
)

from .schema import OFFERING_SECTIONS as SECTIONS  # noqa: F401 - apply.py reads the section names here


def _key(ref: dict) -> tuple[str, str, str]:
    return (ref["provider"], normalise_model(ref["model"]), ref.get("tier") or Offering.Tier.STANDARD)


def identity(section: str, data: dict) -> tuple:
    if section == "offerings":
        return _key(data)
    if section == "routing":
        return (data["workload"],)
    return (data["slug"],)


def offering_reference_errors(entries: dict[str, list[dict]], providers: set[str], workloads: set[str]) -> list[str]:
    errors = []
    known = {_key(e) for e in entries.get("offerings", [])} | {
        (slug, model, tier) for slug, model, tier in Offering.objects.values_list("provider__slug", "model", "tier")
    }
    for entry in entries.get("offerings", []):
        if entry["provider"] not in providers:
            errors.append(
                f"{entry['_label']}: provider: unknown provider {entry['provider']!r} "
                "(add it under `providers:` or pick a seeded one)"
            )
        # The service's own rules, checked before anything is written so every bad entry is named at once.
        problems = offering_errors({name: entry[name] for name in FIGURE_FIELDS})
        errors.extend(f"{entry['_label']}: {name}: {message}" for name, message in problems.items())
    for entry in entries.get("routing", []):
        if entry["workload"] not in workloads:
            errors.append(
                f"{entry['_label']}: workload: unknown workload {entry['workload']!r} (not in this file or the "
                "database)"
            )
        refs = [("primary", entry["primary"])] + ([("fallback", entry["fallback"])] if entry["fallback"] else [])
        refs += [(f"allowed[{i}]", ref) for i, ref in enumerate(entry["allowed"])]
        for name, ref in refs:
            if _key(ref) not in known:
                tier = "" if _key(ref)[2] == Offering.Tier.STANDARD else f" ({_key(ref)[2]})"
                errors.append(
                    f"{entry['_label']}: {name}: no offering {ref['provider']}/{ref['model']}{tier} "
                    "(add it under `offerings:`)"
                )
    return errors


def family_apply(entry: dict) -> str:
    return family_upsert(slug=entry["slug"], name=entry["name"], aliases=entry["aliases"])[1]


def offering_apply(entry: dict) -> str:
    provider = Provider.objects.get(slug=entry["provider"])
    try:
        return offering_upsert(
            provider=provider,
            model=entry["model"],
            family=entry["family"],
            tier=entry.get("tier") or Offering.Tier.STANDARD,
            **{name: entry[name] for name in FIGURE_FIELDS},
        )[1]
    except OfferingInvalid as exc:  # validated above; kept so a service rule added later still names the entry
        raise ValueError("; ".join(f"{entry['_label']}: {k}: {v}" for k, v in exc.errors.items())) from None


def _offering(ref: dict) -> Offering:
    return Offering.objects.get(
        provider__slug=ref["provider"],
        model=normalise_model(ref["model"]),
        tier=ref.get("tier") or Offering.Tier.STANDARD,
    )


def routing_apply(entry: dict) -> str:
    try:
        return routing_policy_set(
            workload=Workload.objects.get(slug=entry["workload"]),
            primary=_offering(entry["primary"]),
            fallback=_offering(entry["fallback"]) if entry["fallback"] else None,
            constraint=entry["constraint"],
            allowed=[_offering(ref) for ref in entry["allowed"]],
        )[1]
    except OfferingInvalid as exc:
        raise ValueError("; ".join(f"{entry['_label']}: {k}: {v}" for k, v in exc.errors.items())) from None


APPLIERS = {"families": family_apply, "offerings": offering_apply, "routing": routing_apply}


# --- export ---


def _decimal(value: Decimal | None) -> str | None:
    return None if value is None else format(value.normalize(), "f")


INTEGER_FIGURES = ("context_window", "requests_per_minute", "tokens_per_minute")


def _ref(offering: Offering) -> dict:
    ref = {"provider": offering.provider.slug, "model": offering.model}
    return ref if offering.tier == Offering.Tier.STANDARD else {**ref, "tier": offering.tier}


def export_sections() -> dict[str, list[dict]]:
    families = [
        {k: v for k, v in {"slug": f.slug, "name": f.name, "aliases": list(f.aliases)}.items() if v}
        for f in ModelFamily.objects.order_by("slug")
    ]
    offerings = []
    for o in Offering.objects.select_related("provider").order_by("provider__slug", "model", "tier"):
        entry = {
            "provider": o.provider.slug,
            "model": o.model,
            "family": o.family,
            "tier": None if o.tier == Offering.Tier.STANDARD else o.tier,
            **{name: _decimal(getattr(o, name)) for name in FIGURE_FIELDS if name not in INTEGER_FIGURES},
            **{name: getattr(o, name) for name in INTEGER_FIGURES},
        }
        offerings.append({k: v for k, v in entry.items() if v not in (None, "")})
    routing = []
    for p in (
        RoutingPolicy.objects.select_related("workload", "primary__provider", "fallback__provider")
        .prefetch_related("allowed__provider")
        .order_by("workload__slug")
    ):
        entry = {"workload": p.workload.slug, "primary": _ref(p.primary)}
        if p.fallback:
            entry["fallback"] = _ref(p.fallback)
        entry["constraint"] = p.constraint
        allowed = sorted((_ref(o) for o in p.allowed.all()), key=lambda r: (r["provider"], r["model"]))
        if allowed:
            entry["allowed"] = allowed
        routing.append(entry)
    return {"families": families, "offerings": offerings, "routing": routing}
