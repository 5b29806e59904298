"""The cap form: parses what people type (thresholds "50, 80, 100", recipients comma-separated) and hands the
fields to finops.alerts.services.caps, which validates them; the service's errors come back on the matching fields."""

from decimal import Decimal

from django import forms

from finops.alerts.services.caps import ROLE_RECIPIENTS, CapInvalid, cap_target_identifier, webhook_shown
from finops.alerts.services.channels import channels_chosen, choosable_channels
from finops.core import access
from finops.models import Account, CapPeriod, CapScope, Provider

CENT = Decimal("0.01")
ROLES_HELP = "; ".join(f"{role} = {meaning}" for role, meaning in ROLE_RECIPIENTS.items())


def scope_choices(user) -> list:
    """What `user` may put a cap on, grouped: admins anything; a team lead their teams and those teams' workloads.
    Values are "org", "team:<slug>", "workload:<slug>", "provider:<slug>", "account:<name>"."""
    admin = access.is_admin(user)
    teams = access.visible_teams(user).order_by("name") if admin else access.lead_teams(user).order_by("name")
    workloads = (
        access.visible_workloads(user).order_by("name")
        if admin
        else access.visible_workloads(user).filter(team__in=access.lead_teams(user)).order_by("name")
    )
    choices = [("", "— choose —")]
    if admin:
        choices.append(("org", "Whole organisation"))
    choices.append(("Teams", [(f"team:{t.slug}", t.name) for t in teams]))
    choices.append(("Workloads", [(f"workload:{w.slug}", f"{w.name} ({w.team.name})") for w in workloads]))
    if admin:
        choices.append(("Providers", [(f"provider:{p.slug}", p.name) for p in Provider.objects.order_by("name")]))
        choices.append(("Accounts", [(f"account:{a.name}", a.name) for a in Account.objects.order_by("name")]))
    return [c for c in choices if not isinstance(c[1], list) or c[1]]


class CapForm(forms.Form):
    name = forms.CharField(
        max_length=120, help_text="How emails and pages call the cap, e.g. “Support — monthly”. Unique."
    )
    scope = forms.ChoiceField(
        help_text="What the cap counts: the whole organisation, a team, one workload, a provider or "
        "an account. A team lead caps their own team and its workloads."
    )
    period = forms.ChoiceField(
        choices=CapPeriod.choices,
        initial=CapPeriod.MONTH,
        help_text="The cap re-arms at the start of each UTC calendar month or quarter.",
    )
    amount = forms.DecimalField(
        min_value=0, max_digits=20, decimal_places=2, help_text="Budget per period, in the reporting currency."
    )
    thresholds = forms.CharField(
        required=False,
        initial="50, 80, 100",
        help_text="Percentages of the amount that alert, comma-separated, 1–1000 (e.g. 50, 80, 100). "
        "Empty: 50, 80, 100.",
    )
    alert_on_forecast = forms.BooleanField(
        required=False,
        initial=True,
        label="Alert on forecast",
        help_text="Also alert when the period is forecast to exceed the cap.",
    )
    recipients = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text=f"Who is told, comma-separated: email addresses and roles ({ROLES_HELP}).",
    )
    webhook_url = forms.URLField(
        required=False,
        label="Webhook URL",
        assume_scheme="https",
        help_text="Optional: every alert is also POSTed there as JSON, signed with HMAC-SHA256. "
        "A public address (an admin allows internal networks). Never shown again.",
    )
    webhook_secret = forms.CharField(
        required=False,
        label="Webhook signing secret",
        widget=forms.PasswordInput(render_value=False),
        help_text="Required with a webhook URL. Stored encrypted and never shown again; "
        "leave empty to keep the current one.",
    )
    channels = forms.ModelMultipleChoiceField(
        queryset=None,
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="Also send its alerts to these channels (Slack, Microsoft Teams, a webhook, an email list; "
        "/alerts/channels/). A team lead chooses among their team's channels.",
    )
    remove_webhook = forms.BooleanField(
        required=False, label="Remove the webhook", help_text="Stop POSTing alerts; the URL and its secret are deleted."
    )

    # service field → form field, for the service's errors
    FIELD_FOR = {"target": "scope"}

    def __init__(self, *args, user, cap=None, **kwargs):
        if cap is not None and "initial" not in kwargs:
            kwargs["initial"] = self.initial_for(cap)
        super().__init__(*args, **kwargs)
        choices = scope_choices(user)
        if cap is not None and self.initial.get("scope") and not self._offers(choices, self.initial["scope"]):
            choices.append((self.initial["scope"], cap.scope_label()))  # an admin's cap a lead may read, not move
        self.fields["scope"].choices = choices
        # By name only: a channel's URL and addresses are shown on the channels page, to who may edit it.
        self.fields["channels"].queryset = choosable_channels(user).filter(for_cap=None).order_by("name", "id")
        if not self.fields["channels"].queryset.exists():
            del self.fields["channels"]
        # The URL is write-only like the secret (it may carry a token or credentials): the form shows its scheme
        # and host, and an empty field keeps it.
        self.keeps_webhook = cap is not None and bool(cap.webhook_url)
        if self.keeps_webhook:
            self.fields["webhook_url"].help_text += f" Current: {webhook_shown(cap)} — leave empty to keep it."
        else:
            del self.fields["remove_webhook"]

    @staticmethod
    def _offers(choices, value) -> bool:
        flat = [v for v, label in choices if not isinstance(label, list)]
        flat += [v for _, group in choices if isinstance(group, list) for v, _ in group]
        return value in flat

    @staticmethod
    def initial_for(cap) -> dict:
        target = cap_target_identifier(cap)
        return {
            "name": cap.name,
            "scope": "org" if cap.scope == CapScope.ORG else f"{cap.scope}:{target}",
            "period": cap.period,
            "amount": cap.amount.quantize(CENT),
            "thresholds": ", ".join(str(t) for t in cap.thresholds),
            "alert_on_forecast": cap.alert_on_forecast,
            "recipients": ", ".join(cap.recipients),
            "channels": [c.pk for c in channels_chosen(cap)],
        }

    def cap_fields(self) -> dict:
        data = self.cleaned_data
        scope, _, target = data["scope"].partition(":")
        fields = {
            "name": data["name"],
            "scope": scope,
            "target": target or None,
            "period": data["period"],
            "amount": data["amount"],
            "thresholds": data["thresholds"],
            "alert_on_forecast": data["alert_on_forecast"],
            "recipients": data["recipients"],
            "webhook_url": data["webhook_url"],
            "webhook_secret": data["webhook_secret"] or None,
        }
        if "channels" in self.fields:
            fields["channels"] = list(data["channels"])
        if data.get("remove_webhook"):
            fields["webhook_url"], fields["webhook_secret"] = "", None
        elif self.keeps_webhook and not data["webhook_url"]:
            del fields["webhook_url"]  # empty: keep the stored URL (the service keeps what it is not given)
        return fields

    def add_service_errors(self, error: CapInvalid) -> None:
        for name, message in error.errors.items():
            field = self.FIELD_FOR.get(name, name)
            self.add_error(field if field in self.fields else None, message)
