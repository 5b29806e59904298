"""What the ingestion property tests share: hypothesis settings, each example's writes undone when it ends, and an
account's totals by day in the raw lines and in the rollup."""

import contextlib

from django.db import transaction
from django.db.models import Count, Sum
from django.db.models.functions import TruncDate
from hypothesis import HealthCheck, settings

from finops.models import Account, DailySpend, IngestRun, MonthlySpend, UsageLine
from finops.spend.services.team_rollup import team_rollup_rebuild

TOKEN_FIELDS = ("input_tokens", "cached_input_tokens", "cache_write_tokens", "output_tokens", "requests")
# A pull plan costs ~0.3 s (dozens of HTTP pages, several writes); a file import ~20 ms.
SLOW_FIXTURES = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
PULL_SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=SLOW_FIXTURES)
FILE_SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=SLOW_FIXTURES)


@contextlib.contextmanager
def example_undone():
    """The example's writes (lines, rollups, runs, keys) rolled back to a savepoint when it ends, pass or fail: the
    next example starts from the database as the fixtures left it, no usage. Two statements, where emptying the
    account's lines and rollups (reset_account) took six and a rebuild of the overview's days; the `db` fixture's
    transaction is shared by all examples of a test, and an import's own transactions nest in it either way."""
    with transaction.atomic():
        yield
        transaction.set_rollback(True)


def reset_account(account: Account) -> None:
    """No usage left for the account: every example starts from none."""
    days = set(DailySpend.objects.filter(account=account).values_list("day", flat=True))
    MonthlySpend.objects.filter(account=account).delete()
    DailySpend.objects.filter(account=account).delete()
    team_rollup_rebuild(days=days)  # the overview's rollup has no account: its days summed again without it
    UsageLine.objects.filter(account=account).delete()
    IngestRun.objects.filter(account=account).delete()


def totals_by_day(account: Account) -> dict:
    """Per UTC day of the raw lines: Σ cost, Σ reporting cost, Σ each token class and the number of lines."""
    rows = (
        UsageLine.objects.filter(account=account)
        .annotate(day=TruncDate("period_start"))
        .values("day")
        .annotate(
            cost=Sum("cost"),
            reporting_cost=Sum("reporting_cost"),
            **{f: Sum(f) for f in TOKEN_FIELDS},
            lines=Count("id"),
        )
        .order_by("day")
    )
    return {row.pop("day"): row for row in rows}


def rollup_totals_by_day(account: Account) -> dict:
    rows = (
        DailySpend.objects.filter(account=account)
        .values("day")
        .annotate(
            cost=Sum("cost"),
            reporting_cost=Sum("reporting_cost"),
            **{f: Sum(f) for f in TOKEN_FIELDS},
            lines=Sum("line_count"),
        )
        .order_by("day")
    )
    return {row.pop("day"): row for row in rows}
