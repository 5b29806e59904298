"""Spend for the monthly report's tests: two months of usage imported through the usage CSV connector
(docs/usage-csv.md), as a provider export would arrive, and attributed by a rule."""

import datetime as dt
import io
from decimal import Decimal

from finops.models import AttributionRule
from finops.spend.services.attribution import history_reattribute
from ingest.services import usage_file_import

SEPTEMBER = dt.date(2026, 9, 1)
OCTOBER = dt.date(2026, 10, 1)
NOVEMBER = dt.date(2026, 11, 1)

HEADER = "day,model,input_tokens,output_tokens,requests,cost,project"


def month_rows(
    month: dt.date, *, cost: Decimal, tokens: int, project: str = "support", model: str = "gpt-5-mini"
) -> list[str]:
    end = (month + dt.timedelta(days=32)).replace(day=1)
    days = (end - month).days
    return [
        f"{month + dt.timedelta(days=n):%Y-%m-%d},{model},{tokens},{tokens // 4},100,{cost},{project}"
        for n in range(days)
    ]


def import_usage(account, rows: list[str], name: str = "usage.csv"):
    run = usage_file_import(account=account, stream=io.BytesIO("\n".join([HEADER, *rows]).encode()), file_name=name)
    assert run.status == "succeeded", run.error
    return run


def two_months_of_support_usage(
    account, workload, *, month: dt.date = OCTOBER, october_cost: Decimal = Decimal("12.50")
):
    """The month before `month` at $10.00 a day, `month` at `october_cost` a day, all on the Support agent. For
    October (the default): 31 × $12.50 = $387.50 against September's 30 × $10.00 = $300.00."""
    before = (month - dt.timedelta(days=1)).replace(day=1)
    AttributionRule.objects.create(workload=workload, priority=1, project="support")
    import_usage(account, month_rows(before, cost=Decimal("10.00"), tokens=1_000_000), f"{before:%Y-%m}.csv")
    import_usage(account, month_rows(month, cost=october_cost, tokens=1_200_000), f"{month:%Y-%m}.csv")
    history_reattribute()
