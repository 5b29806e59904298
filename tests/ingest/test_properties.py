"""Property tests (hypothesis) for idempotent API pulls (docs/architecture.md invariants 3 and 7).

An OpenAI organisation played by FakeProviderServer from a fixed in-test ledger: however a window is split into
overlapping, repeated, out-of-order pulls (and however each pull is chunked), the lines, the totals by day and the
rollup equal those of one clean pull of the whole span, and the ledger's own totals by day. Exports:
test_properties_files.py.

Every example starts from no usage: its writes are rolled back when it ends (property_helpers.example_undone).
"""

import base64
import datetime as dt
import functools
import itertools
import json
import random
from collections import Counter, defaultdict
from dataclasses import dataclass
from decimal import Decimal
from unittest import mock

import pytest
from django.db.models import Sum
from django.db.models.functions import TruncDate
from hypothesis import given
from hypothesis import strategies as st

from finops.models import Account, CostBasis, IngestRun, Provider, UsageLine
from finops.sources.services.accounts import account_set_credentials
from ingest import windows
from ingest.http import HttpClient
from ingest.services import account_sync
from tests.fakes.provider_server import FakeProviderServer, Reply
from tests.ingest.property_helpers import (
    PULL_SETTINGS,
    TOKEN_FIELDS,
    example_undone,
    reset_account,
    rollup_totals_by_day,
    totals_by_day,
)
from tests.rollup_check import assert_rollup_equals_raw

SECRET = "sk-admin-property-tests-0b7d1e"


# =====================================================================================================
# 1. A fake OpenAI organisation computed from a ledger: any pulls of the span equal one clean pull.
# =====================================================================================================

SPAN_START = dt.datetime(2026, 3, 2, tzinfo=dt.UTC)
SPAN_DAYS = 16
SPAN_END = SPAN_START + dt.timedelta(days=SPAN_DAYS)
UNBILLED_DAYS = 2  # the last days have usage but no cost lines yet: the pipeline estimates them
PAGE_BUCKETS = 3  # the fake serves at most this many daily buckets a page, whatever `limit` asks
DAY = 86_400
COSTS, COMPLETIONS, EMBEDDINGS = (
    "/v1/organization/costs",
    "/v1/organization/usage/completions",
    "/v1/organization/usage/embeddings",
)
PROJECTS = {"proj_support": ["key_sa", "key_sb"], "proj_search": ["key_sc"], None: [None]}  # None: Playground
CHAT_MODELS = ["gpt-4o-mini-2024-07-18", "gpt-4o-2024-08-06", "acme-custom-1"]  # the last has no catalog price
TIERS = [("default", False), ("priority", False), ("default", True)]  # (service_tier, batch)


@dataclass(frozen=True)
class Usage:
    day: int
    endpoint: str  # "completions" | "embeddings"
    project: str | None
    key: str | None
    model: str
    input: int  # all input, cached included, as OpenAI counts it
    cached: int
    output: int
    requests: int
    tier: str
    batch: bool


@dataclass(frozen=True)
class Cost:
    day: int
    project: str | None
    line_item: str
    amount: Decimal
    carried: bool  # a per-token line joined onto usage rows of its (day, project, model); else a line of its own


def _amount(rng: random.Random) -> Decimal:
    return Decimal(rng.randint(1, 90_000_000)).scaleb(-rng.choice([6, 8, 10]))


