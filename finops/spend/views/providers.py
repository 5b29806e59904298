"""The providers' spend pages: the providers used in the period, and one provider's spend by model, its billed
amounts against list prices (reconciliation), its list prices, its measured speed and the same model families
elsewhere — over the period the URL names, as the other spend pages (scope.py: `Scope`, `unit_rows`)."""

from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_safe

from finops.core import display
from finops.models import Provider
from finops.performance.selectors import workload_performance
from finops.performance.tables import performance as performance_tables
from finops.reports import spend_tables as specs
from finops.spend.selectors import spend
from finops.spend.selectors.reconciliation import reconciliation
from finops.web.page_cache import cached_page
from finops.web.period import picker_context
from finops.whatif import tables as whatif_tables

from .scope import Scope, unit_rows


@require_safe
@cached_page
def provider_list(request):
    """The providers with usage in the period (a provider nobody used is not a $0.00 row: it is named under the
    table), biggest first."""
    scope = Scope(request, chart_by="provider_id")
    costs = {r["provider_id"]: r for r in scope.sums("provider_id")}
    rows, idle = [], []
    for provider in Provider.objects.order_by("name"):
        if provider.id not in costs:
            idle.append(provider.name)
            continue
        row = dict(costs[provider.id])
        row.update(label=provider.name, url=scope.link("provider-detail", provider.slug), provider=provider)
        rows.append(row)
    rows = spend.by_cost(rows)
    if (download := scope.csv("providers", {"providers": (specs.PROVIDERS, rows)})) is not None:
        return download
    return render(
        request,
        "finops/provider_list.html",
        {**picker_context(request), "rows": rows, "spec": specs.PROVIDERS, "idle": idle},
    )


def _same_weights(user, scope, model_rows: list[dict]) -> list[dict]:
    """The families this provider served in the period, across every provider (issue 13)."""
    from finops.whatif.selectors import family_comparison
    from finops.whatif.selectors.offerings import family_map

    start, end = scope.period.span()
    mapping = family_map()
    mine = {mapping.family_of(row["model"]) for row in model_rows if row["model"]}
    return family_comparison(user, mine, start, end, today=scope.today) if mine else []


@require_safe
@cached_page
def provider_detail(request, slug):
    provider = get_object_or_404(Provider, slug=slug)
    scope = Scope(request, chart_by="model", provider=provider)
    check = reconciliation(provider=provider, rows=spend.period(scope.daily, *scope.period.span()))
    model_rows = scope.sums("model")
    for row in check["models"]:
        row["label"] = display.model_name(row["model"])
    prices = [
        {
            "label": display.model_name(p.model),
            "model": p.model,
            "effective_from": p.effective_from,
            "effective_to": p.effective_to,
            "input_per_mtok": p.input_per_mtok,
            "cached_input_per_mtok": p.cached_input_per_mtok,
            "output_per_mtok": p.output_per_mtok,
            "source": p.get_source_display(),
        }
        for p in provider.prices.order_by("model", "-effective_from")[:200]
    ]
    tables = {
        "by_model": (specs.BY_MODEL, unit_rows(model_rows, "model")),
        "reconciliation": (specs.RECONCILIATION, check["days"]),
        "list_price": (specs.LIST_PRICE_CHECK, check["models"]),
        "prices": (specs.LIST_PRICES, prices),
        "measured_speed": (
            performance_tables.PROVIDER_SPEED,
            workload_performance.provider_speed(
                provider, workload_performance.workloads_scope(request.user), *scope.period.span()
            ),
        ),
        "same_weights": (whatif_tables.FAMILY_COMPARISON, _same_weights(request.user, scope, model_rows)),
    }
    if (download := scope.csv(provider.slug, tables)) is not None:
        return download
    context = scope.context(
        provider=provider,
        chart=scope.chart({}),
        tables={name: rows for name, (_, rows) in tables.items()},
        specs={name: spec for name, (spec, _) in tables.items()},
    )
    return render(request, "finops/provider_detail.html", context)
