"""The what-if calculator page and the Savings page (issue 13). Reads through finops.whatif.selectors; tables from
finops.whatif.tables (page and CSV); the chart from finops.reports.charts. Everyone signed in may use the
calculator on a typed profile or a preset (offerings are the organisation's, not a team's); a workload is
priced only for those who see it (finops.core.access: a member, their teams' workloads)."""

from django.conf import settings
from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_safe

from finops.core import access, display
from finops.models import Offering, RoutingPolicy
from finops.reports import charts
from finops.web.methods import require_form_methods
from finops.web.period import today_utc
from finops.web.tables import csv_requested
from finops.whatif import services as offering_service
from finops.whatif import tables as whatif_tables
from finops.whatif.calculator import BATCH_ASSUMPTION, CACHE_ASSUMPTION, ProfileInvalid
from finops.whatif.forms import FIELDS, OfferingForm
from finops.whatif.options import OPTIONS, PRESETS, parse_options
from finops.whatif.routing_litellm import litellm_router_config
from finops.whatif.savings_rows import PAGE_ROWS, VERDICT, latency_text, page_savings, policy_text
from finops.whatif.selectors import savings, what_if
from finops.whatif.selectors.offerings import catalogue, offered_families


def _prices_text(figures) -> str:
    if figures.input_per_mtok.value is not None and figures.output_per_mtok.value is not None:
        text = f"{display.per_mtok(figures.input_per_mtok.value)} · {display.per_mtok(figures.output_per_mtok.value)}"
    elif figures.blended_per_mtok.value is not None:
        text = f"{display.per_mtok(figures.blended_per_mtok.value)} blended"
    else:
        return display.DASH
    return text + (f" − {figures.discount_pct.normalize():f} %" if figures.discount_pct else "")


def why_not(result) -> str:
    """Why an offering cannot be the headline, in words: its gates, the missing evidence, implausible figures."""
    reasons = [*result.gates, *([result.evidence_mark] if result.evidence_mark else []), *result.sanity]
    return "; ".join(reasons)


def result_row(result, *, batch: bool) -> dict:
    figures = result.offering
    verdict = VERDICT[result.meets_sla] if result.sla_kind != "none" else "No SLA"
    if batch and result.batch_hours_per_night is not None:
        verdict += f" ({result.batch_hours_per_night.quantize(display.CENT)} h a night)"
    if result.sla_basis == "measured p99":
        verdict += " (p99)"
    price_source = figures.input_per_mtok.source or figures.blended_per_mtok.source
    quality = display.DASH
    if result.evidence is not None:
        quality = f"{result.evidence.normalize():f}"
    elif result.group == 0:
        quality = "same model"
    return {
        "offering": figures.label + (" — today" if result.is_today else ""),
        "provider": figures.provider,
        "model": figures.model,
        "tier": figures.tier,
        "family": figures.family,
        "group": result.group_name,
        "monthly_cost": result.monthly_cost,
        "versus_today": result.versus_today,
        "list_per_mtok": result.list_per_mtok,
        "effective_per_mtok": result.effective_per_mtok,
        "latency": latency_text(result),
        "latency_seconds": None
        if result.latency_seconds is None
        else str(result.latency_seconds.quantize(display.CENT)),
        "verdict": verdict,
        "quality": quality,
        "why_not": why_not(result) or ("Recommended" if result.best else ""),
        "context": {True: "Fits", False: "Too small", None: display.DASH}[result.fits_context],
        "missing": ", ".join(result.missing),
        "prices": _prices_text(figures),
        "price_source": price_source,
        "speed": display.DASH
        if figures.output_tokens_per_s.value is None
        else f"{figures.output_tokens_per_s.value.quantize(display.CENT)}",
        "speed_source": figures.output_tokens_per_s.source,
        "highlight": result.best,
    }


