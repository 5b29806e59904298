"""The Sources pages' forms: an upload, an API account connected or edited, a FOCUS account's services."""

import json

from django import forms

from finops.models import Account, ConnectorKind, Provider
from finops.sources.models import API_CONNECTORS
from finops.sources.models import FILE_CONNECTORS as UPLOADABLE
from finops.sources.services.accounts import SYNC_INTERVAL_MAX, SYNC_INTERVAL_MIN, account_create
from ingest.connection_check import KEY_NEEDED
from ingest.connectors.registry import api_source_for
from ingest.uploads import UploadRefused, upload_check

FILE_CONNECTORS = [(k.value, k.label) for k in ConnectorKind if k not in API_CONNECTORS]
API_CONNECTOR_CHOICES = [(k.value, k.label) for k in ConnectorKind if k in API_CONNECTORS]
DEFAULT_BASE_URLS = {kind: api_source_for(kind).default_base_url for kind, _ in API_CONNECTOR_CHOICES}


class UploadForm(forms.Form):
    """An export file for an existing file account, or for a new one created on the way."""

    # allow_empty_file: the upload policy (ingest/uploads.py) refuses an empty file, in the same words as the API.
    file = forms.FileField(
        allow_empty_file=True, help_text="FOCUS CSV / CSV.gz / Parquet, a LiteLLM or JSONL gateway log, or a usage CSV."
    )
    account = forms.ModelChoiceField(
        queryset=Account.objects.filter(connector__in=UPLOADABLE),
        required=False,
        empty_label="— a new account —",
        help_text="The account the file belongs to. Its days (or billing periods) in the file replace earlier data.",
    )
    new_name = forms.CharField(
        required=False, max_length=120, label="New account name", help_text="Unique, e.g. bedrock-cur or groq-gateway."
    )
    new_provider = forms.ModelChoiceField(
        queryset=Provider.objects.all(), required=False, label="Provider", help_text="Who bills the usage in the file."
    )
    new_connector = forms.ChoiceField(
        choices=[("", "—")] + FILE_CONNECTORS,
        required=False,
        label="File format",
        help_text="FOCUS for cloud billing exports (AWS Data Exports FOCUS 1.2 for Bedrock, not CUR 2.0; Azure; "
        "Vertex); a gateway log for providers "
        "without a usage API (Groq, Cerebras, Moonshot); otherwise this product's usage CSV.",
    )

    def clean_file(self):
        upload = self.cleaned_data["file"]
        try:
            upload_check(upload)  # the API's policy too
        except UploadRefused as refused:
            raise forms.ValidationError(str(refused)) from None
        return upload

    def clean(self):
        data = super().clean()
        if data.get("account") is None:
            missing = [
                label
                for key, label in (
                    ("new_name", "a name"),
                    ("new_provider", "a provider"),
                    ("new_connector", "a file format"),
                )
                if not data.get(key)
            ]
            if missing:
                raise forms.ValidationError(f"Pick an account, or give the new account {', '.join(missing)}.")
            if Account.objects.filter(name=data["new_name"]).exists():
                self.add_error("new_name", "An account with this name exists; pick it in the list.")
        return data

    def target_account(self, *, by=None) -> Account:
        data = self.cleaned_data
        if data["account"] is not None:
            return data["account"]
        return account_create(
            name=data["new_name"], provider=data["new_provider"], connector=data["new_connector"], by=by
        )


def key_help(connector: str) -> str:
    return (
        f"The {ConnectorKind(connector).label} needs {KEY_NEEDED[connector]}. Encrypted at rest and never shown "
        "again: pages show only its first characters."
    )


