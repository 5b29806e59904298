"""Who receives the monthly TCO report by email (issue 14), and the unsubscribe link in that email.

- `/reports/subscriptions/`: admins list every subscription, add any address, change its day, deactivate,
  reactivate or remove it; a finance user sees and changes their own; anyone else gets 404 (as for reports).
  Every change goes through finops.reports.services.subscriptions; who may change what, finops.core.access.
- `/reports/unsubscribe/<token>/`: no sign-in (the signed token is the proof). GET shows a confirmation page (a
  mail scanner following links unsubscribes nobody); POST unsubscribes. Mail clients POST there directly with
  `List-Unsubscribe=One-Click` (RFC 8058), with no CSRF token: the view is exempt, the signature stands in for it.
  A tampered or unknown token answers 400 with a page saying so.
"""

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_not_required
from django.core import signing
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from finops.core import access
from finops.models import ReportSubscription
from finops.notify.report_deliveries import (
    delivery_preview,
    next_delivery,
    send_now,
    unsubscribe_matches,
    unsubscribe_read,
)
from finops.reports.models import DEFAULT_DELIVERY_DAY
from finops.reports.selectors.subscriptions import own_subscription, pending_defaults, subscription_rows
from finops.reports.services import subscriptions as service
from finops.web.methods import require_form_methods

DAY_HELP = (
    "The UTC day of each month the previous month's report is emailed (1–28; 28 is the last day every "
    "month has). Default: the 3rd, when providers' late usage has settled."
)


class SubscriptionForm(forms.Form):
    email = forms.CharField(
        max_length=254,
        label="Email address",
        help_text="Any address: a person or a list. It receives the report with the PDF attached, "
        "and can unsubscribe from the email itself.",
    )
    day_of_month = forms.IntegerField(label="Delivery day", initial=DEFAULT_DELIVERY_DAY, help_text=DAY_HELP)


def _require_visible(user) -> None:
    if not access.can_see_reports(user):
        raise Http404("No such page.")


def _changeable(user, pk) -> ReportSubscription:
    subscription = get_object_or_404(ReportSubscription.objects.select_related("user"), pk=pk)
    if not access.can_change_report_subscription(user, subscription):
        raise Http404("No such subscription.")
    return subscription


@require_form_methods
def subscription_list(request):
    _require_visible(request.user)
    admin = access.can_manage_report_subscriptions(request.user)
    form = SubscriptionForm()
    if request.method == "POST":
        response, form = _act(request, admin)
        if response is not None:
            return response
    if admin:
        rows, defaults = subscription_rows(ReportSubscription.objects.all()), pending_defaults()
    else:
        own = own_subscription(request.user)
        rows = subscription_rows(ReportSubscription.objects.filter(id=own.id)) if own else []
        defaults = pending_defaults([request.user]) if own is None else []
    return render(
        request,
        "finops/report_subscriptions.html",
        {
            "rows": rows,
            "defaults": defaults,
            "form": form if admin else None,
            "admin": admin,
            "day_help": DAY_HELP,
            "default_day": DEFAULT_DELIVERY_DAY,
            "days": range(service.DAY_MIN, service.DAY_MAX + 1),
        },
        status=400 if form.errors else 200,
    )


def _act(request, admin: bool):
    """One POSTed action: (a redirect, _) when done or refused with a message, (None, the add form with its
    errors) when the address or day was refused, to show the page again with them."""
    action, form = request.POST.get("action", ""), SubscriptionForm()
    try:
        if action == "add":
            if not admin:
                raise Http404("No such page.")
            form = SubscriptionForm(request.POST)
            if not form.is_valid():
                return None, form
            added = service.subscription_add(
                email=form.cleaned_data["email"], by=request.user, day_of_month=form.cleaned_data["day_of_month"]
            )
            messages.success(
                request, f"{added.email} will receive the report on day {added.day_of_month} of each month."
            )
        elif action == "mine":  # a finance user acting before their default subscription exists
            subscription = service.subscription_for_user(user=request.user)
            return _change(request, subscription, request.POST.get("change", "")), form
        elif action in ("day", "deactivate", "activate", "remove"):
            subscription = _changeable(request.user, request.POST.get("id", ""))
            return _change(request, subscription, action), form
        else:
            messages.error(request, "Unknown action.")
    except service.SubscriptionError as error:
        if action == "add":
            form.add_error(error.field if error.field in form.fields else None, str(error))
            return None, form
        messages.error(request, str(error))
    except ValueError:  # a non-numeric id
        raise Http404("No such subscription.") from None
    return redirect("report-subscriptions"), form


