"""Property tests (hypothesis) for idempotent ingestion and restatements (DESIGN.md invariants 3 and 7).

- An OpenAI organisation played by FakeProviderServer from a fixed in-test ledger: however a window is split into
  overlapping, repeated, out-of-order pulls (and however each pull is chunked), the lines, the totals by day and the
  rollup equal those of one clean pull of the whole span, and the ledger's own totals by day.
- FOCUS exports: a restated billing month replaces the month (late-billed rows charged in the month before
  included); a file for another month adds; importing any file again changes nothing.
- Usage CSVs imported in any order with repeats: each day's totals are those of the last file covering that day.

Every example starts from no usage: the `db` fixture's transaction is shared by all examples of a test.
"""

import base64
import csv
import datetime as dt
import functools
import io
import itertools
import json
import random
from collections import Counter, defaultdict
from dataclasses import dataclass
from decimal import Decimal
from unittest import mock

import pytest
from django.db.models import Count, Q, Sum
from django.db.models.functions import TruncDate
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from finops.modelids import normalise_model
from finops.models import Account, CostBasis, DailySpend, IngestRun, Provider, UsageLine
from finops.services.accounts import account_set_credentials
from finops.services.prices import PriceBook, Tokens, cost_from_price
from ingest import windows
from tests.rollup_check import assert_rollup_equals_raw
from ingest.http import HttpClient
from ingest.services import account_sync, usage_file_import
from tests.fakes.provider_server import FakeProviderServer, Reply

SECRET = "sk-admin-property-tests-0b7d1e"
TOKEN_FIELDS = ("input_tokens", "cached_input_tokens", "cache_write_tokens", "output_tokens", "requests")
# A pull plan costs ~0.3 s (dozens of HTTP pages, several writes); a file import ~20 ms.
PULL_SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
FILE_SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _reset(account: Account) -> None:
    DailySpend.objects.filter(account=account).delete()
    UsageLine.objects.filter(account=account).delete()
    IngestRun.objects.filter(account=account).delete()


def totals_by_day(account: Account) -> dict:
    """Per UTC day of the raw lines: Σ cost, Σ reporting cost, Σ each token class and the number of lines."""
    rows = (
        UsageLine.objects.filter(account=account)
        .annotate(day=TruncDate("period_start"))
        .values("day")
        .annotate(
            cost=Sum("cost"), reporting_cost=Sum("reporting_cost"), **{f: Sum(f) for f in TOKEN_FIELDS}, lines=Count("id")
        )
        .order_by("day")
    )
    return {row.pop("day"): row for row in rows}


def rollup_totals_by_day(account: Account) -> dict:
    rows = (
        DailySpend.objects.filter(account=account)
        .values("day")
        .annotate(
            cost=Sum("cost"), reporting_cost=Sum("reporting_cost"), **{f: Sum(f) for f in TOKEN_FIELDS},
            lines=Sum("line_count"),
        )
        .order_by("day")
    )
    return {row.pop("day"): row for row in rows}


# =====================================================================================================
# 1. A fake OpenAI organisation computed from a ledger: any pulls of the span equal one clean pull.
# =====================================================================================================

SPAN_START = dt.datetime(2026, 3, 2, tzinfo=dt.UTC)
SPAN_DAYS = 16
SPAN_END = SPAN_START + dt.timedelta(days=SPAN_DAYS)
UNBILLED_DAYS = 2  # the last days have usage but no cost lines yet: the pipeline estimates them
PAGE_BUCKETS = 3  # the fake serves at most this many daily buckets a page, whatever `limit` asks
DAY = 86_400
COSTS, COMPLETIONS, EMBEDDINGS = "/v1/organization/costs", "/v1/organization/usage/completions", "/v1/organization/usage/embeddings"
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
                        usage.append(Usage(
                            day, "completions", project, key, model, total, rng.randint(0, total),
                            rng.randint(0, 900_000), rng.randint(0, 2_000), tier, batch,
                        ))
                if billed and rng.random() < 0.9:  # now and then a billed day leaves a model to be estimated
                    prefix = rng.choice(["", "", "priority | "])
                    for direction in ("input", "cached input", "output"):
                        costs.append(Cost(day, project, f"{prefix}{model}, {direction}", _amount(rng), True))
            if rng.random() < 0.5:
                usage.append(Usage(
                    day, "embeddings", project, keys[0], "text-embedding-3-small", rng.randint(1, 500_000), 0, 0,
                    rng.randint(1, 300), "", False,
                ))
                if billed:
                    costs.append(Cost(day, project, "text-embedding-3-small, input", _amount(rng), True))
        if billed:  # billed lines no usage row carries: each becomes a zero-token line of its own
            for project, item in [
                ("proj_support", "web search tool calls"), (None, "Vector storage"),
                ("proj_search", "ft-gpt-4o-2024-08-06, input"), ("proj_search", "whisper-1, audio"),
            ]:
                if rng.random() < 0.6:
                    costs.append(Cost(day, project, item, _amount(rng), False))
    return usage, costs