class ConnectionForm(forms.Form):
    """What a pull needs: where the API is, the key, and how often. Shared by connecting and editing an account."""

    base_url = forms.URLField(
        required=False,
        assume_scheme="https",
        label="Base URL",
        help_text="Leave blank for the connector's default, shown greyed in the field ("
        + ", ".join(DEFAULT_BASE_URLS.values())
        + "). Change it only for a proxy or a regional host.",
    )
    secret = forms.CharField(
        label="API key",
        strip=True,
        max_length=500,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password", "spellcheck": "false"}),
    )
    sync_interval_minutes = forms.IntegerField(
        label="Pull every (minutes)",
        min_value=SYNC_INTERVAL_MIN,
        max_value=SYNC_INTERVAL_MAX,
        initial=60,
        help_text="How often the usage is pulled (the schedule looks every 5 minutes). Each pull re-reads the last "
        "3 days and the first of each day the month to date, so providers' late corrections land.",
    )

    def __init__(self, *args, connector: str | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        connector = connector if connector in DEFAULT_BASE_URLS else API_CONNECTOR_CHOICES[0][0]
        # The picked connector's default sits in the field as its placeholder, and its key's requirements under
        # the key; the page's script swaps both when another connector is picked.
        base_url = self.fields["base_url"].widget
        base_url.attrs["data-defaults"] = json.dumps(DEFAULT_BASE_URLS)
        base_url.attrs["placeholder"] = DEFAULT_BASE_URLS[connector]
        self.fields["secret"].widget.attrs["data-help"] = json.dumps(
            {kind: key_help(kind) for kind in DEFAULT_BASE_URLS}
        )
        self.fields["secret"].help_text = key_help(connector)

    def connection(self) -> dict | None:
        """connector-independent values for a connection test, or None while one of them is invalid."""
        if any(name in self.errors for name in ("base_url", "secret")):
            return None
        return {"base_url": self.cleaned_data.get("base_url", ""), "secret": self.cleaned_data.get("secret", "")}


class ApiAccountForm(ConnectionForm):
    """Connect an API account from the Sources page (admins)."""

    connector = forms.ChoiceField(
        choices=API_CONNECTOR_CHOICES,
        label="Connector",
        help_text="Which usage API to pull: OpenAI's and Anthropic's Admin APIs (usage joined to billed cost), "
        "OpenRouter's daily activity, or a LiteLLM proxy's spend logs (Groq, Cerebras, Moonshot … through your "
        "gateway, "
        "priced from the catalog, with each request's latency). Other sources come in as files (FOCUS, gateway logs, "
        "usage CSV).",
    )
    name = forms.CharField(
        max_length=120,
        label="Account name",
        help_text="How this account is named on every page, in alerts and in config (e.g. openai-prod). Unique.",
    )
    provider = forms.ModelChoiceField(
        queryset=Provider.objects.all(),
        required=False,
        empty_label="— the connector's provider —",
        help_text="Who bills this usage. Blank: OpenAI, Anthropic or OpenRouter, after the connector. A LiteLLM proxy "
        "needs one: the provider of requests whose record names none.",
    )
    field_order = ["connector", "name", "provider", "base_url", "secret", "sync_interval_minutes"]

    def __init__(self, *args, **kwargs):
        data = args[0] if args else kwargs.get("data")
        super().__init__(*args, connector=(data or {}).get("connector"), **kwargs)

    def clean_name(self):
        name = self.cleaned_data["name"].strip()
        if Account.objects.filter(name=name).exists():
            raise forms.ValidationError("An account with this name exists; pick another name.")
        return name

    def connection(self) -> dict | None:
        values = super().connection()
        if values is None or "connector" in self.errors:
            return None
        return {**values, "connector": self.cleaned_data["connector"]}


class AccountSettingsForm(ConnectionForm):
    """An API account's connection settings, on its page: a new key, the base URL, the interval, on or off."""

    enabled = forms.BooleanField(
        required=False,
        label="Enabled (pulled on its schedule)",
        help_text="A refused key (HTTP 401/403) switches the account off: paste a working key, test it, then tick "
        "this.",
    )
    field_order = ["base_url", "secret", "sync_interval_minutes", "enabled"]

    def __init__(self, *args, account: Account, **kwargs):
        kwargs.setdefault(
            "initial",
            {
                "base_url": account.base_url,
                "sync_interval_minutes": account.sync_interval_minutes,
                "enabled": account.enabled,
            },
        )
        super().__init__(*args, connector=account.connector, **kwargs)
        secret = self.fields["secret"]
        secret.required = False
        secret.label = "New API key"
        kept = (
            f"the stored key ({account.credentials_display})" if account.has_credentials else "no key (none is stored)"
        )
        secret.help_text = f"Leave empty to keep {kept}. {key_help(account.connector)}"


class FocusServicesForm(forms.Form):
    """A FOCUS file account's services besides, or never, its provider's LLM inference: one ServiceName a line."""

    include = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 4}),
        label="Also import these services",
        help_text="One FOCUS ServiceName a line, as the file spells it (any case), e.g. Amazon SageMaker.",
    )
    exclude = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 4}),
        label="Never import these services",
        help_text="One ServiceName a line; wins over the rule that keeps LLM inference.",
    )

    def __init__(self, *args, account: Account, **kwargs):
        kwargs.setdefault(
            "initial",
            {
                "include": "\n".join(account.focus_services_include),
                "exclude": "\n".join(account.focus_services_exclude),
            },
        )
        super().__init__(*args, **kwargs)

    def names(self, field: str) -> list[str]:
        return self.cleaned_data[field].splitlines()