def chart_points(result, *, batch: bool) -> list[dict]:
    """Today's setup, the same model's offerings and the headline: what a team would choose between (the rest are
    in the table; 80 markers would hide them)."""
    points = []
    for r in result.results:
        if not (r.is_today or r.best or (r.group == 0 and not r.gates)):
            continue
        points.append(
            {
                "provider": r.offering.provider_name or r.provider,
                "label": ("Today: " if r.is_today else "") + r.offering.label,
                "x": r.batch_hours_per_night if batch else r.latency_seconds,
                "cost": r.monthly_cost,
                "best": r.best,
                "today": r.is_today,
            }
        )
    return points


@require_safe
def whatif_page(request):
    today = today_utc()
    raw = {name: request.GET.get(name, "") for name in OPTIONS}
    preset = request.GET.get("preset", "")
    if preset in PRESETS and not raw["workload"]:
        profile = PRESETS[preset]
        raw.update(
            requests=str(profile.requests),
            input_tokens=str(profile.input_tokens),
            output_tokens=str(profile.output_tokens),
            cached_input_tokens=str(profile.cached_input_tokens),
            sla_seconds=str(profile.sla_seconds or ""),
            batch_window_hours=str(profile.batch_window_hours or ""),
        )
    context = {
        "raw": raw,
        "preset": preset,
        "presets": PRESETS,
        "families": offered_families(),
        "workloads": access.visible_workloads(request.user).order_by("team__name", "name"),
        "specs": whatif_tables,
        "result": None,
        "error": None,
        "batch_assumption": BATCH_ASSUMPTION,
        "cache_assumption": CACHE_ASSUMPTION,
    }
    asked = any(raw.values())
    if asked:
        try:
            result = what_if(request.user, today=today, **parse_options(raw))
        except ProfileInvalid as exc:
            context["error"] = exc
        else:
            batch = result.profile.batch_window_hours is not None
            rows = [result_row(r, batch=batch) for r in result.results]
            response = csv_requested(
                request, "whatif", {"whatif": (whatif_tables.WHATIF_RESULTS, rows)}, stem=today.isoformat()
            )
            if response is not None:
                return response
            currency = settings.FINOPS_REPORTING_CURRENCY
            points = chart_points(result, batch=batch)
            sla = result.profile.batch_window_hours if batch else result.profile.sla_seconds
            context.update(
                result=result,
                rows=rows,
                batch=batch,
                chart=charts.whatif_scatter(
                    points,
                    sla=None if sla is None else float(sla),
                    currency=currency,
                    axis="hours a night" if batch else "seconds per request",
                ),
            )
    return render(request, "finops/whatif.html", context)


@require_safe
def savings_page(request):
    today = today_utc()
    report = page_savings(request.user, today)  # precomputed for the organisation, narrowed to what the user sees
    rows = report.rows
    response = csv_requested(request, "savings", {"savings": (whatif_tables.SAVINGS, rows)}, stem=today.isoformat())
    if response is not None:
        return response
    return render(
        request,
        "finops/savings.html",
        {
            "report": report,
            "rows": rows,
            "specs": whatif_tables,
            "has_policies": report.has_policies,
            "page_rows": PAGE_ROWS,
        },
    )


def fallback_chain(policy, comparison: dict) -> list[tuple[str, str]]:
    """The policy's fallback and every other offering of the primary's family passing every gate (of its allowed
    set, when it has one), in the comparison's order (issue 28): same model first, cheapest passing first. An
    offering not compared (no usage in the last 30 days) keeps the policy's own fallback only."""
    primary = (policy.primary.provider.slug, policy.primary.model)
    own = (policy.fallback.provider.slug, policy.fallback.model) if policy.fallback else None
    results = comparison.get((policy.workload.slug, policy.primary.family), [])
    chain = []
    for result in results:
        pair = (result.provider, result.model)
        if pair == primary or pair in chain or result.tier != "standard":
            continue  # LiteLLM routes requests as they come: the batch tier is not a fallback
        passes = not (result.gates or result.evidence_mark or result.sanity) and result.monthly_cost is not None
        if pair == own or passes:
            chain.append(pair)
    if own is not None and own not in chain:
        chain.insert(0, own)
    return chain


