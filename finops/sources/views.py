"""Sources: provider accounts, their status and runs, uploads, "Sync now", connecting an API account and
testing its key (finance reads; admins act; members 404)."""

import datetime as dt

from django.contrib import messages
from django.core.paginator import Paginator
from django.db import transaction
from django.db.models import Max, Q, Sum
from django.http import Http404, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST, require_safe

from finops.core import access
from finops.models import Account, CostBasis, DailySpend, IngestRun
from finops.sources.models import ConnectorKind
from finops.sources.selectors.account_status import account_status, account_statuses
from finops.sources.services.accounts import AccountInvalid, account_create, account_focus_services_set, account_update
from finops.spend.selectors.cache_hits import cache_savings
from finops.web.methods import require_form_methods
from ingest.connection_check import ConnectionReport, account_connection_check, connection_check
from ingest.lines import IngestError
from ingest.services import sync_now, usage_upload_accept

from .forms import DEFAULT_BASE_URLS, AccountSettingsForm, ApiAccountForm, FocusServicesForm, UploadForm

RUNS_PER_PAGE = 25
RECENT_DAYS = 30


def _require_sources(user):
    if not access.can_see_sources(user):
        raise Http404("No such page.")


def _require_admin(user):
    """Connecting, editing, testing, syncing and uploading: admins; finance sees sources, so it is refused (403)."""
    access.require_change(user, sees=access.can_see_sources, changes=access.can_manage_configuration)


def _today() -> dt.date:
    return timezone.now().astimezone(dt.UTC).date()


def _unpriced_usage(since: dt.date) -> list[dict]:
    """Usage with no known price in the recent period, by account and model: what needs a price added."""
    tokens = Sum("input_tokens") + Sum("cached_input_tokens") + Sum("cache_write_tokens") + Sum("output_tokens")
    return list(
        DailySpend.objects.filter(day__gte=since, cost_basis=CostBasis.UNPRICED)
        .values("account__name", "provider__name", "model")
        .annotate(tokens=tokens, lines=Sum("line_count"), last_day=Max("day"))
        .order_by("-tokens")
    )


@require_safe
def source_list(request):
    _require_sources(request.user)
    now = timezone.now()
    today = now.astimezone(dt.UTC).date()
    since_day = today - dt.timedelta(days=RECENT_DAYS)  # one cut-off for every 30-day figure
    # From the rollup, which equals the lines (a month of raw lines is ~1M rows at the bench's size).
    recent = {
        r["account_id"]: r
        for r in DailySpend.objects.filter(day__gte=since_day)
        .values("account_id")
        .annotate(
            lines=Sum("line_count"),
            cost=Sum("reporting_cost"),
            unpriced=Sum("line_count", filter=Q(cost_basis=CostBasis.UNPRICED)),
        )
        .order_by()
    }
    accounts = []
    for status in account_statuses(today):
        account = status.account
        next_sync = None
        if account.is_api and account.enabled:
            next_sync = (
                (account.last_sync_at + dt.timedelta(minutes=account.sync_interval_minutes))
                if account.last_sync_at
                else now
            )
        stats = recent.get(account.id, {})
        accounts.append(
            {
                "account": account,
                "status": status,
                "next_sync": next_sync,
                **{k: stats.get(k) for k in ("lines", "cost", "unpriced")},
            }
        )
    can_manage = access.can_manage_configuration(request.user)
    context = {
        "accounts": accounts,
        "unpriced": _unpriced_usage(since_day),
        "form": UploadForm() if can_manage else None,
        "can_manage": can_manage,
        "days": RECENT_DAYS,
    }
    return render(request, "finops/source_list.html", context)


