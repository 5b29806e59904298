"""The overview's rollup: DailySpend summed by day × team × provider × basis × category (issue 23).

The overview's day grid (its tiles, month to date, forecast and chart) read ~88k daily rows at 10M lines for two
months (252 ms of SQL, cold); it needs neither account, workload, model nor currency, and summed without them a day
is ~240 rows instead of ~1,500. Team stays: a member sees their teams' rows only (finops.core.access). It is derived
from DailySpend only, in rollup_rebuild's transaction (finops.spend.services.team_rollup), so it equals the daily
rollup summed by those keys by construction. Deleting a team sets its rows' team to null, as it does DailySpend's;
an account's deletion re-sums the days it had (finops.sources.services.accounts). Unattributed spend (no workload)
is not told apart here: a workload's deletion would make its rows unattributed in DailySpend only, so that figure
is read from DailySpend (finops.spend.selectors.day_grid).
"""

from django.db import models

from finops.core.rollup_keys import ROLLUP_FK
from finops.org.models.org import Team
from finops.sources.models import Provider

from .usage import MONEY, ChargeCategory, CostBasis, TokenCounts


class TeamDailySpend(TokenCounts):
    """day × team × provider × basis × category; equals DailySpend summed by those keys."""

    day = models.DateField()
    team = models.ForeignKey(Team, on_delete=models.SET_NULL, null=True, blank=True, db_index=False, **ROLLUP_FK)
    provider = models.ForeignKey(Provider, on_delete=models.PROTECT, db_index=False, **ROLLUP_FK)
    cost_basis = models.CharField(max_length=16, choices=CostBasis.choices)
    charge_category = models.CharField(max_length=16, choices=ChargeCategory.choices)
    reporting_cost = models.DecimalField(**MONEY, null=True, blank=True)
    line_count = models.PositiveIntegerField(default=0)

    class Meta:
        # An admin's period (every team), a member's (their teams, as DailySpend's (team, day) index serves it).
        # The day index carries what the day grid sums (finops.spend.selectors.day_grid): an index-only scan
        # of ~200 pages for an admin's 60 days at 10M lines, not ~5,000 heap pages (Postgres CPU 7.1 → 4.9 ms a
        # request; issue 23). Postgres only: SQLite ignores INCLUDE.
        indexes = [
            models.Index(
                fields=["day"],
                include=[
                    "provider",
                    "charge_category",
                    "cost_basis",
                    "reporting_cost",
                    "input_tokens",
                    "cached_input_tokens",
                    "cache_write_tokens",
                    "output_tokens",
                    "requests",
                    "line_count",
                ],
                name="teamdailyspend_day_sums",
            ),
            models.Index(fields=["team", "day"], name="teamdailyspend_team_day"),
            models.Index(fields=["provider"], name="teamdailyspend_provider"),
        ]

    def __str__(self) -> str:
        return f"team spend {self.day} team {self.team_id}"