def build_ledger(seed: int = 20260302) -> tuple[list[Usage], list[Cost]]:
    rng = random.Random(seed)
    usage, costs = [], []
    for day in range(SPAN_DAYS):
        billed = day < SPAN_DAYS - UNBILLED_DAYS
        for project, keys in PROJECTS.items():
            for model in rng.sample(CHAT_MODELS, k=rng.randint(0, 2)):
                for key in keys:
                    for tier, batch in rng.sample(TIERS, k=rng.randint(1, 2)):
                        total = rng.randint(0, 3_000_000)
                        usage.append(
                            Usage(
                                day,
                                "completions",
                                project,
                                key,
                                model,
                                total,
                                rng.randint(0, total),
                                rng.randint(0, 900_000),
                                rng.randint(0, 2_000),
                                tier,
                                batch,
                            )
                        )
                if billed and rng.random() < 0.9:  # now and then a billed day leaves a model to be estimated
                    prefix = rng.choice(["", "", "priority | "])
                    for direction in ("input", "cached input", "output"):
                        costs.append(Cost(day, project, f"{prefix}{model}, {direction}", _amount(rng), True))
            if rng.random() < 0.5:
                usage.append(
                    Usage(
                        day,
                        "embeddings",
                        project,
                        keys[0],
                        "text-embedding-3-small",
                        rng.randint(1, 500_000),
                        0,
                        0,
                        rng.randint(1, 300),
                        "",
                        False,
                    )
                )
                if billed:
                    costs.append(Cost(day, project, "text-embedding-3-small, input", _amount(rng), True))
        if billed:  # billed lines no usage row carries: each becomes a zero-token line of its own
            for project, item in [
                ("proj_support", "web search tool calls"),
                (None, "Vector storage"),
                ("proj_search", "ft-gpt-4o-2024-08-06, input"),
                ("proj_search", "whisper-1, audio"),
            ]:
                if rng.random() < 0.6:
                    costs.append(Cost(day, project, item, _amount(rng), False))
    return usage, costs


LEDGER_USAGE, LEDGER_COSTS = build_ledger()
NUMBER = "@@number@@"  # marks an amount to be written as a bare JSON number, digit for digit


def _json(body: dict) -> str:
    return json.dumps(body).replace(f'"{NUMBER}', "").replace(f'{NUMBER}"', "")


def _usage_result(entry: Usage) -> dict:
    common = {
        "num_model_requests": entry.requests,
        "project_id": entry.project,
        "user_id": None,
        "api_key_id": entry.key,
        "model": entry.model,
    }
    if entry.endpoint == "embeddings":
        return {"object": "organization.usage.embeddings.result", "input_tokens": entry.input, **common}
    return {
        "object": "organization.usage.completions.result",
        "input_tokens": entry.input,
        "input_cached_tokens": entry.cached,
        "output_tokens": entry.output,
        "input_audio_tokens": 0,
        "batch": entry.batch,
        "service_tier": entry.tier,
        "project_name": "ignored",
        **common,
    }


def _cost_result(index: int, entry: Cost) -> dict:
    # OpenAI sends amounts as JSON numbers or as long strings: alternate, both must read exactly.
    value = str(entry.amount) if index % 2 else f"{NUMBER}{entry.amount}{NUMBER}"
    return {
        "object": "organization.costs.result",
        "amount": {"value": value, "currency": "usd"},
        "line_item": entry.line_item,
        "project_id": entry.project,
        "organization_id": "org-props",
    }


def _results_by_day() -> dict[str, dict[int, list[dict]]]:
    served: dict[str, dict[int, list[dict]]] = {
        "costs": defaultdict(list),
        "completions": defaultdict(list),
        "embeddings": defaultdict(list),
    }
    for entry in LEDGER_USAGE:
        served[entry.endpoint][entry.day].append(_usage_result(entry))
    for index, entry in enumerate(LEDGER_COSTS):
        served["costs"][entry.day].append(_cost_result(index, entry))
    return served