@require_safe
def source_detail(request, pk):
    _require_sources(request.user)
    account = get_object_or_404(Account.objects.select_related("provider"), pk=pk)
    runs = Paginator(account.runs.all(), RUNS_PER_PAGE).get_page(request.GET.get("page"))
    context = {
        "account": account,
        "status": account_status(account, _today()),
        "runs": runs,
        "pending": account.runs.filter(status__in=[IngestRun.Status.QUEUED, IngestRun.Status.RUNNING]).exists(),
        "can_manage": access.can_manage_configuration(request.user),
        "default_base_url": DEFAULT_BASE_URLS.get(account.connector, ""),
        # What the gateway's own cache served (LiteLLM sources), over the same 30 days as the sources list.
        "cache_savings": cache_savings(start=_today() - dt.timedelta(days=RECENT_DAYS), end=_today(), account=account),
        "cache_period": f"last {RECENT_DAYS} days",
    }
    return render(request, "finops/source_detail.html", context)


@require_POST
def source_upload(request):
    """Keep the file and queue its import. Answers JSON to the page's script (progress + polling), else redirects."""
    _require_admin(request.user)
    form = UploadForm(request.POST, request.FILES)
    wants_json = request.headers.get("Accept", "").startswith("application/json")
    if not form.is_valid():
        errors = "; ".join(
            f"{'' if field == '__all__' else field + ': '}{' '.join(msgs)}" for field, msgs in form.errors.items()
        )
        if wants_json:
            return JsonResponse({"error": errors}, status=400)
        messages.error(request, f"Upload refused: {errors}")
        return redirect("source-list")
    upload = form.cleaned_data["file"]
    with transaction.atomic():
        account = form.target_account(by=request.user)
        run = usage_upload_accept(account=account, upload=upload, file_name=upload.name)
    if wants_json:
        return JsonResponse(
            {
                "run": run.id,
                "status_url": reverse("api-run-detail", args=[run.id]),
                "account_url": reverse("source-detail", args=[account.id]),
            },
            status=202,
        )
    messages.success(request, f"{upload.name} was received; its import into {account.name} runs in the background.")
    return redirect("source-detail", pk=account.id)


@require_POST
def source_sync(request, pk):
    """Queue the account's scheduled window; with tasks inline (the demo) it has run by the time this answers."""
    _require_admin(request.user)
    account = get_object_or_404(Account, pk=pk)
    try:
        runs = sync_now(account=account)
    except IngestError as exc:
        messages.error(request, f"Not synced: {exc}.")
    else:
        level, text = _sync_outcome(account, runs)
        messages.add_message(request, level, text)
    return redirect("source-detail", pk=account.id)


def _sync_outcome(account: Account, runs: list[IngestRun]) -> tuple[int, str]:
    window = f"{runs[0].window_start:%Y-%m-%d} → {runs[-1].window_end:%Y-%m-%d} UTC"
    failed = [run for run in runs if run.status == IngestRun.Status.FAILED]
    if failed:
        share = f" ({len(failed)} of {len(runs)} runs)" if len(runs) > 1 else ""
        return messages.ERROR, f"Sync of {account.name} ({window}) failed{share}: {failed[0].error}"
    if all(run.status == IngestRun.Status.SUCCEEDED for run in runs):
        written = sum(run.lines_written for run in runs)
        return messages.SUCCESS, f"Synced {account.name} ({window}): {written} line(s) written."
    return (
        messages.INFO,
        f"Sync of {account.name} queued ({window}, {len(runs)} run(s)); the runs below show how it goes.",
    )


# --- connecting an API account ---


def _wants_json(request) -> bool:
    return request.headers.get("Accept", "").startswith("application/json")


def _check_answer(request, report: ConnectionReport, template: str, context: dict):
    """The test's result: JSON for the page's script (the typed key stays in its field), else the form again."""
    if _wants_json(request):
        return JsonResponse({"ok": report.ok, "message": report.message})
    return render(request, template, {**context, "check": report})


