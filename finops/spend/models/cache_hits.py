"""Requests a gateway answered from its own cache: what the cache saved, kept apart from provider usage.

LiteLLM records a response it served from its cache like any other (`cache_hit` "True", spend 0, the tokens of
the response it replayed). No provider served or billed it, so it is no UsageLine: provider requests, tokens,
cost, latency and every total stay the provider's. It is stored here instead, one row per hour × line
signature (the same signature a usage line would have had, so attribution rules give it the same workload and
team), with the tokens a provider would have billed and their cost at list price — an estimate, never spend.

The table is small (cache hits are a fraction of requests, grouped by hour and signature), so pages sum it
directly (finops/spend/selectors/cache_hits.py); there is no daily rollup, and the retention prune of raw usage lines
(ingest/retention.py) leaves it, as it leaves the rollups pages read. docs/litellm.md explains the decision.
"""

from django.db import models

from finops.sources.models import Account, IngestRun, Provider

from .usage import MONEY, LineSignature, TokenCounts


class GatewayCacheHit(TokenCounts):
    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="+")
    provider = models.ForeignKey(Provider, on_delete=models.PROTECT, related_name="+")
    ingest_run = models.ForeignKey(IngestRun, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    period_start = models.DateTimeField(help_text="UTC, inclusive (an hour).")
    period_end = models.DateTimeField(help_text="UTC, exclusive.")
    model = models.CharField(max_length=200, help_text="Normalised model id (finops.core.modelids).")
    # Lines keep no database foreign key to their signature (usage.py's _FACT_FK); nor do these.
    signature = models.ForeignKey(LineSignature, on_delete=models.CASCADE, db_constraint=False, related_name="+")
    list_cost = models.DecimalField(
        **MONEY,
        null=True,
        blank=True,
        help_text="Estimate: the tokens at the provider's list price on the day, in the reporting currency; null when "
        "unpriced. Not spend: nothing was billed.",
    )

    class Meta:
        indexes = [models.Index(fields=["account", "period_start"]), models.Index(fields=["signature"])]

    def __str__(self) -> str:
        return f"{self.requests} cache hits, {self.model}, {self.period_start:%Y-%m-%d %H:00}"
