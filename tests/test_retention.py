"""Retention: raw usage lines past FINOPS_USAGE_RETENTION_MONTHS are pruned in small committed batches, and every
figure the product shows — rollups, pages, CSV, the API, latency — stays exactly as it was (ingest/retention.py).

Transactional (the prune commits batch by batch, as in production), on the real Postgres.
"""

import datetime as dt
import io
import re

import pytest
from django.core.management import call_command
from django.urls import reverse

from finops.models import (
    Account,
    AttributionRule,
    DailyPerformance,
    DailySpend,
    MonthlyPerformance,
    MonthlySpend,
    Provider,
    UsageLine,
)
from finops.spend.services.attribution import history_reattribute
from ingest.retention import retention_cutoff, usage_lines_prune
from ingest.services import usage_file_import
from ingest.tasks import prune_usage_lines
from tests.conftest import reseed_reference_data
from tests.test_workload_performance import gateway, import_log, record

pytestmark = pytest.mark.slow

NOW = dt.datetime(2026, 11, 22, 12, tzinfo=dt.UTC)
# 25 whole months before November 2026: lines starting before 1 October 2024 go.
CUTOFF = dt.datetime(2024, 10, 1, tzinfo=dt.UTC)
FIRST_DAY, LAST_DAY = dt.date(2024, 6, 1), dt.date(2026, 11, 21)


@pytest.fixture(autouse=True)
def _frozen(time_machine):
    time_machine.move_to(NOW)


@pytest.fixture
def history(transactional_db, settings, support_agent, search_ranker):
    """The history below, committed (the prune commits batch by batch, as in production)."""
    reseed_reference_data()
    settings.FINOPS_USAGE_RETENTION_MONTHS = 25
    return build_history(support_agent, search_ranker)


def build_history(support_agent, search_ranker) -> tuple[Account, Account]:
    """Two and a half years of daily usage on an OpenAI account (support, search and unattributed lines, one model
    with no price) and gateway requests with latency on a Groq account, from before the cut-off to yesterday."""
    openai = Account.objects.create(
        name="openai-prod", provider=Provider.objects.get(slug="openai"), connector="usage_csv"
    )
    rows = ["day,model,input_tokens,output_tokens,cost,project,api_key,user,tags"]
    day = FIRST_DAY
    while day <= LAST_DAY:
        n = day.toordinal() % 7
        rows += [
            f"{day},gpt-5-mini,{1_000_000 + n},0,{10 + n}.25,support,key-support,ana,env=prod",
            f"{day},gpt-5,100000,{n},2.5,search,key-search,ben,env=dev",
            f"{day},gpt-4o,100000,0,1,other,key-other,,",
        ]
        if day.day == 12:
            rows.append(f"{day},my-private-model,300000,40000,,support,key-support,ana,env=prod")
        day += dt.timedelta(days=1)
    run = usage_file_import(account=openai, stream=io.BytesIO("\n".join(rows).encode()), file_name="history.csv")
    assert run.status == "succeeded", run.error
    groq = gateway("groq")
    for moment in (dt.datetime(2024, 7, 3, 9, tzinfo=dt.UTC), dt.datetime(2026, 10, 7, 15, tzinfo=dt.UTC)):
        import_log(
            groq,
            [
                record(
                    moment,
                    n,
                    provider="groq",
                    model="openai/gpt-oss-120b",
                    duration_ms=400 + 10 * n,
                    ttft_ms=150,
                    output=120,
                )
                for n in range(40)
            ],
        )
    AttributionRule.objects.create(workload=support_agent, priority=1, project="support")
    AttributionRule.objects.create(workload=search_ranker, priority=2, project="search")
    AttributionRule.objects.create(workload=support_agent, priority=3, account=groq)
    history_reattribute()
    return openai, groq


def rollups() -> dict:
    """Every row of every rollup, as values (ids aside)."""

    def rows(model):
        fields = [f.attname for f in model._meta.concrete_fields if f.attname != "id"]
        return sorted(tuple(str(v) for v in row) for row in model.objects.values_list(*fields))

    return {model.__name__: rows(model) for model in (DailySpend, MonthlySpend, DailyPerformance, MonthlyPerformance)}