def ledger_route(name: str, results: dict[int, list[dict]]):
    """Daily buckets from start_time to end_time (empty ones included), PAGE_BUCKETS a page, by an opaque cursor."""

    def serve(query: dict) -> Reply:
        try:
            start, end = int(query["start_time"][0]), int(query["end_time"][0])
            limit = int(query["limit"][0])
        except (KeyError, ValueError):
            return Reply(400, {"error": {"message": "start_time, end_time and limit are required"}})
        if query.get("bucket_width") != ["1d"] or end <= start or not 1 <= limit <= 180:
            return Reply(400, {"error": {"message": f"bad query {query}"}})
        first = start
        if "page" in query:
            cursor = base64.urlsafe_b64decode(query["page"][0].encode()).decode().split(":")
            if cursor[:3] != [name, str(start), str(end)]:  # a cursor is only good for the query that made it
                return Reply(400, {"error": {"message": f"cursor {query['page'][0]} is not for this query"}})
            first = int(cursor[3])
        starts = list(range(first, end, DAY))[: min(limit, PAGE_BUCKETS)]
        data = []
        for bucket_start in starts:
            day, offset = divmod(bucket_start - int(SPAN_START.timestamp()), DAY)
            data.append(
                {
                    "object": "bucket",
                    "start_time": bucket_start,
                    "end_time": bucket_start + DAY,
                    "results": [] if offset else results.get(day, []),
                }
            )
        following = starts[-1] + DAY if starts else end
        has_more = following < end
        cursor = base64.urlsafe_b64encode(f"{name}:{start}:{end}:{following}".encode()).decode() if has_more else None
        return Reply(200, _json({"object": "page", "data": data, "has_more": has_more, "next_page": cursor}))

    return serve


@pytest.fixture
def fake_org():
    served = _results_by_day()
    with FakeProviderServer() as server:
        server.route(COSTS, ledger_route("costs", served["costs"]))
        server.route(COMPLETIONS, ledger_route("completions", served["completions"]))
        server.route(EMBEDDINGS, ledger_route("embeddings", served["embeddings"]))
        yield server


@pytest.fixture
def api_account(db, fake_org):
    account = Account.objects.create(
        name="openai-admin",
        provider=Provider.objects.get(slug="openai"),
        connector="openai_api",
        base_url=fake_org.url + "/v1",
    )
    account_set_credentials(account=account, secret=SECRET)
    return account


def pull(account: Account, first_day: int, last_day: int, *, chunk_days: int = windows.CHUNK_DAYS) -> None:
    """account_sync of [first_day, last_day) of the span, cut into chunks of `chunk_days`."""
    chunked = functools.partial(windows.chunks, days=chunk_days)
    with mock.patch("ingest.services.chunks", chunked):
        runs = account_sync(
            account=account,
            start=SPAN_START + dt.timedelta(days=first_day),
            end=SPAN_START + dt.timedelta(days=last_day),
            client=HttpClient(timeout=5, max_attempts=1),
        )
    assert len(runs) == len(
        windows.chunks(SPAN_START, SPAN_START + dt.timedelta(days=last_day - first_day), chunk_days)
    )
    for run in runs:
        assert run.status == IngestRun.Status.SUCCEEDED, run.error


def lines_of(account: Account) -> Counter:
    """Every line as the values a report can see (ids and runs aside)."""
    fields = (
        "period_start",
        "period_end",
        "model",
        "model_raw",
        "service_tier",
        "project_ref",
        "api_key_ref",
        "tag_set__tags",
        *TOKEN_FIELDS,
        "cost",
        "currency",
        "reporting_cost",
        "cost_basis",
    )
    return Counter(
        tuple(json.dumps(v, sort_keys=True) if isinstance(v, dict) else v for v in row)
        for row in UsageLine.objects.filter(account=account).values_list(*fields)
    )


def ledger_by_day() -> dict[dt.date, dict]:
    """What the ledger itself says of each day: tokens by class, requests, billed money, lines to expect."""
    days: dict[dt.date, dict] = defaultdict(lambda: Counter())
    for entry in LEDGER_USAGE:
        day = (SPAN_START + dt.timedelta(days=entry.day)).date()
        days[day].update(
            input_tokens=entry.input - entry.cached,
            cached_input_tokens=entry.cached,
            output_tokens=entry.output,
            requests=entry.requests,
            lines=1,
        )
    for entry in LEDGER_COSTS:
        day = (SPAN_START + dt.timedelta(days=entry.day)).date()
        days[day]["billed"] += entry.amount
        days[day]["lines"] += 0 if entry.carried else 1
    return dict(days)


