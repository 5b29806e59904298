from django import forms

from finops.models import Account, ConnectorKind, Provider
from finops.models.sources import API_CONNECTORS

FILE_CONNECTORS = [(k.value, k.label) for k in ConnectorKind if k not in API_CONNECTORS]
MAX_UPLOAD_BYTES = 2 * 1024**3


class UploadForm(forms.Form):
    """An export file for an existing file account, or for a new one created on the way."""

    file = forms.FileField(help_text="FOCUS CSV / CSV.gz / Parquet, a LiteLLM or JSONL gateway log, or a usage CSV.")
    account = forms.ModelChoiceField(
        queryset=Account.objects.exclude(connector__in=[c.value for c in API_CONNECTORS]),
        required=False,
        empty_label="— a new account —",
        help_text="The account the file belongs to. Its days (or billing periods) in the file replace earlier data.",
    )
    new_name = forms.CharField(required=False, max_length=120, label="New account name", help_text="e.g. bedrock-cur")
    new_provider = forms.ModelChoiceField(queryset=Provider.objects.all(), required=False, label="Provider")
    new_connector = forms.ChoiceField(choices=[("", "—")] + FILE_CONNECTORS, required=False, label="File format")

    def clean_file(self):
        upload = self.cleaned_data["file"]
        if upload.size == 0:
            raise forms.ValidationError("The file is empty.")
        if upload.size > MAX_UPLOAD_BYTES:
            raise forms.ValidationError("The file is over 2 GiB; use `manage.py import_usage` on the server instead.")
        return upload

    def clean(self):
        data = super().clean()
        if data.get("account") is None:
            missing = [label for key, label in (("new_name", "a name"), ("new_provider", "a provider"), ("new_connector", "a file format")) if not data.get(key)]
            if missing:
                raise forms.ValidationError(f"Pick an account, or give the new account {', '.join(missing)}.")
            if Account.objects.filter(name=data["new_name"]).exists():
                self.add_error("new_name", "An account with this name exists; pick it in the list.")
        return data

    def target_account(self) -> Account:
        data = self.cleaned_data
        if data["account"] is not None:
            return data["account"]
        return Account.objects.create(name=data["new_name"], provider=data["new_provider"], connector=data["new_connector"])


class RuleForm(forms.ModelForm):
    """A rule: the workload it assigns to, its priority, and any conditions (all must hold; blank = any)."""

    tags_text = forms.CharField(
        required=False,
        label="Tags",
        help_text="key=value pairs separated by ';', e.g. team=support; env=prod. All must be present.",
    )

    class Meta:
        from finops.models import AttributionRule

        model = AttributionRule
        fields = ["workload", "priority", "account", "provider", "project", "api_key", "user", "model"]
        help_texts = {"account": "Blank: any account.", "provider": "Blank: any provider."}

    # What a new rule's form takes from its URL (?api_key=…&account=3&tags_text=env=prod): the unattributed
    # page's "Create a rule" links.
    PREFILL = ("workload", "account", "provider", "project", "api_key", "user", "model", "tags_text")

    @classmethod
    def initial_from_query(cls, query) -> dict:
        return {name: query[name] for name in cls.PREFILL if query.get(name)}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk and not self.is_bound:
            self.initial["tags_text"] = "; ".join(f"{k}={v}" for k, v in sorted(self.instance.tags.items()))

    def clean_tags_text(self):
        from ingest.providers.parsing import parse_tags

        try:
            tags = parse_tags(self.cleaned_data["tags_text"])
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from None
        bad = [key for key in tags if "__" in key]
        if bad:
            raise forms.ValidationError(f"tag keys cannot contain '__': {', '.join(bad)}")
        return tags

    def rule_fields(self) -> dict:
        data = {name: self.cleaned_data[name] for name in self.Meta.fields}
        data["tags"] = self.cleaned_data["tags_text"]
        return data