LEDGER_USAGE, LEDGER_COSTS = build_ledger()
NUMBER = "@@number@@"  # marks an amount to be written as a bare JSON number, digit for digit


def _json(body: dict) -> str:
    return json.dumps(body).replace(f'"{NUMBER}', "").replace(f'{NUMBER}"', "")


def _usage_result(entry: Usage) -> dict:
    common = {"num_model_requests": entry.requests, "project_id": entry.project, "user_id": None,
              "api_key_id": entry.key, "model": entry.model}
    if entry.endpoint == "embeddings":
        return {"object": "organization.usage.embeddings.result", "input_tokens": entry.input, **common}
    return {
        "object": "organization.usage.completions.result", "input_tokens": entry.input,
        "input_cached_tokens": entry.cached, "output_tokens": entry.output, "input_audio_tokens": 0,
        "batch": entry.batch, "service_tier": entry.tier, "project_name": "ignored", **common,
    }


def _cost_result(index: int, entry: Cost) -> dict:
    # OpenAI sends amounts as JSON numbers or as long strings: alternate, both must read exactly.
    value = str(entry.amount) if index % 2 else f"{NUMBER}{entry.amount}{NUMBER}"
    return {"object": "organization.costs.result", "amount": {"value": value, "currency": "usd"},
            "line_item": entry.line_item, "project_id": entry.project, "organization_id": "org-props"}


def _results_by_day() -> dict[str, dict[int, list[dict]]]:
    served: dict[str, dict[int, list[dict]]] = {"costs": defaultdict(list), "completions": defaultdict(list),
                                                "embeddings": defaultdict(list)}
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
            data.append({"object": "bucket", "start_time": bucket_start, "end_time": bucket_start + DAY,
                         "results": [] if offset else results.get(day, [])})
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
        name="openai-admin", provider=Provider.objects.get(slug="openai"), connector="openai_api",
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
    assert len(runs) == len(windows.chunks(SPAN_START, SPAN_START + dt.timedelta(days=last_day - first_day), chunk_days))
    for run in runs:
        assert run.status == IngestRun.Status.SUCCEEDED, run.error


def lines_of(account: Account) -> Counter:
    """Every line as the values a report can see (ids and runs aside)."""
    fields = ("period_start", "period_end", "model", "model_raw", "service_tier", "project_ref",
              "api_key_ref", "tag_set__tags", *TOKEN_FIELDS, "cost", "currency", "reporting_cost", "cost_basis")
    return Counter(
        tuple(json.dumps(v, sort_keys=True) if isinstance(v, dict) else v for v in row)
        for row in UsageLine.objects.filter(account=account).values_list(*fields)
    )


def ledger_by_day() -> dict[dt.date, dict]:
    """What the ledger itself says of each day: tokens by class, requests, billed money, lines to expect."""
    days: dict[dt.date, dict] = defaultdict(lambda: Counter())
    for entry in LEDGER_USAGE:
        day = (SPAN_START + dt.timedelta(days=entry.day)).date()
        days[day].update(input_tokens=entry.input - entry.cached, cached_input_tokens=entry.cached,
                         output_tokens=entry.output, requests=entry.requests, lines=1)
    for entry in LEDGER_COSTS:
        day = (SPAN_START + dt.timedelta(days=entry.day)).date()
        days[day]["billed"] += entry.amount
        days[day]["lines"] += 0 if entry.carried else 1
    return dict(days)


def billed_by_day(account: Account) -> dict[dt.date, Decimal]:
    rows = (
        UsageLine.objects.filter(account=account, cost_basis=CostBasis.BILLED)
        .annotate(day=TruncDate("period_start")).values("day").annotate(total=Sum("cost")).order_by()
    )
    return {row["day"]: row["total"] for row in rows}


