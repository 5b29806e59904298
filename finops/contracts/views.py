"""Contract pages (issue 11): the list (auto-renewals coming up first, a timeline, every contract with its status,
CSV), a contract (burn-down, its figures in words, periods, past terms) and the form. Admins and finance see them;
a member gets 404 on every one (finops.core.access.can_see_contracts); only admins change them.

Reads through finops.contracts.selectors. The one write is `_save`: a ModelForm save for now, to be switched to
the contract service (finops.contracts.services) once it lands."""

import datetime as dt

from django.conf import settings
from django.contrib import messages
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_safe

from finops.contracts import services as contract_service
from finops.contracts import tables as contract_tables
from finops.contracts.forms import ContractForm
from finops.contracts.selectors import (
    BASELINE_MONTHS,
    SHORTFALL_SHARE,
    ContractStatus,
    advice_words,
    contract_daily,
    contract_status,
    contract_statuses,
    renewals_ahead,
)
from finops.core import access
from finops.models import CommitmentBasis, Contract
from finops.reports import contract_charts
from finops.web.methods import require_form_methods
from finops.web.period import today_utc
from finops.web.tables import csv_requested

DAY = dt.timedelta(days=1)
RENEWALS_WITHIN_DAYS = 183  # "the next six months"


def _contracts():
    return Contract.objects.select_related("provider").prefetch_related("accounts")


def _require_visible(user) -> None:
    if not access.can_see_contracts(user):
        raise Http404("No such page.")


def _row(status: ContractStatus) -> dict:
    contract = status.contract
    return {
        "name": contract.name,
        "url": reverse("contract-detail", args=[contract.pk]),
        "provider": contract.provider.name,
        "status": status.status,
        "status_label": status.status_label,
        "start": contract.start,
        "last_day": contract.end - DAY,
        "committed": status.committed,
        "consumed": status.consumed,
        "expected": status.expected_to_date,
        "projected": status.projected,
        "shortfall": status.shortfall,
        "overage": status.overage,
        "currency": contract.currency,
    }


def _renewal_row(status: ContractStatus) -> dict:
    advice = status.renewal_advice
    return {
        "name": status.contract.name,
        "url": reverse("contract-detail", args=[status.contract.pk]),
        "notice_deadline": status.notice_deadline,
        "days_left": status.days_to_notice_deadline,
        "committed": status.committed,
        "projected": status.projected,
        "advice": advice_words(status) if advice is not None else "Renewing at today's commitment is within recent use",
        "status": status,
        "currency": status.contract.currency,
    }


@require_safe
def contract_list(request):
    _require_visible(request.user)
    today = today_utc()
    statuses = contract_statuses(list(_contracts().order_by("end", "name")), today=today)
    rows = [_row(s) for s in statuses]
    renewals = [_renewal_row(s) for s in renewals_ahead(today=today, within_days=RENEWALS_WITHIN_DAYS)]
    csv = csv_requested(request, "contracts", {"contracts": (contract_tables.CONTRACTS, rows)}, stem=today.isoformat())
    if csv is not None:
        return csv
    timeline = (
        contract_charts.contracts_timeline(
            [
                {
                    "name": s.contract.name,
                    "start": s.contract.start,
                    "end": s.contract.end,
                    "notice_deadline": s.notice_deadline,
                    "status_label": s.status_label,
                }
                for s in statuses
            ],
            today=today,
        )
        if statuses
        else None
    )
    return render(
        request,
        "finops/contract_list.html",
        {
            "rows": rows,
            "renewals": renewals,
            "timeline": timeline,
            "specs": contract_tables,
            "can_write": access.is_admin(request.user),
            "today": today,
        },
    )


