"""The spend pages: overview, teams, workloads (the providers' pages are providers.py), each over the period the URL
names (the picker) and against its comparison period. Reads go through selectors, access through
finops.core.access, every table through its spec (finops.reports.spend_tables) so the page and its CSV show the same
columns."""

from decimal import Decimal

from django.conf import settings
from django.db.models import Count
from django.shortcuts import render
from django.views.decorators.http import require_safe

from finops.alerts.cards import cap_cards
from finops.alerts.selectors.caps import team_caps
from finops.core import access, display
from finops.models import Account, CapScope, Workload
from finops.performance.selectors import outcomes, workload_performance
from finops.performance.selectors.performance import is_batch
from finops.performance.tables import performance as performance_tables
from finops.reports import charts
from finops.reports import spend_tables as specs
from finops.sources.selectors.freshness import source_freshness
from finops.spend.selectors import spend
from finops.spend.selectors.cache_hits import cache_savings
from finops.spend.selectors.shared_charges import METHOD as SHARED_METHOD
from finops.spend.selectors.shared_charges import shared_charges
from finops.web.page_cache import cached_page
from finops.web.period import picker_context

from .scope import Scope, provider_names, unit_rows


@require_safe
@cached_page
def overview(request):
    user = request.user
    scope = Scope(request, chart_by="provider_id", month_spans=True, by_team=True)
    has_data = scope.daily.exists()
    context = {
        "has_data": has_data,
        "has_accounts": Account.objects.exists(),
        "can_manage": access.is_admin(user),
        **picker_context(request),
    }
    if not has_data:
        return render(request, "finops/overview.html", context)
    providers = provider_names()
    by_provider_day = scope.chart_rows()
    # Whole months from the monthly rollup, even for 30 days: the month minus its other days. As an admin at 10M
    # lines, the last 30 days were 44k daily rows (30–35 ms of SQL) against ~9k rows read this way (issue 23).
    # By workload and by model from one read (GROUPING SETS): regrouping ~1,400 workload × model rows twice in
    # Python was ~10 % of a cold request's CPU (issue 23).
    each = scope.sums_each("workload_id", "model", months_beyond_days=0)
    known, unknown, to_80 = spend.ranked(each["workload_id"])
    # Names, slugs and teams as plain values: model instances of a few hundred workloads cost ~10 ms a page.
    workloads = {
        w[0]: w
        for w in Workload.objects.filter(
            id__in=[r["workload_id"] for r in known + unknown if r["workload_id"]]
        ).values_list("id", "name", "slug", "team__name")
    }
    sees_unattributed = access.can_see_unattributed(user)
    workload_link = scope.slug_links("workload-detail")
    for row in known + unknown:
        workload = workloads.get(row["workload_id"])
        row.update(
            label=workload[1] if workload else display.UNATTRIBUTED,
            team=workload[3] if workload else "",
            url=workload_link(workload[2]) if workload else None,
            muted=workload is None,
        )
        if workload is None and sees_unattributed:
            row["action"] = ("by key, project and tag", scope.link("unattributed"))
    tables = {
        "top_workloads": (specs.TOP_WORKLOADS, known),
        "unknown_cost_workloads": (specs.UNKNOWN_COST_WORKLOADS, unknown),
        "by_provider": (specs.BY_PROVIDER, unit_rows(by_provider_day, "provider_id", providers)),
        "by_model": (specs.BY_MODEL, unit_rows(each["model"], "model", grouped=True)),
        "cost_per_outcome": (
            specs.COST_PER_OUTCOME,
            _cost_per_outcome_rows(scope, spent={row["workload_id"]: row for row in known + unknown}),
        ),
    }
    if access.can_see_sources(user):
        freshness = [
            {**r, "label": r["account"].name, "provider": r["account"].provider.name}
            for r in source_freshness(scope.today)
        ]
        tables["freshness"] = (specs.FRESHNESS, freshness)
    if (download := scope.csv("overview", tables)) is not None:
        return download
    page = scope.context(chart=scope.chart(providers, by_provider_day))
    month = page["span_totals"]
    context.update(page)
    context.update(
        mtd=spend.month_to_date(scope.daily, scope.today, known=month),
        mtd_totals=month["this_month"],
        forecast=spend.month_forecast(
            scope.daily, scope.today, grid=scope.grid_over(*spend.forecast_days(scope.today))
        ),
        latest_day=spend.latest_day(scope.daily),
        monthly_points=scope.long,
        tables={name: rows for name, (_, rows) in tables.items()},
        specs={name: spec for name, (spec, _) in tables.items()},
        workloads_to_80=to_80,
        workload_count=len(known),
        can_see_unattributed=sees_unattributed,
        cap_cards=cap_cards(_overview_caps(user)),
    )
    return render(request, "finops/overview.html", context)


def _overview_caps(user):
    """The caps the overview shows: a member's own (their teams' and their workloads' caps, as /caps/ shows them);
    for finance and admins, who see every team, the organisation-wide caps (the rest are on /caps/)."""
    caps = access.visible_caps(user)
    return (caps.filter(scope=CapScope.ORG) if access.sees_everything(user) else caps).order_by("name")


