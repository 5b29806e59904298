"""Spend caps pages: the list (a progress bar per cap), a cap (burn-up chart, forecast in words, drivers, alert
history), the form and the delete confirmation. Reads through finops.alerts.selectors.caps; every write through
finops.alerts.services.caps; who sees and changes what through finops.core.access (another team's cap answers 404)."""

import datetime as dt

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_safe

from finops.alerts import tables as cap_tables
from finops.alerts.cards import bar, cap_cards
from finops.alerts.forms.caps import CapForm
from finops.alerts.selectors.caps import CapStatus, cap_daily, cap_drivers, cap_status
from finops.alerts.services import caps as cap_service
from finops.core import access, display
from finops.forecast.projection import HISTORY_DAYS, MIN_HISTORY_DAYS
from finops.models import AlertEvent, Workload
from finops.reports import charts
from finops.web.methods import require_form_methods
from finops.web.page_cache import cached_page
from finops.web.period import today_utc


def forecast_words(status: CapStatus) -> str:
    """The forecast and how it was made, for a person: "$412.50/day on average for the 7 days left (by day of week
    with trend, from the last 56 days)"."""
    if status.forecast is None:
        return (
            f"Not enough history to forecast: fewer than {MIN_HISTORY_DAYS} of the last {HISTORY_DAYS} days had spend."
        )
    days = f"{status.days_left} day{'s' if status.days_left != 1 else ''} left"
    return f"{display.money_exact(status.daily_rate)}/day on average for the {days} ({status.forecast_method})"


@require_safe
@cached_page
def cap_list(request):
    cards = cap_cards(access.visible_caps(request.user))
    return render(request, "finops/cap_list.html", {"cards": cards, "can_create": access.can_create_caps(request.user)})


def _visible_cap(user, pk):
    return get_object_or_404(access.visible_caps(user), pk=pk)


@require_safe
def cap_detail(request, pk):
    cap = _visible_cap(request.user, pk)
    today = today_utc()
    status = cap_status(cap, today=today)
    currency = settings.FINOPS_REPORTING_CURRENCY
    points = cap_daily(cap, start=status.period_start, end=min(status.period_end, today + dt.timedelta(days=1)))
    last_complete = max(status.period_start, today) - dt.timedelta(days=1)
    chart = charts.burn_up(
        points,
        amount=cap.amount,
        forecast=status.forecast,
        forecast_from=(last_complete, status.complete_days_spent),
        period_start=status.period_start,
        period_end=status.period_end,
        currency=currency,
        through=today,
    )
    drivers = cap_drivers(cap, start=status.period_start, end=status.period_end)
    can_write = access.can_write_cap(request.user, cap)
    workloads = Workload.objects.select_related("team").in_bulk(
        [r["workload_id"] for r in drivers["workloads"] if r["workload_id"]]
    )
    workload_rows = []
    for row in drivers["workloads"]:
        workload = workloads.get(row["workload_id"])
        workload_rows.append(
            {
                "label": workload.name if workload else display.UNATTRIBUTED,
                "team": workload.team.name if workload else "—",
                "cost": row["cost"],
                "unpriced_tokens": row["unpriced_tokens"],
                "muted": workload is None,
            }
        )
    model_rows = [
        {
            "label": display.model_name(r["model"]),
            "model": r["model"],
            "cost": r["cost"],
            "unpriced_tokens": r["unpriced_tokens"],
        }
        for r in drivers["models"]
    ]
    alerts = [
        {
            "raised": timezone.localtime(e.created_at).strftime("%Y-%m-%d %H:%M"),
            "title": e.title,
            "threshold": f"{e.threshold} %" if e.threshold else "forecast",
            "state": e.get_state_display(),
            "sent": timezone.localtime(e.sent_at).strftime("%Y-%m-%d %H:%M") if e.sent_at else "—",
        }
        for e in AlertEvent.objects.filter(cap=cap).order_by("-created_at")[:100]
    ]
    context = {
        "cap": cap,
        "status": status,
        "bar": bar(status),
        "chart": chart,
        "forecast_words": forecast_words(status),
        "overshoot": status.forecast - cap.amount if status.forecast_breach else None,
        "history_days": HISTORY_DAYS,
        "min_days": MIN_HISTORY_DAYS,
        "specs": cap_tables,
        "workload_rows": workload_rows,
        "model_rows": model_rows,
        "alerts": alerts,
        "can_write": can_write,
        # Only those who may edit the cap see its webhook at all, and then only its scheme and host.
        "webhook": cap_service.webhook_shown(cap) if can_write else None,
    }
    return render(request, "finops/cap_detail.html", context)


@require_form_methods
def cap_create(request):
    if not access.can_create_caps(request.user):  # everyone sees caps: refused, not hidden (docs/access.md)
        raise PermissionDenied("Only admins and team leads create caps.")
    return _form(request, None)


@require_form_methods
def cap_edit(request, pk):
    cap = _visible_cap(request.user, pk)
    if not access.can_write_cap(request.user, cap):
        raise PermissionDenied("Only admins and the cap's team lead change it.")
    return _form(request, cap)


def _form(request, cap):
    if request.method == "POST":
        form = CapForm(request.POST, user=request.user, cap=cap)
        if form.is_valid():
            try:
                if cap is None:
                    cap = cap_service.cap_create(by=request.user, **form.cap_fields())
                    messages.success(request, f"Cap “{cap.name}” created.")
                else:
                    cap = cap_service.cap_update(cap=cap, by=request.user, **form.cap_fields())
                    messages.success(request, f"Cap “{cap.name}” saved.")
                return redirect("cap-detail", pk=cap.pk)
            except cap_service.CapInvalid as exc:
                form.add_service_errors(exc)
    else:
        form = CapForm(user=request.user, cap=cap)
    return render(request, "finops/cap_form.html", {"form": form, "cap": cap})


@require_form_methods
def cap_delete(request, pk):
    """GET asks for confirmation; POST deletes."""
    cap = _visible_cap(request.user, pk)
    if not access.can_write_cap(request.user, cap):
        raise PermissionDenied("Only admins and the cap's team lead delete it.")
    if request.method == "POST":
        name = cap.name
        cap_service.cap_delete(cap=cap, by=request.user)
        messages.success(request, f"Cap “{name}” deleted.")
        return redirect("cap-list")
    return render(request, "finops/cap_delete.html", {"cap": cap, "alerts": AlertEvent.objects.filter(cap=cap).count()})