def _change(request, subscription: ReportSubscription, change: str):
    if change == "day":
        service.subscription_set_day(subscription=subscription, day_of_month=request.POST.get("day_of_month"))
        messages.success(request, f"{subscription.email} now receives the report on day {subscription.day_of_month}.")
    elif change == "deactivate":
        service.subscription_set_active(subscription=subscription, active=False)
        messages.success(request, f"{subscription.email} no longer receives the report.")
    elif change == "activate":
        service.subscription_set_active(subscription=subscription, active=True)
        messages.success(request, f"{subscription.email} receives the report again.")
    elif change == "remove" and access.can_manage_report_subscriptions(request.user):
        service.subscription_delete(subscription=subscription)
        messages.success(request, f"Removed {subscription.email}.")
    else:
        raise Http404("No such action.")
    return redirect("report-subscriptions")


@login_not_required
@csrf_exempt
@require_http_methods(["GET", "POST"])
def unsubscribe(request, token: str):
    try:
        subscription_id, tag, signed_at = unsubscribe_read(token)
    except signing.SignatureExpired:
        return render(
            request,
            "finops/report_unsubscribe.html",
            {"problem": "expired", "days": settings.FINOPS_UNSUBSCRIBE_LINK_DAYS},
            status=400,
        )
    except signing.BadSignature:
        return render(request, "finops/report_unsubscribe.html", {"problem": "tampered"}, status=400)
    subscription = ReportSubscription.objects.filter(id=subscription_id).first()
    if subscription is None or not unsubscribe_matches(subscription, tag, signed_at):
        return render(request, "finops/report_unsubscribe.html", {"problem": "unknown"}, status=400)
    if request.method == "POST":
        service.subscription_unsubscribe(subscription=subscription)
        return render(request, "finops/report_unsubscribe.html", {"done": True, "email": subscription.email})
    return render(request, "finops/report_unsubscribe.html", {"email": subscription.email})


# --- preview the email a subscriber would get, and send it now (admins) ---


def _managed(request, pk) -> ReportSubscription:
    if not access.can_manage_report_subscriptions(request.user):
        raise Http404("No such page.")
    return get_object_or_404(ReportSubscription.objects.select_related("user"), pk=pk)


def _preview(subscription):
    """(what it is, the delivery, the message as it would be sent) — finops.notify.report_deliveries renders it with the
    function that sends it."""
    delivery, what = next_delivery(subscription, timezone.now())
    return what, delivery, (delivery_preview(delivery) if delivery is not None else None)


@require_http_methods(["GET", "HEAD", "POST"])
def subscription_email(request, pk: int):
    """The email `pk` would get now (subject, headers, text, the HTML in a sandboxed frame, the attachment), and a
    button that sends it now through the schedule's own rows and attempts (never twice)."""
    subscription = _managed(request, pk)
    if request.method == "POST":
        sent = send_now(subscription)
        if sent:
            messages.success(request, f"Sent to {subscription.email}.")
        else:
            messages.error(
                request,
                f"Nothing was sent to {subscription.email}: nothing is due, or the attempt failed "
                "(its error is under Latest delivery).",
            )
        return redirect("report-subscriptions")
    what, delivery, message = _preview(subscription)
    parts = None
    if message is not None:
        email = message.message()
        parts = {
            "subject": email["Subject"],
            "headers": [(k, email[k]) for k in ("From", "To", "X-FinOps-Report", "List-Unsubscribe")],
            "text": message.body,
            "attachments": [name for name, _, _ in message.attachments],
        }
    return render(
        request, "finops/report_email_preview.html", {"subscription": subscription, "what": what, "parts": parts}
    )


@require_http_methods(["GET", "HEAD"])
def subscription_email_html(request, pk: int):
    """The HTML part, alone, under a CSP of its own: an email's inline styles, nothing that runs, framed only here."""
    _, _, message = _preview(_managed(request, pk))
    if message is None:  # the preview page says so beside this frame; the frame stays a page, not an error
        html = '<p style="font-family: sans-serif">Nothing is due for this address.</p>'
    else:
        html = next(content for content, mimetype in message.alternatives if mimetype == "text/html")
    response = HttpResponse(html, content_type="text/html; charset=utf-8")
    response["Content-Security-Policy"] = (
        "default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'self'; sandbox"
    )
    response["X-Frame-Options"] = "SAMEORIGIN"
    return response