@require_safe
def routing_export(request):
    """The routing policies of the workloads the user sees, as a LiteLLM router config snippet (YAML)."""
    visible = access.visible_workloads(request.user).values_list("id", flat=True)
    comparison = {(row.workload.slug, row.family): row.results for row in savings(request.user, today_utc()).rows}
    policies = (
        RoutingPolicy.objects.filter(workload_id__in=list(visible))
        .select_related("workload", "primary__provider", "fallback__provider")
        .order_by("workload__slug")
    )
    text = litellm_router_config(
        [
            {
                "workload": p.workload.slug,
                "primary": (p.primary.provider.slug, p.primary.model),
                "fallbacks": fallback_chain(p, comparison),
                "constraint": p.constraint,
            }
            for p in policies
        ]
    )
    response = HttpResponse(text, content_type="application/yaml; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="litellm-router.yaml"'
    return response


# --- offerings: the list (everyone signed in) and the form (admins) ---


@require_safe
def offering_list(request):
    cat = catalogue(today_utc())
    rows = []
    for figures in cat.offerings:
        offering_id = cat.ids[(figures.provider, figures.model, figures.tier)]
        row = {
            "provider": figures.provider_name or figures.provider,
            "model": figures.model,
            "name": figures.model_name or figures.model,
            "tier": figures.tier,
            "family": figures.family_name or figures.family,
            "prices": _prices_text(figures),
            "price_source": figures.input_per_mtok.source or figures.blended_per_mtok.source,
            "speed": display.DASH
            if figures.output_tokens_per_s.value is None
            else str(figures.output_tokens_per_s.value.quantize(display.CENT)),
            "speed_source": figures.output_tokens_per_s.source,
            "ttft": display.DASH if figures.ttft_seconds.value is None else display.seconds(figures.ttft_seconds.value),
            "ttft_source": figures.ttft_seconds.source,
            "context": figures.context_window,
        }
        if access.is_admin(request.user):
            row["action"] = ("Edit", f"/offerings/{offering_id}/edit/")
        rows.append(row)
    response = csv_requested(
        request, "offerings", {"offerings": (whatif_tables.OFFERINGS, rows)}, stem=today_utc().isoformat()
    )
    if response is not None:
        return response
    visible = access.visible_workloads(request.user).values_list("id", flat=True)
    policies = (
        RoutingPolicy.objects.filter(workload_id__in=list(visible))
        .select_related("workload", "primary__provider", "fallback__provider")
        .order_by("workload__slug")
    )
    return render(
        request,
        "finops/offering_list.html",
        {
            "rows": rows,
            "specs": whatif_tables,
            "can_edit": access.is_admin(request.user),
            "policies": [{"workload": p.workload.name, "policy": policy_text(p)} for p in policies],
        },
    )


def _require_admin(user) -> None:
    """Adding, editing and deleting offerings: admins; everyone else sees them, so is refused (403)."""
    access.require_change(user, sees=access.can_see_offerings, changes=access.can_manage_offerings)


@require_form_methods
def offering_create(request):
    _require_admin(request.user)
    return _offering_form(request, None)


@require_form_methods
def offering_edit(request, pk):
    _require_admin(request.user)
    return _offering_form(request, get_object_or_404(Offering, pk=pk))


def _offering_form(request, offering):
    form = OfferingForm(request.POST or None, instance=offering)
    if request.method == "POST" and request.POST.get("delete") and offering is not None:
        try:
            offering_service.offering_delete(by=request.user, offering=offering)
        except offering_service.OfferingInvalid as invalid:
            form = OfferingForm(instance=offering)
            form.add_error(None, "; ".join(invalid.errors.values()))
        else:
            messages.success(request, f"Offering {offering} deleted.")
            return redirect("offering-list")
    elif request.method == "POST" and form.is_valid():
        data = {name: form.cleaned_data[name] for name in FIELDS}
        try:
            saved, _ = offering_service.offering_upsert(by=request.user, **data)
        except offering_service.OfferingInvalid as invalid:
            for field, message in invalid.errors.items():
                form.add_error(field if field in form.fields else None, message)
        else:
            messages.success(request, f"Offering {saved} saved.")
            return redirect("offering-list")
    return render(request, "finops/offering_form.html", {"form": form, "offering": offering})
