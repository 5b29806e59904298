"""Offerings (issue 13): a provider serving a model, with the figures a what-if needs, grouped by model family so
offerings of the same weights compare; and a routing policy per workload.

Decisions (docs/whatif.md):
- An offering's prices are used only where the catalog (ModelPrice, dated, one source of truth) has no price for
  its provider and model: the catalog wins, and a contract discount applies on top of it. The entered prices are
  for offerings the catalog does not know (a new provider, a blended-price provider).
- Its performance figures (output tokens/s, time to first token) are used only where the company's gateway logs
  measure nothing for that provider and model over the last 30 days: measured beats entered.
- A family is a slug (`llama-3.3-70b`). Usage lines map to one by their normalised model id: a ModelFamily's
  aliases first, then the offerings' own models, then a canonical form of the id (finops.whatif.families).
"""

from django.core.validators import MinValueValidator
from django.db import models

from finops.org.models.org import Workload
from finops.prices.models import PER_MTOK
from finops.sources.models import Provider


class ModelFamily(models.Model):
    """The same weights under the names each provider gives them (`aliases`: normalised model ids)."""

    slug = models.CharField(max_length=100, unique=True, help_text="e.g. llama-3.3-70b (dots allowed).")
    name = models.CharField(max_length=120, blank=True)
    aliases = models.JSONField(default=list, blank=True, help_text="Normalised model ids of these weights.")

    class Meta:
        ordering = ["slug"]

    def __str__(self):
        return self.name or self.slug


class Offering(models.Model):
    """A provider serving a model on one tier (issue 28): the same model on the batch tier of the same provider is a
    second offering, with its own prices and turnaround."""

    class Tier(models.TextChoices):
        STANDARD = "standard", "Standard"
        BATCH = "batch", "Batch"  # asynchronous, results within the provider's batch turnaround (24 h)
        FLEX = "flex", "Flex"  # cheaper, slower, may be refused under load
        PRIORITY = "priority", "Priority"  # dearer, faster and first served
        PROVISIONED = "provisioned", "Provisioned"  # reserved throughput, billed by the hour

    provider = models.ForeignKey(Provider, on_delete=models.CASCADE, related_name="offerings")
    model = models.CharField(max_length=200, help_text="Normalised model id, as on usage lines.")
    family = models.CharField(max_length=100, help_text="Model family slug: offerings of the same weights compare.")
    tier = models.CharField(max_length=16, choices=Tier.choices, default=Tier.STANDARD)
    input_per_mtok = models.DecimalField(**PER_MTOK, null=True, blank=True)
    cached_input_per_mtok = models.DecimalField(**PER_MTOK, null=True, blank=True)
    cache_write_per_mtok = models.DecimalField(**PER_MTOK, null=True, blank=True)
    output_per_mtok = models.DecimalField(**PER_MTOK, null=True, blank=True)
    blended_per_mtok = models.DecimalField(
        **PER_MTOK, null=True, blank=True, help_text="One price for every token, when that is all a provider publishes."
    )
    output_tokens_per_s = models.DecimalField(
        max_digits=12, decimal_places=3, null=True, blank=True, validators=[MinValueValidator(0)]
    )
    ttft_seconds = models.DecimalField(
        max_digits=10,
        decimal_places=3,
        null=True,
        blank=True,
        validators=[MinValueValidator(0)],
        help_text="Time to first token.",
    )
    context_window = models.PositiveIntegerField(null=True, blank=True, help_text="Tokens (input + output).")
    requests_per_minute = models.PositiveIntegerField(
        null=True, blank=True, help_text="The provider's rate limit for the company's account, when known."
    )
    tokens_per_minute = models.PositiveIntegerField(null=True, blank=True, help_text="Input + output tokens a minute.")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["family", "provider__slug", "model", "tier"]
        constraints = [
            models.UniqueConstraint(fields=["provider", "model", "tier"], name="offering_provider_model_tier_unique")
        ]

    def __str__(self):
        tier = "" if self.tier == self.Tier.STANDARD else f" ({self.tier})"
        return f"{self.provider.slug}/{self.model}{tier}"


class RoutingPolicy(models.Model):
    """Where a workload's requests go: a primary offering, a fallback, what the choice optimises, and (optionally)
    the offerings the platform team allows for it (none: every offering of its family)."""

    class Constraint(models.TextChoices):
        LATENCY = "latency", "Latency"
        COST = "cost", "Cost"
        QUALITY = "quality", "Quality"

    workload = models.OneToOneField(Workload, on_delete=models.CASCADE, related_name="routing_policy")
    primary = models.ForeignKey(Offering, on_delete=models.PROTECT, related_name="+")
    fallback = models.ForeignKey(Offering, on_delete=models.PROTECT, related_name="+", null=True, blank=True)
    constraint = models.CharField(max_length=16, choices=Constraint.choices, default=Constraint.COST)
    allowed = models.ManyToManyField(
        Offering, blank=True, related_name="+", help_text="Offerings a what-if may route it to; none: its family's."
    )

    class Meta:
        ordering = ["workload__slug"]

    def __str__(self):
        return f"{self.workload.slug} → {self.primary}"