SPANS = [  # Explore reads at most about two years at once
    {"start": FIRST_DAY.isoformat(), "end": "2025-06-01"},
    {"start": "2025-06-01", "end": (LAST_DAY + dt.timedelta(days=1)).isoformat()},
]


def what_people_see(client) -> dict:
    """The figures of Explore's CSVs, the spend API and the pages over the whole history, as they are served."""
    seen = {}
    for span in SPANS:
        for group_by in ("team", "workload", "model", "day", "provider"):
            response = client.get(reverse("explore"), {**span, "group_by": group_by, "csv": "1"})
            assert response.status_code == 200, response.content
            seen[f"explore {group_by} {span}"] = response.content
    whole = {"start": SPANS[0]["start"], "end": SPANS[-1]["end"]}
    for group_by in ("month", "team", "workload"):
        api = client.get(reverse("api-spend"), {**whole, "group_by": group_by})
        assert api.status_code == 200, api.content
        seen[f"api spend {group_by}"] = api.json()
    for name in ("overview", "team-list", "provider-list"):
        response = client.get(reverse(name), whole)
        assert response.status_code == 200
        seen[name] = re.sub(rb'(csrfmiddlewaretoken" value="|nonce=")[^"]*', rb"\\1", response.content)
    return seen


def lines_before(cutoff: dt.datetime) -> int:
    return UsageLine.objects.filter(period_start__lt=cutoff).count()


def test_the_cutoff_keeps_the_current_month_and_the_whole_months_before_it():
    assert retention_cutoff(now=NOW, months=25) == CUTOFF
    assert retention_cutoff(now=dt.datetime(2026, 1, 1, tzinfo=dt.UTC), months=1) == dt.datetime(
        2025, 12, 1, tzinfo=dt.UTC
    )
    assert retention_cutoff(now=dt.datetime(2026, 3, 31, 23, 59, tzinfo=dt.UTC), months=14) == dt.datetime(
        2025, 1, 1, tzinfo=dt.UTC
    )


def test_old_lines_are_pruned_in_batches_and_every_figure_stays_as_it_was(history, client_as, fiona):
    client = client_as(fiona)
    kept = UsageLine.objects.filter(period_start__gte=CUTOFF).count()
    old = lines_before(CUTOFF)
    assert old == 122 * 3 + 4 + 1 and kept > 2000  # 122 days, four 12ths with an unpriced line, one gateway hour
    before_rollups, before_seen = rollups(), what_people_see(client)
    assert any(row for row in before_rollups["DailyPerformance"])  # latency from before the cut-off is there

    result = usage_lines_prune(batch_size=97)

    assert (result.cutoff, result.deleted, result.skipped) == (CUTOFF, old, False)
    # Small batches, each its own transaction: a day (3–4 lines) never needs more than one batch of 97, so one
    # batch per day that has lines.
    assert result.batches == (CUTOFF.date() - FIRST_DAY).days  # the gateway's hour on 3 July 2024 shares a day
    assert lines_before(CUTOFF) == 0
    assert UsageLine.objects.filter(period_start__gte=CUTOFF).count() == kept
    assert rollups() == before_rollups
    assert what_people_see(client) == before_seen

    # Idempotent: the beat task and the command find nothing more to do, and nothing changes.
    assert prune_usage_lines.delay().get() == 0
    out = io.StringIO()
    call_command("prune_usage_lines", stdout=out)
    assert out.getvalue().strip() == "Pruned 0 usage lines starting before 2024-10-01 (0 batches)."
    assert rollups() == before_rollups
    assert what_people_see(client) == before_seen


@pytest.mark.parametrize("argument", ["--months=-1", "--months=x", "--batch-size=0"])
def test_the_command_refuses_bad_numbers(argument, db):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError):
        call_command("prune_usage_lines", argument)
