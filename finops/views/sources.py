"""Sources: provider accounts, their ingest runs, uploads and "Sync now" (finance reads; admins act; members 404)."""

import datetime as dt

from django.contrib import messages
from django.core.paginator import Paginator
from django.db import transaction
from django.db.models import Max, Q, Sum
from django.http import Http404, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from finops import access
from finops.models import Account, CostBasis, DailySpend
from ingest.services import sync_request, usage_upload_accept
from ingest.writing import IngestError

from .forms import UploadForm

RUNS_PER_PAGE = 25
RECENT_DAYS = 30


def _require_sources(user):
    if not access.can_see_sources(user):
        raise Http404("No such page.")


def _require_admin(user):
    _require_sources(user)
    if not access.can_manage_configuration(user):
        raise Http404("No such page.")


def _unpriced_usage(since: dt.date) -> list[dict]:
    """Usage with no known price in the recent period, by account and model: what needs a price added."""
    tokens = Sum("input_tokens") + Sum("cached_input_tokens") + Sum("cache_write_tokens") + Sum("output_tokens")
    return list(
        DailySpend.objects.filter(day__gte=since, cost_basis=CostBasis.UNPRICED)
        .values("account__name", "provider__slug", "model")
        .annotate(tokens=tokens, lines=Sum("line_count"), last_day=Max("day"))
        .order_by("-tokens")
    )


def source_list(request):
    _require_sources(request.user)
    now = timezone.now()
    since_day = now.astimezone(dt.UTC).date() - dt.timedelta(days=RECENT_DAYS)  # one cut-off for every 30-day figure
    # From the rollup, which equals the lines (a month of raw lines is ~1M rows at the bench's size).
    recent = {
        r["account_id"]: r
        for r in DailySpend.objects.filter(day__gte=since_day)
        .values("account_id")
        .annotate(lines=Sum("line_count"), cost=Sum("reporting_cost"),
                  unpriced=Sum("line_count", filter=Q(cost_basis=CostBasis.UNPRICED)))
        .order_by()
    }
    accounts = []
    for account in Account.objects.select_related("provider"):
        next_sync = None
        if account.is_api and account.enabled:
            next_sync = (account.last_sync_at + dt.timedelta(minutes=account.sync_interval_minutes)) if account.last_sync_at else now
        stats = recent.get(account.id, {})
        accounts.append({"account": account, "next_sync": next_sync, **{k: stats.get(k) for k in ("lines", "cost", "unpriced")}})
    context = {
        "accounts": accounts,
        "unpriced": _unpriced_usage(since_day),
        "form": UploadForm() if access.can_manage_configuration(request.user) else None,
        "days": RECENT_DAYS,
    }
    return render(request, "finops/source_list.html", context)


def source_detail(request, pk):
    _require_sources(request.user)
    account = get_object_or_404(Account.objects.select_related("provider"), pk=pk)
    runs = Paginator(account.runs.all(), RUNS_PER_PAGE).get_page(request.GET.get("page"))
    return render(request, "finops/source_detail.html", {"account": account, "runs": runs, "can_manage": access.can_manage_configuration(request.user)})


@require_POST
def source_upload(request):
    """Keep the file and queue its import. Answers JSON to the page's script (progress + polling), else redirects."""
    _require_admin(request.user)
    form = UploadForm(request.POST, request.FILES)
    wants_json = request.headers.get("Accept", "").startswith("application/json")
    if not form.is_valid():
        errors = "; ".join(f"{'' if field == '__all__' else field + ': '}{' '.join(msgs)}" for field, msgs in form.errors.items())
        if wants_json:
            return JsonResponse({"error": errors}, status=400)
        messages.error(request, f"Upload refused: {errors}")
        return redirect("source-list")
    upload = form.cleaned_data["file"]
    with transaction.atomic():
        account = form.target_account()
        run = usage_upload_accept(account=account, upload=upload, file_name=upload.name)
    if wants_json:
        return JsonResponse(
            {"run": run.id, "status_url": reverse("api-run-detail", args=[run.id]), "account_url": reverse("source-detail", args=[account.id])},
            status=202,
        )
    messages.success(request, f"{upload.name} was received; its import into {account.name} runs in the background.")
    return redirect("source-detail", pk=account.id)


@require_POST
def source_sync(request, pk):
    _require_admin(request.user)
    account = get_object_or_404(Account, pk=pk)
    try:
        with transaction.atomic():
            runs = sync_request(account=account)
    except IngestError as exc:
        messages.error(request, str(exc))
    else:
        window = f"{runs[0].window_start:%Y-%m-%d} → {runs[-1].window_end:%Y-%m-%d}"
        messages.success(request, f"Sync of {account.name} queued ({window}, {len(runs)} run(s)).")
    return redirect("source-detail", pk=account.id)
