"""The spend pages: overview, teams, workloads, providers. Reads go through selectors; access through finops.access."""

import datetime as dt

from django.conf import settings
from django.shortcuts import get_object_or_404, render
from django.utils import timezone

from finops import access, charts
from finops.models import Account, MonthlySpend, Provider, Workload
from finops.selectors import spend
from finops.selectors.freshness import source_freshness
from finops.selectors.reconciliation import reconciliation

from .tables import csv_response

TRAILING_DAYS = 30
NO_MODEL = "(no model: taxes, credits, fees)"


def _today() -> dt.date:
    return timezone.now().astimezone(dt.UTC).date()


def _trailing(rows, days: int = TRAILING_DAYS):
    today = _today()
    return spend.period(rows, today - dt.timedelta(days=days), today)


def _chart(rows, dimension: str, labels: dict) -> dict:
    return charts.stacked_daily(
        spend.daily_cost_by(rows, dimension), dimension, labels, currency=settings.FINOPS_REPORTING_CURRENCY
    )


OVERVIEW_TABLES = {
    "top_workloads": [("Workload", "label"), ("Team", "team"), ("Spend", "cost"), ("Share", "share"), ("Tokens", "tokens")],
    "providers": [("Provider", "label"), ("Spend", "cost"), ("Tokens", "tokens"), ("USD per M tokens", "usd_per_mtok")],
    "models": [("Model", "label"), ("Spend", "cost"), ("Tokens", "tokens"), ("USD per M tokens", "usd_per_mtok")],
    "freshness": [
        ("Account", "label"), ("Provider", "provider"), ("Status", "state"), ("Detail", "detail"), ("Latest day", "latest_day"),
        ("Days behind", "lag_days"),
    ],
}


def overview(request):
    user = request.user
    rows = spend.visible_spend(user)
    has_data = rows.exists()
    context = {"has_data": has_data, "has_accounts": Account.objects.exists(), "can_manage": access.is_admin(user)}
    if not has_data:
        return render(request, "finops/overview.html", context)
    today = _today()
    reads = spend.overview(rows, today, recent_days=TRAILING_DAYS, monthly=spend.visible_spend(user, MonthlySpend))
    providers = dict(Provider.objects.values_list("id", "name"))
    top, to_80 = spend.with_shares(_named(reads.by_workload, Workload.objects.select_related("team"), "Unattributed"))
    for row in top:
        row["team"] = row["object"].team.name if row["object"] else ""
    tables = {
        "top_workloads": top[:10],
        "providers": [{**r, "label": providers.get(r["provider_id"], "?")} for r in reads.by_provider],
        "models": [{**r, "label": r["model"] or NO_MODEL} for r in reads.by_model],
    }
    if access.can_see_sources(user):
        tables["freshness"] = [
            {**r, "label": r["account"].name, "provider": r["account"].provider.name} for r in source_freshness(today)
        ]
    wanted = request.GET.get("csv")
    if wanted in tables:
        return csv_response(f"overview-{wanted}-{today.isoformat()}", OVERVIEW_TABLES[wanted], tables[wanted] if wanted != "top_workloads" else top)
    context.update(
        mtd=spend.month_to_date(rows, today, known=reads.periods),
        forecast=spend.month_forecast(rows, today, known=reads.periods),
        recent=reads.periods["recent"],
        latest_day=spend.latest_day(rows),
        chart=charts.stacked_daily(reads.daily_by_provider, "provider_id", providers, currency=settings.FINOPS_REPORTING_CURRENCY),
        tables=tables,
        workloads_to_80=to_80,
        workload_count=len(top),
        can_see_unattributed=access.can_see_unattributed(user),
    )
    return render(request, "finops/overview.html", context)


def _named(rows: list[dict], objects_qs, none_label: str) -> list[dict]:
    """Attach the object (or None for the unattributed group) to grouped rows keyed by `<model>_id`."""
    key = f"{objects_qs.model._meta.model_name}_id"
    objects = objects_qs.in_bulk([r[key] for r in rows if r[key] is not None])
    return [{**row, "object": objects.get(row[key]), "label": str(objects.get(row[key], none_label))} for row in rows]


def team_list(request):
    teams = access.visible_teams(request.user)
    costs = {r["team_id"]: r for r in spend.cost_by(_trailing(spend.visible_spend(request.user)), "team_id")}
    rows = [{"team": t, "cost": costs.get(t.id, {}).get("cost"), "workloads": t.workloads.count()} for t in teams]
    return render(request, "finops/team_list.html", {"rows": rows, "days": TRAILING_DAYS})


UNIT_COLUMNS = [("Name", "label"), ("Spend", "cost"), ("Tokens", "tokens"), ("USD per M tokens", "usd_per_mtok")]