def _cost_per_outcome_rows(scope: Scope, *, spent: dict[int, dict]) -> list[dict]:
    """The workloads the viewer may see that report outcomes in the period: outcomes, spend, Σcost / Σoutcomes, the
    target and whether the period is over it (an unknown cost is neither over nor under). `spent`: the period's
    spend by workload the page has read (its workload table's rows), the figures outcomes.by_workload would read."""
    start, end = scope.period.span()
    reporting = list(
        outcomes.workloads_with_outcomes(access.visible_workloads(scope.user), start, end).order_by(
            "team__name", "name"
        )
    )
    figures = outcomes.by_workload(
        scope.daily, scope.monthly, [w.id for w in reporting], start, end, today=scope.today, spent=spent
    )
    rows = []
    for workload in reporting:
        figure = figures[workload.id]
        target, value = workload.target_cost_per_outcome, figure.per_outcome
        over = "" if target is None or value is None else ("yes" if value > target else "no")
        rows.append(
            {
                "label": workload.name,
                "team": workload.team.name,
                "unit": workload.outcome_unit,
                "url": scope.link("workload-detail", workload.slug),
                "outcomes": figure.outcomes,
                "cost": figure.cost,
                "unpriced_tokens": figure.unpriced_tokens,
                "per_outcome": value,
                "target": target,
                "over_target": over,
            }
        )
    return rows


@require_safe
@cached_page
def team_list(request):
    """Every team the viewer may see (a team without usage spent $0.00: known), then the spend no workload claims
    (for those who may see it) and a total row: the rows add up to the overview's total for the same period, the
    total being that very figure (Scope.totals, as the overview's tile)."""
    scope = Scope(request, chart_by="team_id")
    # By team × workload, once a span: the rows by team (regrouped) and the total row (Scope.totals) come from the
    # same read; by team, then by workload for the total, was four reads of the rollups (issue 23: over six months
    # as an admin, two thirds of the page's time was those reads).
    read = {name: scope.sums("team_id", "workload_id", compare=name == "before") for name in scope.spans}
    now = {r["team_id"]: r for r in spend.regroup(read["now"], "team_id")}
    before = {r["team_id"]: r for r in spend.regroup(read.get("before", []), "team_id")}
    allocation = shared_charges(*scope.period.span())
    rows = []
    for team in access.visible_teams(request.user).annotate(workload_count=Count("workloads")).order_by("name"):
        row = _spent(now.get(team.id))
        row.update(
            label=team.name,
            url=scope.link("team-detail", team.slug),
            cost_center=team.cost_center,
            workloads=team.workload_count,
            change=spend.change(row["cost"], before.get(team.id, {}).get("cost")),
            shared=share.allocated if (share := allocation.share(team.id)) else None,  # none billed: —
        )
        rows.append(row)
    if rows and None in now and access.can_see_unattributed(request.user):
        row = dict(now[None])
        row.update(
            label=display.UNATTRIBUTED,
            url=scope.link("unattributed"),
            muted=True,
            cost_center="",
            workloads=None,
            change=spend.change(row["cost"], before.get(None, {}).get("cost")),
            shared=unattributed.allocated if (unattributed := allocation.share(None)) else None,
        )
        rows.append(row)
    if rows:
        rows.append(
            _total_row(
                scope,
                read,
                workloads=sum(r["workloads"] or 0 for r in rows),
                shared=_added(r["shared"] for r in rows),  # the rows shown, added up
            )
        )
    if (download := scope.csv("teams", {"teams": (specs.TEAMS, rows)})) is not None:
        return download
    return render(request, "finops/team_list.html", {**picker_context(request), "rows": rows, "spec": specs.TEAMS})


def _added(values) -> Decimal | None:
    """The figures shown, added up; None (shown "—") where none is."""
    shown = [value for value in values if value is not None]
    return sum(shown, Decimal(0)) if shown else None


def _total_row(scope: Scope, read: dict[str, list[dict]] | None = None, **extra) -> dict:
    """The period's total as the overview shows it (the same Totals), as a table's last row. `read`: as
    Scope.totals."""
    totals = scope.totals(read)
    now, before = totals["now"], totals.get("before")
    return {
        "label": "Total",
        "total": True,
        "cost": now.cost,
        "unpriced_tokens": now.unpriced_tokens,
        "tokens": now.tokens,
        "priced_tokens": now.priced_tokens,
        "requests": now.requests,
        "usd_per_mtok": now.usd_per_mtok,
        "change": spend.change(now.cost, before.cost if before else None),
        **extra,
    }


def _spent(row: dict | None) -> dict:
    """A group's sums, or a group with no usage in the period: that is $0.00 spent (known), not unknown."""
    if row is None:
        return {
            "cost": spend.ZERO,
            "tokens": 0,
            "unpriced_tokens": 0,
            "priced_tokens": 0,
            "requests": 0,
            "usd_per_mtok": None,
        }
    return dict(row)