@require_form_methods
def source_create(request):
    """Connect an API account: the form, "Test connection" (saves nothing) and "Connect" (saves, key encrypted)."""
    _require_admin(request.user)
    form = ApiAccountForm(request.POST or None)
    context = {"form": form, "account": None}
    if request.method != "POST":
        return render(request, "finops/source_form.html", context)
    valid = form.is_valid()
    if request.POST.get("action") == "test":
        values = form.connection()
        if values is None:
            report = ConnectionReport(
                False,
                "Fix the connector, base URL and key first: " + _errors(form, ("connector", "base_url", "secret")),
            )
        else:
            report = connection_check(**values)
        return _check_answer(request, report, "finops/source_form.html", context)
    if not valid:
        return render(request, "finops/source_form.html", context, status=400)
    data = form.cleaned_data
    try:
        account = account_create(
            name=data["name"],
            connector=data["connector"],
            provider=data["provider"],
            base_url=data["base_url"],
            secret=data["secret"],
            sync_interval_minutes=data["sync_interval_minutes"],
            by=request.user,
        )
    except AccountInvalid as exc:
        form.add_error(None, str(exc))
        return render(request, "finops/source_form.html", context, status=400)
    messages.success(
        request,
        f"{account.name} is connected (key {account.credentials_display}). It is pulled every "
        f"{account.sync_interval_minutes} min, the first pull reading the last 90 days; press Sync now to pull at "
        f"once.",
    )
    return redirect("source-detail", pk=account.id)


@require_form_methods
def source_edit(request, pk):
    """An API account's connection settings: a new key, base URL, interval, enabled; "Test connection" first."""
    _require_admin(request.user)
    account = get_object_or_404(Account.objects.select_related("provider"), pk=pk)
    if not account.is_api:
        raise Http404("File accounts have no connection settings.")
    form = AccountSettingsForm(request.POST or None, account=account)
    context = {"form": form, "account": account}
    if request.method != "POST":
        return render(request, "finops/source_form.html", context)
    valid = form.is_valid()
    if request.POST.get("action") == "test":
        values = form.connection()
        if values is None:
            report = ConnectionReport(False, "Fix the base URL and key first: " + _errors(form, ("base_url", "secret")))
        else:
            report = account_connection_check(account=account, **values)
        return _check_answer(request, report, "finops/source_form.html", context)
    if not valid:
        return render(request, "finops/source_form.html", context, status=400)
    data = form.cleaned_data
    account_update(
        account=account,
        base_url=data["base_url"],
        secret=data["secret"],
        sync_interval_minutes=data["sync_interval_minutes"],
        enabled=data["enabled"],
        by=request.user,
    )
    changed = "key replaced, " if data["secret"] else ""
    messages.success(request, f"{account.name} saved ({changed}{'enabled' if data['enabled'] else 'disabled'}).")
    return redirect("source-detail", pk=account.id)


@require_form_methods
def source_focus_services(request, pk):
    """A FOCUS file account's services to import besides, or never, its provider's LLM inference."""
    _require_admin(request.user)
    account = get_object_or_404(Account.objects.select_related("provider"), pk=pk)
    if account.connector != ConnectorKind.FOCUS_FILE:
        raise Http404("Only FOCUS file accounts choose services.")
    form = FocusServicesForm(request.POST or None, account=account)
    context = {"form": form, "account": account}
    if request.method != "POST" or not form.is_valid():
        return render(
            request, "finops/source_focus_services.html", context, status=400 if request.method == "POST" else 200
        )
    try:
        account_focus_services_set(
            account=account, include=form.names("include"), exclude=form.names("exclude"), by=request.user
        )
    except AccountInvalid as invalid:
        form.add_error(None, str(invalid))
        return render(request, "finops/source_focus_services.html", context, status=400)
    messages.success(
        request, f"{account.name} saved: its next import keeps these services. Re-import a file to apply it to it."
    )
    return redirect("source-detail", pk=account.id)


@require_POST
def source_test(request, pk):
    """ "Test connection" on the account page, with the stored key and base URL; the answer comes back as a message."""
    _require_admin(request.user)
    account = get_object_or_404(Account, pk=pk)
    if not account.is_api:
        raise Http404("File accounts have no connection to test.")
    report = account_connection_check(account=account)
    if _wants_json(request):
        return JsonResponse({"ok": report.ok, "message": report.message})
    messages.add_message(request, messages.SUCCESS if report.ok else messages.ERROR, report.message)
    return redirect("source-detail", pk=account.id)


def _errors(form, names) -> str:
    return "; ".join(f"{form[name].label}: {' '.join(form.errors[name])}" for name in names if name in form.errors)
