"""List prices per model and dated FX rates into the reporting currency."""

from django.core.validators import MinValueValidator
from django.db import models

from finops.sources.models import Provider

PER_MTOK = {"max_digits": 20, "decimal_places": 10, "validators": [MinValueValidator(0)]}


class ModelPrice(models.Model):
    """A per-token list price, in USD per million tokens, valid on [effective_from, effective_to)."""

    class Source(models.TextChoices):
        CATALOG = "catalog", "Seed catalog"
        CONFIG = "config", "Config as code"
        MANUAL = "manual", "Entered by hand"

    provider = models.ForeignKey(Provider, on_delete=models.CASCADE, related_name="prices")
    model = models.CharField(max_length=200, help_text="Normalised model id.")
    effective_from = models.DateField()
    effective_to = models.DateField(null=True, blank=True, help_text="Exclusive; empty until a later price exists.")
    currency = models.CharField(max_length=3, default="USD")
    input_per_mtok = models.DecimalField(**PER_MTOK)
    output_per_mtok = models.DecimalField(**PER_MTOK)
    cached_input_per_mtok = models.DecimalField(**PER_MTOK, null=True, blank=True)
    cache_write_per_mtok = models.DecimalField(**PER_MTOK, null=True, blank=True)
    batch_input_per_mtok = models.DecimalField(**PER_MTOK, null=True, blank=True)
    batch_output_per_mtok = models.DecimalField(**PER_MTOK, null=True, blank=True)
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.MANUAL)
    source_ref = models.CharField(max_length=255, blank=True, help_text="Catalog key the price came from.")

    class Meta:
        ordering = ["provider__slug", "model", "effective_from"]
        constraints = [
            models.UniqueConstraint(fields=["provider", "model", "effective_from"], name="model_price_unique_start"),
            models.CheckConstraint(
                condition=models.Q(effective_to__isnull=True) | models.Q(effective_to__gt=models.F("effective_from")),
                name="model_price_period_positive",
            ),
        ]

    def __str__(self):
        return f"{self.provider.slug}/{self.model} from {self.effective_from}"


class FxRate(models.Model):
    """1 unit of `currency` = `rate` units of the reporting currency, from `day` until the next rate."""

    day = models.DateField()
    currency = models.CharField(max_length=3)
    rate = models.DecimalField(max_digits=20, decimal_places=10, validators=[MinValueValidator(0)])

    class Meta:
        ordering = ["currency", "-day"]
        constraints = [models.UniqueConstraint(fields=["day", "currency"], name="fx_rate_unique_day")]

    def __str__(self):
        return f"{self.currency} {self.day}: {self.rate}"