@require_safe
def contract_detail(request, pk):
    _require_visible(request.user)
    contract = get_object_or_404(_contracts(), pk=pk)
    today = today_utc()
    status = contract_status(contract, today=today)
    daily = contract_daily(contract, contract.start, min(contract.end, today + DAY)) if today >= contract.start else {}
    periodic = contract.commitment_basis != CommitmentBasis.TERM
    chart = contract_charts.contract_burn_down(
        daily,
        start=contract.start,
        end=contract.end,
        committed=status.committed,
        projected=status.projected,
        today=today,
        currency=contract.currency,
        periods=[(p.start, p.committed, p.consumed, p.projected) for p in status.periods] if periodic else None,
    )
    period_rows = [
        {
            "start": p.start,
            "last_day": p.end - DAY,
            "committed": p.committed,
            "consumed": p.consumed,
            "expected": p.expected,
            "projected": p.projected,
            "shortfall": p.shortfall,
            "overage": p.overage,
            "currency": contract.currency,
        }
        for p in status.periods
    ]
    past_rows = []
    for term in contract.past_terms.all():
        consumed = sum(contract_daily(contract, term.start, term.end).values(), start=type(term.commitment)(0))
        past_rows.append(
            {
                "start": term.start,
                "last_day": term.end - DAY,
                "basis": term.get_commitment_basis_display(),
                "committed": term.commitment,
                "consumed": consumed,
                "used": consumed / term.commitment if term.commitment else None,
                "currency": contract.currency,
            }
        )
    csv = csv_requested(
        request,
        f"contract-{contract.pk}",
        {
            "contract_periods": (contract_tables.CONTRACT_PERIODS, period_rows),
            "contract_past_terms": (contract_tables.CONTRACT_PAST_TERMS, past_rows),
        },
        stem=today.isoformat(),
    )
    if csv is not None:
        return csv
    return render(
        request,
        "finops/contract_detail.html",
        {
            "contract": contract,
            "status": status,
            "chart": chart,
            "periodic": periodic,
            "period_rows": period_rows,
            "past_rows": past_rows,
            "specs": contract_tables,
            "advice": advice_words(status),
            "baseline_months": BASELINE_MONTHS,
            "shortfall_share": int(SHORTFALL_SHARE * 100),
            "can_write": access.is_admin(request.user),
            "accounts": list(contract.accounts.all()),
            "last_day": contract.end - DAY,
            "reporting_currency": settings.FINOPS_REPORTING_CURRENCY,
        },
    )


def _require_admin(user) -> None:
    """Creating and editing: admins; finance sees contracts, so it is refused (403); members do not (404)."""
    access.require_change(user, sees=access.can_see_contracts, changes=access.can_manage_contracts)


@require_form_methods
def contract_create(request):
    _require_admin(request.user)
    return _form(request, None)


@require_form_methods
def contract_edit(request, pk):
    _require_admin(request.user)
    return _form(request, get_object_or_404(Contract, pk=pk))


def _save(form: ContractForm, by, contract: Contract | None) -> Contract | None:
    """The one write path (finops.contracts.services, as the API and apply_config): the service's errors go back
    on the form's fields, and None says the form now has errors to show."""
    fields = {name: form.cleaned_data[name] for name in ContractForm.Meta.fields}
    fields["accounts"] = list(fields["accounts"])
    fields["channels"] = list(form.cleaned_data["channels"])
    try:
        if contract is None:
            return contract_service.contract_create(by=by, **fields)
        # The ModelForm's validation already copied the new values onto `contract`: the service compares against
        # the stored row, or it would see no change and save nothing.
        contract.refresh_from_db()
        return contract_service.contract_update(contract=contract, by=by, **fields)
    except contract_service.ContractInvalid as invalid:
        for field, message in invalid.errors.items():
            form.add_error(field if field in form.fields else None, message)
        return None


def _form(request, contract):
    if request.method == "POST":
        form = ContractForm(request.POST, instance=contract)
        if form.is_valid():
            created = contract is None
            saved = _save(form, request.user, contract)
            if saved is not None:
                messages.success(request, f"Contract “{saved.name}” {'created' if created else 'saved'}.")
                return redirect("contract-detail", pk=saved.pk)
    else:
        form = ContractForm(instance=contract)
    return render(request, "finops/contract_form.html", {"form": form, "contract": contract})
