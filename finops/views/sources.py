"""Sources: provider accounts and their ingest runs (finance and admins; members get 404)."""

import datetime as dt

from django.core.paginator import Paginator
from django.db.models import Count, Sum
from django.http import Http404
from django.shortcuts import get_object_or_404, render
from django.utils import timezone

from finops import access
from finops.models import Account, UsageLine

RUNS_PER_PAGE = 25


def _require_sources(user):
    if not access.can_see_sources(user):
        raise Http404("No such page.")


def source_list(request):
    _require_sources(request.user)
    since = timezone.now() - dt.timedelta(days=30)
    recent = {
        r["account_id"]: r
        for r in UsageLine.objects.filter(period_start__gte=since)
        .values("account_id")
        .annotate(lines=Count("id"), cost=Sum("reporting_cost"))
    }
    accounts = [
        {"account": a, "lines": recent.get(a.id, {}).get("lines", 0), "cost": recent.get(a.id, {}).get("cost")}
        for a in Account.objects.select_related("provider")
    ]
    return render(request, "finops/source_list.html", {"accounts": accounts})


def source_detail(request, pk):
    _require_sources(request.user)
    account = get_object_or_404(Account.objects.select_related("provider"), pk=pk)
    runs = Paginator(account.runs.all(), RUNS_PER_PAGE).get_page(request.GET.get("page"))
    return render(request, "finops/source_detail.html", {"account": account, "runs": runs})
