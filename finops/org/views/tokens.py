"""The API tokens page: everyone lists, creates and revokes their own tokens; admins see and revoke anyone's.

A new token's secret is shown once, in the answer to the POST that created it (never stored, never put in the
session, the answer not cached): reloading or coming back shows the prefix only."""

from django import forms
from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from finops.core import access
from finops.models import ApiToken
from finops.org.services.api_tokens import (
    DEFAULT_DAYS,
    MAX_DAYS,
    MIN_DAYS,
    ApiTokenInvalid,
    api_token_create,
    api_token_revoke,
)
from finops.web.methods import require_form_methods


class TokenForm(forms.Form):
    name = forms.CharField(max_length=100, help_text="Where it is used, e.g. “nightly billing export”.")
    description = forms.CharField(max_length=255, required=False)
    scope = forms.ChoiceField(
        choices=ApiToken.Scope.choices,
        initial=ApiToken.Scope.READ,
        help_text="Read-only tokens may only read. Read-write tokens may change what your role "
        "lets you change, nothing more.",
    )
    days = forms.IntegerField(label="Expires in (days)", min_value=MIN_DAYS, max_value=MAX_DAYS, initial=DEFAULT_DAYS)


def _status(token: ApiToken, now) -> str:
    if token.revoked_at:
        return "revoked"
    return "expired" if token.expires_at <= now else "active"


def _list_context(request, form) -> dict:
    user = request.user
    tokens = list(access.visible_api_tokens(user).order_by("revoked_at", "-created_at"))
    now = timezone.now()
    for token in tokens:
        token.status = _status(token, now)
    return {"form": form, "tokens": tokens, "sees_all": access.is_admin(user)}


@never_cache
@require_form_methods
def token_list(request):
    form = TokenForm(request.POST or None)
    if request.method == "POST":
        if form.is_valid():
            data = form.cleaned_data
            try:
                token, secret = api_token_create(
                    user=request.user,
                    by=request.user,
                    name=data["name"],
                    description=data["description"],
                    scope=data["scope"],
                    days=data["days"],
                )
            except ApiTokenInvalid as exc:
                for name, message in exc.errors.items():
                    form.add_error(name if name in form.fields else None, message)
            else:
                # The only time the secret leaves the server. A reload re-posts the form (a new token), never this one.
                return render(request, "finops/token_created.html", {"token": token, "secret": secret})
        return render(request, "finops/token_list.html", _list_context(request, form), status=400)
    return render(request, "finops/token_list.html", _list_context(request, TokenForm()))


@require_POST
def token_revoke(request, pk):
    token = get_object_or_404(access.visible_api_tokens(request.user), pk=pk)  # another person's token: 404
    api_token_revoke(token=token, by=request.user)
    messages.success(request, f"Token {token.name} ({token.prefix}…) is revoked: it no longer works.")
    return redirect("token-list")