@require_safe
@cached_page
def team_detail(request, slug):
    team = access.get_visible_team_or_404(request.user, slug)
    scope = Scope(request, chart_by="workload_id", team=team)
    costs = {r["workload_id"]: r for r in scope.sums("workload_id")}
    workload_rows = []
    for workload in team.workloads.order_by("name"):
        row = _spent(costs.get(workload.id))
        row.update(
            label=workload.name,
            url=scope.link("workload-detail", workload.slug),
            profile=workload.get_latency_profile_display(),
            sla=_sla(workload),
        )
        workload_rows.append(row)
    pairs = scope.sums("provider_id", "model")
    tables = {
        "workloads": (specs.TEAM_WORKLOADS, workload_rows),
        "by_provider": (specs.BY_PROVIDER, unit_rows(pairs, "provider_id", provider_names())),
        "by_model": (specs.BY_MODEL, unit_rows(pairs, "model")),
    }
    if (download := scope.csv(f"team-{team.slug}", tables)) is not None:
        return download
    context = scope.context(
        team=team,
        chart=scope.chart(dict(Workload.objects.filter(team=team).values_list("id", "name"))),
        tokens_chart=scope.tokens_chart(),
        tables={name: rows for name, (_, rows) in tables.items()},
        specs={name: spec for name, (spec, _) in tables.items()},
        cap_cards=cap_cards(team_caps(team)),
        can_create_caps=access.can_create_caps(request.user),
        shared=shared_charges(*scope.period.span()).share(team.id),
        shared_method=SHARED_METHOD,
    )
    return render(request, "finops/team_detail.html", context)


def _sla(workload: Workload) -> str:
    return display.duration(workload.sla_seconds) if workload.sla_seconds else ""


@require_safe
@cached_page
def workload_list(request):
    scope = Scope(request, chart_by="workload_id")
    costs = {r["workload_id"]: r for r in scope.sums("workload_id")}
    rows = []
    for workload in access.visible_workloads(request.user).order_by("team__name", "name"):
        row = _spent(costs.get(workload.id))
        row.update(
            label=workload.name,
            url=scope.link("workload-detail", workload.slug),
            team=workload.team.name,
            profile=workload.get_latency_profile_display(),
        )
        rows.append(row)
    if (download := scope.csv("workloads", {"workloads": (specs.WORKLOADS, rows)})) is not None:
        return download
    return render(
        request, "finops/workload_list.html", {**picker_context(request), "rows": rows, "spec": specs.WORKLOADS}
    )


@require_safe
@cached_page
def workload_detail(request, slug):
    workload = access.get_visible_workload_or_404(request.user, slug)
    scope = Scope(request, chart_by="provider_id", workload=workload)
    pairs = scope.sums("provider_id", "model")
    start, end = scope.period.span()
    performance = workload_performance.workload_section(workload, start, end)
    tables = {
        "by_provider": (specs.BY_PROVIDER, unit_rows(pairs, "provider_id", provider_names())),
        "by_model": (specs.BY_MODEL, unit_rows(pairs, "model")),
        "performance": (
            performance_tables.WORKLOAD_PERFORMANCE,
            performance.rows + ([performance.total] if performance.total else []),
        ),
    }
    if (download := scope.csv(f"workload-{workload.slug}", tables)) is not None:
        return download
    outcome = outcomes.for_workload(scope.daily, scope.monthly, workload.id, start, end, today=scope.today)
    points = outcomes.trend(
        scope.daily, scope.monthly, workload.id, start, end, today=scope.today, by="month" if scope.long else "day"
    )
    outcome_chart = charts.cost_per_outcome_trend(
        points,
        unit=workload.outcome_unit,
        target=workload.target_cost_per_outcome,
        currency=settings.FINOPS_REPORTING_CURRENCY,
        monthly=scope.long,
    )
    context = scope.context(
        workload=workload,
        sla=_sla(workload),
        outcome=outcome,
        outcome_points=points,
        cache_savings=cache_savings(start=start, end=end, workload=workload),
        outcome_monthly=scope.long,
        outcome_chart=outcome_chart if any(p["per_outcome"] is not None for p in points) else None,
        performance=performance,
        performance_table=tables["performance"][1],
        is_batch=is_batch(workload),
        latency_chart=_latency_chart(workload, start, end) if performance.total else None,
        chart=scope.chart(provider_names()),
        tokens_chart=scope.tokens_chart(),
        tables={name: rows for name, (_, rows) in tables.items()},
        specs={name: spec for name, (spec, _) in tables.items()},
    )
    return render(request, "finops/workload_detail.html", context)


def _latency_chart(workload: Workload, start, end) -> dict | None:
    """Daily p99 against the SLA; none for a batch workload (judged on its window) or with no timed day."""
    if is_batch(workload):
        return None
    points = workload_performance.daily_p99(workload, start, end)
    return charts.daily_p99(points, sla_seconds=workload.sla_seconds) if points else None
