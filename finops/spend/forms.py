"""The rules pages' form (the unattributed page's "Create a rule" links pre-fill it)."""

from django import forms

from finops.spend.services.rules import rule_tags_problem


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
        from ingest.connectors.parsing import parse_tags

        try:
            tags = parse_tags(self.cleaned_data["tags_text"])
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from None
        if problem := rule_tags_problem(tags):
            raise forms.ValidationError(problem)
        return tags

    def rule_fields(self) -> dict:
        data = {name: self.cleaned_data[name] for name in self.Meta.fields}
        data["tags"] = self.cleaned_data["tags_text"]
        return data
