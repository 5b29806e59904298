"""The offering form (admins only). Field checks a person can fix on the page; the service
(finops.whatif.services, the same write path as apply_config) has the last word and its errors come back on
the fields."""

from django import forms

from finops.models import Offering

FIELDS = [
    "provider",
    "model",
    "family",
    "tier",
    "input_per_mtok",
    "cached_input_per_mtok",
    "cache_write_per_mtok",
    "output_per_mtok",
    "blended_per_mtok",
    "output_tokens_per_s",
    "ttft_seconds",
    "context_window",
    "requests_per_minute",
    "tokens_per_minute",
]


class OfferingForm(forms.ModelForm):
    class Meta:
        model = Offering
        fields = FIELDS
        labels = {
            "input_per_mtok": "Input ($/M tokens)",
            "cached_input_per_mtok": "Cached input ($/M)",
            "cache_write_per_mtok": "Cache write ($/M)",
            "output_per_mtok": "Output ($/M tokens)",
            "blended_per_mtok": "Blended ($/M tokens)",
            "output_tokens_per_s": "Output tokens / s",
            "ttft_seconds": "Time to first token (s)",
            "context_window": "Context window (tokens)",
            "requests_per_minute": "Rate limit (requests / min)",
            "tokens_per_minute": "Rate limit (tokens / min)",
        }
        help_texts = {
            "model": "As the provider names it; stored normalised, as on usage lines.",
            "family": "e.g. llama-3.3-70b: offerings of one family are compared. Empty: the model's own family.",
            "input_per_mtok": "Used only where the price catalog has no price for this provider and model.",
            "blended_per_mtok": "One price for every token, when that is all the provider publishes.",
            "output_tokens_per_s": "Used only while the gateway logs measure nothing for it (last 30 days).",
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["family"].required = False
        self.fields["tier"].required = False  # empty: standard
        if self.instance.pk:  # an offering is its provider, model and tier: change them by adding another offering
            for name in ("provider", "model", "tier"):
                self.fields[name].disabled = True