@pytest.fixture
def clean_pull(api_account):
    """One pull of the whole span, as it stands: the reference every split is compared with."""
    pull(api_account, 0, SPAN_DAYS)
    reference = {
        "lines": lines_of(api_account), "totals": totals_by_day(api_account),
        "rollup": rollup_totals_by_day(api_account), "billed": billed_by_day(api_account),
    }
    _reset(api_account)
    return reference


def test_one_clean_pull_of_the_fake_organisation_equals_the_ledger_day_by_day(api_account, clean_pull, fake_org):
    expected = ledger_by_day()
    totals = clean_pull["totals"]
    assert set(totals) == set(expected) == {(SPAN_START + dt.timedelta(days=d)).date() for d in range(SPAN_DAYS)}
    for day, ledger in expected.items():
        got = totals[day]
        assert (got["input_tokens"], got["cached_input_tokens"], got["cache_write_tokens"], got["output_tokens"]) == (
            ledger["input_tokens"], ledger["cached_input_tokens"], 0, ledger["output_tokens"]
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
    extra = draw(st.lists(
        st.integers(0, SPAN_DAYS - 1).flatmap(lambda a: st.tuples(st.just(a), st.integers(a + 1, SPAN_DAYS))),
        max_size=3,
    ))
    repeats = draw(st.lists(st.sampled_from(cover + extra), max_size=2))
    pulls = draw(st.permutations(cover + extra + repeats))
    chunk_days = draw(st.sampled_from([3, 7, windows.CHUNK_DAYS]))
    return pulls, chunk_days


@PULL_SETTINGS
@given(plan=pull_plans())
def test_any_split_of_the_span_into_overlapping_repeated_out_of_order_pulls_totals_what_one_clean_pull_does(
    api_account, clean_pull, plan
):
    pulls, chunk_days = plan
    _reset(api_account)

    for first_day, last_day in pulls:
        pull(api_account, first_day, last_day, chunk_days=chunk_days)

    assert totals_by_day(api_account) == clean_pull["totals"]
    assert lines_of(api_account) == clean_pull["lines"]
    assert billed_by_day(api_account) == clean_pull["billed"]
    assert rollup_totals_by_day(api_account) == clean_pull["totals"]
    assert_rollup_equals_raw(account=api_account, allow_empty=True)


# =====================================================================================================
# 2. FOCUS exports: a restated month replaces the month; another month adds.
# =====================================================================================================

JUNE = dt.date(2025, 6, 1)
FOCUS_HEADER = [
    "BilledCost", "BillingCurrency", "BillingPeriodStart", "BillingPeriodEnd", "ChargeCategory", "ChargePeriodStart",
    "ChargePeriodEnd", "ConsumedQuantity", "ConsumedUnit", "ServiceProviderName", "SkuPriceDetails", "SubAccountId",
]
FOCUS_MODELS = ["gpt-4o", "gpt-4o-mini"]


def month_after(month: dt.date) -> dt.date:
    return (month + dt.timedelta(days=32)).replace(day=1)


def month_before(month: dt.date) -> dt.date:
    return (month - dt.timedelta(days=1)).replace(day=1)


def _midnight(day: dt.date) -> str:
    return f"{day.isoformat()}T00:00:00Z"


@st.composite
def focus_rows(draw, month: dt.date, late: bool | None = None):
    """One FOCUS row billed in `month`; `late`: charged in the last days of the month before (None: either)."""
    late = draw(st.booleans()) if late is None else late
    if late:
        day = month - dt.timedelta(days=draw(st.integers(1, 3)))
    else:
        day = month + dt.timedelta(days=draw(st.integers(0, (month_after(month) - month).days - 1)))
    category = "Usage" if late else draw(st.sampled_from(["Usage", "Usage", "Usage", "Tax", "Credit"]))
    cost = draw(st.decimals(min_value=0, max_value=500, places=6, allow_nan=False, allow_infinity=False))
    return {
        "month": month, "day": day, "category": category,
        "cost": -cost if category == "Credit" else cost,
        "model": draw(st.sampled_from(FOCUS_MODELS)) if category == "Usage" else "",
        "direction": draw(st.sampled_from(["Input", "Output"])),
        "tokens": draw(st.integers(0, 5_000_000)) if category == "Usage" else 0,
        "project": draw(st.sampled_from(["acct-support", "acct-search"])),
    }


def focus_csv(rows: list[dict]) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(FOCUS_HEADER)
    for r in rows:
        usage = r["category"] == "Usage"
        details = {"ModelId": r["model"], "TokenDirection": r["direction"]} if usage else {}
        writer.writerow([
            str(r["cost"]), "USD", _midnight(r["month"]), _midnight(month_after(r["month"])), r["category"],
            _midnight(r["day"]), _midnight(r["day"] + dt.timedelta(days=1)), r["tokens"] if usage else "",
            "Tokens" if usage else "", "OpenAI", json.dumps(details) if details else "", r["project"],
        ])
    return out.getvalue().encode()


@st.composite
def restated_months(draw):
    """A June export; its restatement (rows removed, amounts changed, rows added, at least one billed late);
    and an export of the month before or after (which may have late-billed rows of its own)."""
    original = draw(st.lists(focus_rows(JUNE), min_size=1, max_size=6))
    restated = []
    for row in original:
        if draw(st.booleans()):  # kept…
            new_cost = draw(st.none() | st.decimals(min_value=0, max_value=500, places=6, allow_nan=False))
            if new_cost is not None:  # …with a different amount
                new_cost = -new_cost if row["category"] == "Credit" else new_cost
            restated.append(row if new_cost is None else {**row, "cost": new_cost})
    restated += draw(st.lists(focus_rows(JUNE), max_size=3))
    restated.insert(draw(st.integers(0, len(restated))), draw(focus_rows(JUNE, late=True)))
    other_month = draw(st.sampled_from([month_before(JUNE), month_after(JUNE)]))
    other = draw(st.lists(focus_rows(other_month), min_size=1, max_size=5))
    return original, restated, other


def expected_focus_totals(*files: list[dict]) -> dict:
    days: dict[dt.date, dict] = {}
    for rows in files:
        for r in rows:
            t = days.setdefault(r["day"], {"cost": Decimal(0), "input_tokens": 0, "output_tokens": 0, "lines": 0})
            t["cost"] += r["cost"]
            t["input_tokens" if r["direction"] == "Input" else "output_tokens"] += r["tokens"]
            t["lines"] += 1
    return days


def focus_totals(account: Account) -> dict:
    return {
        day: {"cost": t["cost"], "input_tokens": t["input_tokens"], "output_tokens": t["output_tokens"],
              "lines": t["lines"]}
        for day, t in totals_by_day(account).items()
    }


@pytest.fixture
def focus_account(db):
    return Account.objects.create(name="openai-focus", provider=Provider.objects.get(slug="openai"), connector="focus_file")


def import_focus(account: Account, rows: list[dict], name: str) -> None:
    run = usage_file_import(account=account, stream=io.BytesIO(focus_csv(rows)), file_name=name)
    assert run.status == IngestRun.Status.SUCCEEDED, run.error
    assert_rollup_equals_raw(account=account, allow_empty=True)  # after every import: late lines fall on days outside the month's window


@FILE_SETTINGS
@given(months=restated_months())
def test_a_restated_focus_month_replaces_the_month_and_a_file_for_another_month_adds(focus_account, months):
    original, restated, other = months
    _reset(focus_account)

    import_focus(focus_account, original, "focus-2025-06.csv")
    assert focus_totals(focus_account) == expected_focus_totals(original)

    import_focus(focus_account, restated, "focus-2025-06-restated.csv")
    assert focus_totals(focus_account) == expected_focus_totals(restated)  # nothing of the first export is left
    late = [r for r in restated if r["day"] < JUNE]
    assert late and UsageLine.objects.filter(
        account=focus_account, period_start__lt=dt.datetime.combine(JUNE, dt.time(), tzinfo=dt.UTC),
        billing_period_start=dt.datetime.combine(JUNE, dt.time(), tzinfo=dt.UTC),
    ).count() == len(late)

    import_focus(focus_account, other, "focus-other-month.csv")
    both = expected_focus_totals(restated, other)
    assert focus_totals(focus_account) == both

    # Importing either export again changes nothing: each replaces its own billing month and only that.
    import_focus(focus_account, restated, "focus-2025-06-restated.csv")
    assert focus_totals(focus_account) == both
    import_focus(focus_account, other, "focus-other-month.csv")
    assert focus_totals(focus_account) == both
    assert rollup_totals_by_day(focus_account) == totals_by_day(focus_account)


# =====================================================================================================
# 3. Usage CSVs in any order with repeats: each day is what the last file covering it says.
# =====================================================================================================

CSV_DAYS = [dt.date(2025, 1, 13) + dt.timedelta(days=n) for n in range(5)]
CSV_MODELS = ["gpt-4o-2024-08-06", "gpt-4o-mini", "mystery-model-9"]  # the last is in no catalog: unpriced
CSV_HEADER = "day,provider,model,input_tokens,cached_input_tokens,cache_write_tokens,output_tokens,requests,cost,currency,project"


@st.composite
def csv_rows(draw):
    uncached, cached, cache_write = (draw(st.integers(0, 3_000_000)) for _ in range(3))
    return {
        "day": draw(st.sampled_from(CSV_DAYS)),
        "model": draw(st.sampled_from(CSV_MODELS)),
        "uncached": uncached, "cached": cached, "cache_write": cache_write,
        "output": draw(st.integers(0, 1_000_000)),
        "requests": draw(st.integers(0, 500)),
        "cost": draw(st.none() | st.decimals(min_value=0, max_value=1000, places=8, allow_nan=False)),
        "project": draw(st.sampled_from(["", "proj_a", "proj_b"])),
    }


def usage_csv(rows: list[dict]) -> bytes:
    lines = [CSV_HEADER]
    for r in rows:
        lines.append(",".join(str(v) for v in [
            r["day"].isoformat(), "openai", r["model"], r["uncached"] + r["cached"] + r["cache_write"], r["cached"],
            r["cache_write"], r["output"], r["requests"], "" if r["cost"] is None else r["cost"], "USD", r["project"],
        ]))
    return ("\n".join(lines) + "\n").encode()


def expected_reporting_cost(row: dict, book: PriceBook) -> Decimal | None:
    if row["cost"] is not None:
        return row["cost"]
    price = book.price_on(normalise_model(row["model"]), row["day"])
    if price is None:
        return None
    return cost_from_price(price, Tokens(row["uncached"], row["cached"], row["cache_write"], row["output"]))


@pytest.fixture
def csv_account(db):
    return Account.objects.create(name="openai-csv", provider=Provider.objects.get(slug="openai"), connector="usage_csv")


@FILE_SETTINGS
@given(
    files=st.lists(st.lists(csv_rows(), max_size=6), min_size=1, max_size=4),
    order=st.lists(st.integers(0, 3), min_size=1, max_size=8),
)
def test_usage_csvs_imported_in_any_order_with_repeats_leave_each_day_as_the_last_file_covering_it_says(
    csv_account, files, order
):
    _reset(csv_account)
    book = PriceBook.for_provider(csv_account.provider)

    latest: dict[dt.date, list[dict]] = {}
    for position in order:
        rows = files[position % len(files)]
        run = usage_file_import(account=csv_account, stream=io.BytesIO(usage_csv(rows)), file_name=f"f{position}.csv")
        assert run.status == IngestRun.Status.SUCCEEDED, run.error
        for day in {r["day"] for r in rows}:  # a file replaces exactly the days it has rows for
            latest[day] = [r for r in rows if r["day"] == day]

    expected = {}
    for day, rows in latest.items():
        costs = [c for c in (expected_reporting_cost(r, book) for r in rows) if c is not None]
        expected[day] = {
            "cost": sum(costs, Decimal(0)) if costs else None,
            "reporting_cost": sum(costs, Decimal(0)) if costs else None,
            "input_tokens": sum(r["uncached"] for r in rows),
            "cached_input_tokens": sum(r["cached"] for r in rows),
            "cache_write_tokens": sum(r["cache_write"] for r in rows),
            "output_tokens": sum(r["output"] for r in rows),
            "requests": sum(r["requests"] for r in rows),
            "lines": len(rows),
        }
    assert totals_by_day(csv_account) == expected
    assert rollup_totals_by_day(csv_account) == expected
    assert not UsageLine.objects.filter(account=csv_account).filter(
        Q(cost_basis=CostBasis.UNPRICED) & ~Q(model="mystery-model-9")
    ).exists()
    assert_rollup_equals_raw(account=csv_account, allow_empty=True)
