"""The monthly rollup: DailySpend summed by UTC calendar month, for reads of long periods (issue 4 page bench).

Explore over a year read every daily rollup row (~534k at 10M lines, 0.4 s of SQL); a year of this table is
about 25× fewer rows. It is derived from DailySpend only, never from the raw lines, so it equals the daily
rollup summed by month by construction (finops.spend.services.monthly_rollup rebuilds it whenever daily rows are
replaced). The dimensions, measures and on_delete rules mirror DailySpend exactly — a test holds them equal —
so deleting a team, workload or account changes both tables the same way.
"""

from django.db import models

from finops.core.rollup_keys import ROLLUP_FK
from finops.org.models.org import Team, Workload
from finops.sources.models import Account, Provider

from .usage import RollupSums


class MonthlySpend(RollupSums):
    """month × account × provider × model × workload × team × currency × basis × category; equals DailySpend."""

    month = models.DateField(help_text="The first day of the UTC calendar month.")
    # The single-column foreign-key indexes are left out: each key leads one of the (key, month) indexes below.
    account = models.ForeignKey(Account, on_delete=models.CASCADE, db_index=False, **ROLLUP_FK)
    provider = models.ForeignKey(Provider, on_delete=models.PROTECT, db_index=False, **ROLLUP_FK)
    workload = models.ForeignKey(
        Workload, on_delete=models.SET_NULL, null=True, blank=True, db_index=False, **ROLLUP_FK
    )
    team = models.ForeignKey(Team, on_delete=models.SET_NULL, null=True, blank=True, db_index=False, **ROLLUP_FK)

    class Meta:
        # The same reads as DailySpend's indexes, by month: a period, a team's or workload's rows (member scope,
        # re-attribution rebuilds), an account's (ingest rebuilds), and Explore's provider and model filters.
        indexes = [
            models.Index(fields=["month"], name="monthlyspend_month"),
            models.Index(fields=["team", "month"], name="monthlyspend_team_month"),
            models.Index(fields=["workload", "month"], name="monthlyspend_workload_month"),
            models.Index(fields=["account", "month"], name="monthlyspend_account_month"),
            models.Index(fields=["provider", "month"], name="monthlyspend_provider_month"),
            models.Index(fields=["model", "month"], name="monthlyspend_model_month"),
        ]
