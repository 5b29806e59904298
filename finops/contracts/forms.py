"""The contract form (admins only). Its checks are the basic ones a person can fix on the page (the term ends
after it starts, the notice fits in the term, nothing negative, the accounts belong to the provider); the
contract service (finops.contracts.services, issue 11) takes over validation when it lands."""

from django import forms

from finops.alerts.services.channels import channels_chosen
from finops.models import Account, Channel, Contract

NOTICE_ALERT_HELP = (
    "Alert finance and the owner when the notice deadline is this many days away, comma-separated, "
    "e.g. “180, 90, 30, 7”. Empty: no notice alerts."
)


class AccountChoices(forms.ModelMultipleChoiceField):
    def label_from_instance(self, account):
        return f"{account.provider.name} — {account.name}"


class ContractForm(forms.ModelForm):
    accounts = AccountChoices(
        queryset=Account.objects.select_related("provider").order_by("provider__name", "name"),
        required=False,
        widget=forms.SelectMultiple(attrs={"size": 6}),
        help_text="The provider's accounts it covers (Ctrl/⌘-click for several). None selected: every account of the "
        "provider, including accounts added later.",
    )
    notice_alert_days = forms.CharField(required=False, help_text=NOTICE_ALERT_HELP)
    channels = forms.ModelMultipleChoiceField(
        queryset=Channel.objects.filter(for_cap=None).order_by("name", "id"),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="Where its alerts go (/alerts/channels/). None chosen: the organisation's default channels "
        "(the owner and finance, unless an admin changed them).",
    )
    document_url = forms.URLField(
        required=False,
        assume_scheme="https",
        label="Document link",
        help_text="A link to the signed contract (your document store); shown on the contract page.",
    )

    class Meta:
        model = Contract
        fields = [
            "name",
            "provider",
            "accounts",
            "currency",
            "start",
            "end",
            "commitment",
            "commitment_basis",
            "prepaid",
            "discount_pct",
            "auto_renew",
            "renewal_term_months",
            "notice_days",
            "notice_alert_days",
            "owner",
            "notes",
            "document_url",
        ]
        widgets = {
            "start": forms.DateInput(attrs={"type": "date"}),
            "end": forms.DateInput(attrs={"type": "date"}),
            "notes": forms.Textarea(attrs={"rows": 3}),
        }
        labels = {
            "discount_pct": "Discount (%)",
            "document_url": "Document link",
            "auto_renew": "Renews automatically",
            "renewal_term_months": "Renewal term (months)",
            "notice_days": "Notice period (days)",
            "prepaid": "Prepaid credit",
        }
        help_texts = {
            "name": "How pages, emails and the API call it, e.g. “Anthropic enterprise 2026”. Unique.",
            "provider": "Whose spend it commits: the contract covers that provider's accounts below.",
            "currency": "ISO code of the currency it was signed in (e.g. USD). Consumption counts the covered spend in "
            "this currency: the reporting currency, or the provider's own amounts billed in it.",
            "start": "First UTC day of the current term.",
            "end": "The day after the term's last day: a term of calendar 2026 is 2026-01-01 to 2027-01-01.",
            "commitment": "The committed amount on the basis below, in the contract's currency (0 or more).",
            "commitment_basis": "Total over the term; per calendar month (a month's unused part is lost); or per year "
            "from the start date.",
            "prepaid": "Credit paid up front, if any (part of the commitment, not on top of it).",
            "discount_pct": "Negotiated discount off list price, in %: used to estimate covered usage that has no "
            "billed cost, never applied to billed costs.",
            "auto_renew": "Renews for the renewal term unless notice is given by the notice deadline.",
            "renewal_term_months": "How long a renewed term runs; the renewal advice is for a term this long.",
            "notice_days": "Days before the end by which notice must be given (the notice deadline = end − these "
            "days).",
            "owner": "Who answers for the contract (an email); alerted with finance.",
            "notes": "Anything worth knowing at renewal: contacts, negotiated terms, history.",
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            self.initial["notice_alert_days"] = ", ".join(str(d) for d in self.instance.notice_alert_days)
            self.initial["channels"] = [c.pk for c in channels_chosen(self.instance)]
        elif "notice_alert_days" not in self.initial:
            self.initial["notice_alert_days"] = ", ".join(
                str(d) for d in Contract._meta.get_field("notice_alert_days").get_default()
            )

    def clean_currency(self):
        currency = self.cleaned_data["currency"].strip().upper()
        if len(currency) != 3 or not currency.isalpha():
            raise forms.ValidationError("Three letters, an ISO 4217 code such as USD or EUR.")
        return currency

    def clean_notice_alert_days(self):
        text = self.cleaned_data["notice_alert_days"]
        try:
            days = sorted({int(part) for part in text.replace(";", ",").split(",") if part.strip()}, reverse=True)
        except ValueError:
            raise forms.ValidationError("Whole numbers of days, comma-separated, e.g. “180, 90, 30, 7”.") from None
        if any(day <= 0 for day in days):
            raise forms.ValidationError("Each number of days must be above 0.")
        return days

    def clean(self):
        data = super().clean()
        start, end = data.get("start"), data.get("end")
        if start and end and end <= start:
            self.add_error("end", "The end must be after the start.")
        elif start and end and data.get("notice_days") is not None and data["notice_days"] > (end - start).days:
            self.add_error(
                "notice_days", f"The notice period cannot be longer than the term ({(end - start).days} days)."
            )
        for name in ("commitment", "prepaid"):
            if data.get(name) is not None and data[name] < 0:
                self.add_error(name, "Cannot be negative.")
        if data.get("commitment") is not None and data.get("prepaid") and data["prepaid"] > data["commitment"]:
            self.add_error("prepaid", "The prepaid credit is part of the commitment: it cannot be above it.")
        discount = data.get("discount_pct")
        if discount is not None and not 0 <= discount < 100:
            self.add_error("discount_pct", "A percentage from 0 up to (not including) 100.")
        provider, accounts = data.get("provider"), data.get("accounts")
        if provider and accounts:
            foreign = [a.name for a in accounts if a.provider_id != provider.id]
            if foreign:
                self.add_error("accounts", f"Not accounts of {provider.name}: {', '.join(foreign)}.")
        return data
