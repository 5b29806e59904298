"""The channel form (issue 25): parses what people type (addresses comma-separated) and hands the fields to
finops.alerts.services.channels.channel_save, whose errors come back on the matching fields. The URL and the webhook's
signing secret are write-only: the form shows the URL's scheme and host, and an empty field keeps what is stored."""

from django import forms

from finops.alerts.services.caps import ROLE_RECIPIENTS
from finops.alerts.services.channels import CHANNEL_ROLES
from finops.core import access
from finops.models import AlertKind, ChannelKind, Team

ROLES_HELP = "; ".join(f"{role} = {meaning}" for role, meaning in {**ROLE_RECIPIENTS, **CHANNEL_ROLES}.items())


class ChannelForm(forms.Form):
    name = forms.CharField(max_length=120, help_text="How pages and messages call it, e.g. “Platform Slack”.")
    kind = forms.ChoiceField(choices=ChannelKind.choices)
    team = forms.ChoiceField(
        required=False, help_text="Who owns it: a team (its lead edits it) or the organisation (admins)."
    )
    addresses = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text=f"Email channels: addresses and roles, comma-separated ({ROLES_HELP}).",
    )
    url = forms.CharField(
        required=False,
        label="URL",
        help_text="Webhook, Slack (incoming webhook) or Microsoft Teams (workflow) URL; a public address unless an "
        "admin allows the network. Never shown again.",
    )
    secret = forms.CharField(
        required=False,
        label="Signing secret",
        widget=forms.PasswordInput(render_value=False),
        help_text="Webhooks: receivers verify the HMAC-SHA256 signature with it. Stored encrypted, never shown again.",
    )
    kinds = forms.MultipleChoiceField(
        choices=AlertKind.choices,
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="The alert kinds it takes; none ticked: every kind.",
    )
    is_default = forms.BooleanField(
        required=False,
        label="Default",
        help_text="Takes its owner's alerts (the team's, or the organisation's) that no cap, contract or workload sent "
        "to a channel of its own.",
    )

    def __init__(self, *args, user, channel=None, **kwargs):
        if channel is not None and "initial" not in kwargs:
            kwargs["initial"] = {
                "name": channel.name,
                "kind": channel.kind,
                "team": channel.team.slug if channel.team_id else "",
                "addresses": ", ".join(channel.addresses),
                "kinds": list(channel.kinds),
                "is_default": channel.is_default,
            }
        super().__init__(*args, **kwargs)
        teams = Team.objects.order_by("name") if access.is_admin(user) else access.lead_teams(user).order_by("name")
        choices = [("", "The organisation")] if access.is_admin(user) else []
        self.fields["team"].choices = choices + [(t.slug, t.name) for t in teams]
        if channel is not None and channel.url_label:
            self.fields["url"].help_text += f" Current: {channel.url_label} — leave empty to keep it."
        if channel is not None and channel.secret_ciphertext:
            self.fields["secret"].help_text += " One is set: leave empty to keep it."

    def channel_fields(self) -> dict:
        data = self.cleaned_data
        return {
            "name": data["name"],
            "kind": data["kind"],
            "team": Team.objects.filter(slug=data["team"]).first() if data["team"] else None,
            "addresses": data["addresses"] if data["kind"] == ChannelKind.EMAIL else None,
            "url": data["url"] or None,
            "secret": data["secret"] or None,
            "kinds": data["kinds"],
            "is_default": data["is_default"],
        }