def billed_by_day(account: Account) -> dict[dt.date, Decimal]:
    rows = (
        UsageLine.objects.filter(account=account, cost_basis=CostBasis.BILLED)
        .annotate(day=TruncDate("period_start"))
        .values("day")
        .annotate(total=Sum("cost"))
        .order_by()
    )
    return {row["day"]: row["total"] for row in rows}


@pytest.fixture
def clean_pull(api_account):
    """One pull of the whole span, as it stands: the reference every split is compared with."""
    pull(api_account, 0, SPAN_DAYS)
    reference = {
        "lines": lines_of(api_account),
        "totals": totals_by_day(api_account),
        "rollup": rollup_totals_by_day(api_account),
        "billed": billed_by_day(api_account),
    }
    reset_account(api_account)
    return reference


def test_one_clean_pull_of_the_fake_organisation_equals_the_ledger_day_by_day(api_account, clean_pull, fake_org):
    expected = ledger_by_day()
    totals = clean_pull["totals"]
    assert set(totals) == set(expected) == {(SPAN_START + dt.timedelta(days=d)).date() for d in range(SPAN_DAYS)}
    for day, ledger in expected.items():
        got = totals[day]
        assert (got["input_tokens"], got["cached_input_tokens"], got["cache_write_tokens"], got["output_tokens"]) == (
            ledger["input_tokens"],
            ledger["cached_input_tokens"],
            0,
            ledger["output_tokens"],
        ), day
        assert (got["requests"], got["lines"]) == (ledger["requests"], ledger["lines"]), day
        assert clean_pull["billed"].get(day, Decimal(0)) == ledger["billed"], day  # every billed amount, once
    assert clean_pull["rollup"] == totals
    unbilled = {(SPAN_START + dt.timedelta(days=d)).date() for d in range(SPAN_DAYS - UNBILLED_DAYS, SPAN_DAYS)}
    assert unbilled.isdisjoint(clean_pull["billed"])
    bases = {line[-1] for line in clean_pull["lines"]}
    assert bases == {CostBasis.BILLED, CostBasis.ESTIMATED, CostBasis.UNPRICED}  # the ledger exercises all three
    # The fake really paged: several pages per endpoint, each asked for with the cursor of the one before.
    assert sum(1 for r in fake_org.requests if r.path == COSTS and "page" in r.query) >= SPAN_DAYS // PAGE_BUCKETS
    assert all(r.headers["Authorization"] == f"Bearer {SECRET}" for r in fake_org.requests)


@st.composite
def pull_plans(draw):
    """Pulls that together cover the span (a random partition), extra overlapping ones and repeats, in any order."""
    cuts = sorted(draw(st.sets(st.integers(1, SPAN_DAYS - 1), max_size=4)))
    bounds = [0, *cuts, SPAN_DAYS]
    cover = list(itertools.pairwise(bounds))
    extra = draw(
        st.lists(
            st.integers(0, SPAN_DAYS - 1).flatmap(lambda a: st.tuples(st.just(a), st.integers(a + 1, SPAN_DAYS))),
            max_size=3,
        )
    )
    repeats = draw(st.lists(st.sampled_from(cover + extra), max_size=2))
    pulls = draw(st.permutations(cover + extra + repeats))
    chunk_days = draw(st.sampled_from([3, 7, windows.CHUNK_DAYS]))
    return pulls, chunk_days


@pytest.mark.slow  # left out of make test-fast (tests/conftest.py says why)
@PULL_SETTINGS
@given(plan=pull_plans())
def test_any_split_of_the_span_into_overlapping_repeated_out_of_order_pulls_totals_what_one_clean_pull_does(
    api_account, clean_pull, plan
):
    pulls, chunk_days = plan
    with example_undone():
        for first_day, last_day in pulls:
            pull(api_account, first_day, last_day, chunk_days=chunk_days)

        assert totals_by_day(api_account) == clean_pull["totals"]
        assert lines_of(api_account) == clean_pull["lines"]
        assert billed_by_day(api_account) == clean_pull["billed"]
        assert rollup_totals_by_day(api_account) == clean_pull["totals"]
        assert_rollup_equals_raw(account=api_account, allow_empty=True)