def _unit_tables(recent) -> dict:
    """$/M tokens by provider and by model, the tables every spend page shows."""
    providers = dict(Provider.objects.values_list("id", "name"))
    return {
        "by_provider": [{**r, "label": providers.get(r["provider_id"], "?")} for r in spend.unit_costs(recent, "provider_id")],
        "by_model": [{**r, "label": r["model"] or NO_MODEL} for r in spend.unit_costs(recent, "model")],
    }


def _csv_requested(request, prefix: str, tables: dict, columns: dict):
    wanted = request.GET.get("csv")
    if wanted in tables:
        return csv_response(f"{prefix}-{wanted}-{_today().isoformat()}", columns.get(wanted, UNIT_COLUMNS), tables[wanted])
    return None


def team_detail(request, slug):
    team = access.get_visible_team_or_404(request.user, slug)
    recent = _trailing(spend.visible_spend(request.user).filter(team=team))
    workload_costs = {r["workload_id"]: r for r in spend.cost_by(recent, "workload_id")}
    tables = {
        **_unit_tables(recent),
        "workloads": [
            {"label": w.name, "workload": w, "cost": workload_costs.get(w.id, {}).get("cost"), "tokens": workload_costs.get(w.id, {}).get("tokens"),
             "profile": w.get_latency_profile_display(), "sla_seconds": w.sla_seconds}
            for w in team.workloads.all()
        ],
    }
    columns = {"workloads": [("Workload", "label"), ("Latency profile", "profile"), ("SLA seconds", "sla_seconds"), ("Spend", "cost"), ("Tokens", "tokens")]}
    if (download := _csv_requested(request, f"team-{team.slug}", tables, columns)) is not None:
        return download
    context = {
        "team": team,
        "totals": spend.totals(recent),
        "chart": _chart(recent, "workload_id", dict(Workload.objects.filter(team=team).values_list("id", "name"))),
        "tokens_chart": charts.daily_tokens(spend.daily_tokens(recent)),
        "tables": tables,
        "days": TRAILING_DAYS,
    }
    return render(request, "finops/team_detail.html", context)


def workload_list(request):
    workloads = access.visible_workloads(request.user)
    costs = {r["workload_id"]: r for r in spend.cost_by(_trailing(spend.visible_spend(request.user)), "workload_id")}
    rows = [{"workload": w, "cost": costs.get(w.id, {}).get("cost")} for w in workloads]
    return render(request, "finops/workload_list.html", {"rows": rows, "days": TRAILING_DAYS})


def workload_detail(request, slug):
    workload = access.get_visible_workload_or_404(request.user, slug)
    recent = _trailing(spend.visible_spend(request.user).filter(workload=workload))
    tables = _unit_tables(recent)
    if (download := _csv_requested(request, f"workload-{workload.slug}", tables, {})) is not None:
        return download
    context = {
        "workload": workload,
        "totals": spend.totals(recent),
        "chart": _chart(recent, "provider_id", dict(Provider.objects.values_list("id", "name"))),
        "tokens_chart": charts.daily_tokens(spend.daily_tokens(recent)),
        "tables": tables,
        "days": TRAILING_DAYS,
    }
    return render(request, "finops/workload_detail.html", context)


def provider_list(request):
    costs = {r["provider_id"]: r for r in spend.cost_by(_trailing(spend.visible_spend(request.user)), "provider_id")}
    rows = [{"provider": p, "cost": costs.get(p.id, {}).get("cost"), "tokens": costs.get(p.id, {}).get("tokens")}
            for p in Provider.objects.all()]
    rows.sort(key=lambda r: -(r["cost"] or 0))
    return render(request, "finops/provider_list.html", {"rows": rows, "days": TRAILING_DAYS})


PROVIDER_TABLES = {
    "models": [("Model", "model"), ("Spend", "cost"), ("Tokens", "tokens"), ("USD per M tokens", "usd_per_mtok")],
    "reconciliation": [("Day", "day"), ("Billed", "billed"), ("At list price", "at_list"), ("Variance", "variance"),
                       ("Billed without a list price", "unpriced_billed")],
    "list_price": [("Model", "model"), ("Billed per M tokens", "billed_per_mtok"), ("List per M tokens", "list_per_mtok"),
                   ("Variance", "variance")],
}


def provider_detail(request, slug):
    provider = get_object_or_404(Provider, slug=slug)
    recent = _trailing(spend.visible_spend(request.user).filter(provider=provider))
    check = reconciliation(provider=provider, rows=recent)
    tables = {"models": spend.unit_costs(recent, "model"), "reconciliation": check["days"], "list_price": check["models"]}
    wanted = request.GET.get("csv")
    if wanted in tables:
        return csv_response(f"{provider.slug}-{wanted}-{_today().isoformat()}", PROVIDER_TABLES[wanted], tables[wanted])
    context = {
        "provider": provider,
        "totals": spend.totals(recent),
        "tables": tables,
        "chart": _chart(recent, "model", {}),
        "prices": provider.prices.order_by("model", "-effective_from")[:200],
        "days": TRAILING_DAYS,
    }
    return render(request, "finops/provider_detail.html", context)
