"""Provider contracts and commitments (issue 11): what was committed, over which term, with which notice period.

A contract covers some of a provider's accounts (none named: all of them). Its current term is on the contract
(start, end, commitment …); renewing it in place archives the term it replaces as a ContractTerm, so the old
term's history (and its consumption, from the rollup over its dates) stays visible.
"""

from django.db import models

from finops.sources.models import Account, Provider
from finops.spend.models.usage import MONEY

DEFAULT_NOTICE_ALERT_DAYS = [180, 90, 30, 7]


class CommitmentBasis(models.TextChoices):
    TERM = "term", "Total over the term"
    MONTHLY = "monthly", "Per month (a month's unused part is lost)"
    YEARLY = "yearly", "Per year"


def default_notice_alert_days() -> list[int]:
    return list(DEFAULT_NOTICE_ALERT_DAYS)


class TermFields(models.Model):
    """What a term commits to: half-open UTC days [start, end), an amount on a basis, a prepaid credit."""

    start = models.DateField(help_text="First UTC day of the term.")
    end = models.DateField(help_text="The day after the last (the term is [start, end), UTC days).")
    commitment = models.DecimalField(
        **MONEY, help_text="The committed amount, on the basis below, in the contract's currency."
    )
    commitment_basis = models.CharField(max_length=8, choices=CommitmentBasis.choices, default=CommitmentBasis.TERM)
    prepaid = models.DecimalField(**MONEY, default=0, help_text="Prepaid credit, if any (part of the commitment).")

    class Meta:
        abstract = True


class Contract(TermFields):
    name = models.CharField(max_length=120, unique=True)
    provider = models.ForeignKey(Provider, on_delete=models.PROTECT, related_name="contracts")
    accounts = models.ManyToManyField(
        Account,
        blank=True,
        related_name="contracts",
        help_text="The accounts it covers; none: every account of the provider.",
    )
    currency = models.CharField(max_length=3, default="USD")
    discount_pct = models.DecimalField(
        max_digits=7,
        decimal_places=4,
        default=0,
        help_text="Negotiated discount off list, used to estimate the cost of covered usage "
        "that has no billed cost (never applied to billed costs).",
    )
    auto_renew = models.BooleanField(default=False)
    renewal_term_months = models.PositiveIntegerField(default=12)
    notice_days = models.PositiveIntegerField(
        default=60, help_text="Days before the end by which notice must be given."
    )
    notice_alert_days = models.JSONField(
        default=default_notice_alert_days, help_text="Alert when the notice deadline is this many days away."
    )
    owner = models.EmailField(blank=True, help_text="Who answers for it; alerted with finance.")
    notes = models.TextField(blank=True)
    document_url = models.URLField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["end", "name"]
        constraints = [
            models.CheckConstraint(name="contract_ends_after_it_starts", condition=models.Q(end__gt=models.F("start"))),
            models.CheckConstraint(name="contract_commitment_not_negative", condition=models.Q(commitment__gte=0)),
        ]

    def __str__(self):
        return self.name


class ContractTerm(TermFields):
    """A past term of a contract renewed in place."""

    contract = models.ForeignKey(Contract, on_delete=models.CASCADE, related_name="past_terms")
    archived_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-start"]

    def __str__(self) -> str:
        return f"past term of contract {self.contract_id}, archived {self.archived_at:%Y-%m-%d}"
