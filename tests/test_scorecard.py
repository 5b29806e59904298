"""The quarterly scorecard (issue 12): per workload and UTC calendar quarter, spend, tokens, $/M tokens, cost per
outcome, error rate, p99 against the SLA, output speed and quality, with the change from the previous quarter —
the page, its CSV and XLSX, and the API, all from the same figures, members seeing only their teams.

The data goes through the real write paths: a usage CSV import for spend, a gateway-log import for latency,
outcomes_record for outcomes; eval scores are rows (the evals service is not there yet). Today is frozen at
Sunday 22 November 2026, so Q4 2026 is "to date" (Oct 1 – Nov 21, 52 complete days) and is compared with the
same 52 days of Q3 (Jul 1 – Aug 21).

Hand-computed figures:
- Support agent: usage $100 on Jul 10 (1M tokens); $150 on Oct 5 and $50 on Nov 2 (1M tokens each) → Q4 $200
  (+100 %), $/M $100 both quarters (0 %). Outcomes: 50 on Jul 10 ($2.00 each), 100 + 300 in Q4 ($0.50, −75 %).
  Gateway (an unpriced in-house model, 600 tokens a request): Jul 15, 100 requests of 1 s, 2 failed → 2 %,
  p99 1 s, 125 tok/s; Sep 30 23:59 one request (Q3 only when Q3 is read whole); Oct 1 00:00 one of 1.5 s and
  Nov 3 95 of 1 s and 4 of 5 s, one failed → 1 % (−1.00 pt), p99 5 s (+4,000 ms) over a 4 s SLA: fails, 4 % over.
- Search ranker: $30 on Oct 5, no outcomes (cost per outcome "—"), nothing measured.
- Ticket router: only an unpriced fine-tune: spend "—" with its tokens flagged.
"""

import csv
import datetime as dt
import io
import json
import re
from decimal import Decimal
from types import SimpleNamespace

import pytest
import time_machine
from django.urls import reverse
from openpyxl import load_workbook

from finops.models import Account, AttributionRule, EvalScore, Provider, User, Workload
from finops.performance.selectors import scorecard as selectors
from finops.performance.services.outcomes import outcomes_record
from finops.performance.tables.scorecard import SCORECARD
from finops.reports.tables import csv_header
from finops.spend.services.attribution import history_reattribute
from ingest.services import usage_file_import
from tests.conftest import (
    make_openai_account,
    make_search_ranker,
    make_search_team,
    make_support_agent,
    make_support_team,
    make_user,
)
from tests.data_once import built_once, world_rows

TODAY = dt.date(2026, 11, 22)
GATEWAY_MODEL = "acme-llama-ft"  # an in-house model with no price: its tokens are counted, unpriced


NOW = dt.datetime(2026, 11, 22, 12, tzinfo=dt.UTC)


@pytest.fixture(autouse=True)
def _frozen(time_machine):
    time_machine.move_to(NOW)


def _groq_account() -> Account:
    return Account.objects.create(name="gateway", provider=Provider.objects.get(slug="groq"), connector="gateway_log")


def _csv_import(account, lines: list[str]):
    text = "\n".join(["day,model,input_tokens,output_tokens,cost,project", *lines])
    run = usage_file_import(account=account, stream=io.BytesIO(text.encode()), file_name="u.csv")
    assert run.status == "succeeded", run.error


def _request(at: dt.datetime, ms: int, *, failed: bool = False) -> dict:
    return {
        "request_id": f"r-{at.timestamp()}-{ms}-{failed}",
        "startTime": at.isoformat(),
        "endTime": (at + dt.timedelta(milliseconds=ms)).isoformat(),
        "completionStartTime": (at + dt.timedelta(milliseconds=200)).isoformat(),
        "model": GATEWAY_MODEL,
        "custom_llm_provider": "groq",
        "prompt_tokens": 500,
        "completion_tokens": 100,
        "api_key": "a" * 64,
        "team_id": "support",
        "metadata": {},
        "request_tags": [],
        "status": "failure" if failed else "success",
    }


def _gateway_import(account, records: list[dict]):
    run = usage_file_import(
        account=account, stream=io.BytesIO(json.dumps(records).encode()), file_name="spend_logs.json"
    )
    assert run.status == "succeeded", run.error


def _at(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text).replace(tzinfo=dt.UTC)


def _build_data(ada, openai_account, groq, support_agent, search_ranker, router):
    _csv_import(
        openai_account,
        [
            "2026-07-10,gpt-5-mini,1000000,0,100,support",
            "2026-10-05,gpt-5-mini,1000000,0,150,support",
            "2026-11-02,gpt-5-mini,1000000,0,50,support",
            "2026-10-05,gpt-5,2000000,0,30,search",
            "2026-10-05,acme-router-ft-8b,3000000,0,,router",
        ],
    )
    july = [_request(_at("2026-07-15T10:00:00") + dt.timedelta(seconds=n), 1000, failed=n < 2) for n in range(100)]
    boundary = [_request(_at("2026-09-30T23:59:00"), 2000), _request(_at("2026-10-01T00:00:00"), 1500)]
    november = [
        _request(_at("2026-11-03T09:00:00") + dt.timedelta(seconds=n), 5000 if n < 4 else 1000, failed=n == 10)
        for n in range(99)
    ]
    _gateway_import(groq, july + boundary + november)
    for priority, (workload, project) in enumerate(
        ((support_agent, "support"), (search_ranker, "search"), (router, "router")), 1
    ):
        AttributionRule.objects.create(workload=workload, priority=priority, project=project)
    AttributionRule.objects.create(workload=support_agent, priority=10, account=groq)
    history_reattribute()
    outcomes_record(
        by=ada,
        rows=[
            {"workload": "support-agent", "day": "2026-07-10", "count": 50},
            {"workload": "support-agent", "day": "2026-10-05", "count": 100},
            {"workload": "support-agent", "day": "2026-11-02", "count": 300},
        ],
    )
    groq_id, openai_id = groq.provider_id, openai_account.provider_id
    for provider, model, first, end, score in (
        (groq_id, GATEWAY_MODEL, "2026-10-01", "2027-01-01", "0.9"),
        (groq_id, GATEWAY_MODEL, "2026-07-01", "2026-10-01", "0.85"),
        (openai_id, "gpt-5-mini", "2026-10-01", "2027-01-01", "0.7"),  # served no measured request: weighs nothing
    ):
        EvalScore.objects.create(
            workload=support_agent,
            provider_id=provider,
            model=model,
            name="resolution-accuracy",
            period_start=first,
            period_end=end,
            score=Decimal(score),
        )


@pytest.fixture(scope="module")
def world(django_db_setup, django_db_blocker):
    """The organisation and its data, built once for the module (tests/data_once.py): every test reads it."""
    with built_once(django_db_blocker), time_machine.travel(NOW):
        support_team, search_team = make_support_team(), make_search_team()
        built = SimpleNamespace(
            support_team=support_team,
            support_agent=make_support_agent(support_team),
            search_ranker=make_search_ranker(search_team),
            router=Workload.objects.create(
                team=support_team, name="Ticket router", slug="ticket-router", latency_profile="realtime"
            ),
            ada=make_user("ada", User.Role.ADMIN),
            fiona=make_user("fiona", User.Role.FINANCE),
            sam=make_user("sam", User.Role.MEMBER, team=support_team),
            openai_account=make_openai_account(),
            groq=_groq_account(),
        )
        _build_data(built.ada, built.openai_account, built.groq, built.support_agent, built.search_ranker, built.router)
        yield built


@pytest.fixture
def data(world, db):
    """The module's data is there (built once by `world`)."""


ada, fiona, sam, support_team, support_agent, search_ranker = world_rows(
    "ada", "fiona", "sam", "support_team", "support_agent", "search_ranker"
)


def _card(user, key="2026Q4", **kwargs):
    return selectors.scorecard(user, selectors.quarter(key, today=TODAY), today=TODAY, **kwargs)


def _rows(card) -> dict[str, dict]:
    return {row["slug"]: row for row in card.rows}


def _csv(response) -> list[list[str]]:
    assert response["Content-Type"].startswith("text/csv")
    return list(csv.reader(io.StringIO(response.content.decode())))


def _near(value, expected, share=0.01) -> bool:
    return abs(float(value) - expected) <= share * abs(expected)


# --- quarters ---


def test_the_current_quarter_is_read_to_date_and_compared_with_the_same_days_of_the_previous_one():
    q = selectors.quarter("2026Q4", today=TODAY)
    assert (q.start, q.read_end, q.end, q.to_date, q.title) == (
        dt.date(2026, 10, 1),
        TODAY,
        dt.date(2027, 1, 1),
        True,
        "Q4 2026 to date",
    )
    assert (q.compare_start, q.compare_end) == (dt.date(2026, 7, 1), dt.date(2026, 8, 22))  # 52 days each
    past = selectors.quarter("2026-q3", today=TODAY)
    assert (past.key, past.start, past.read_end, past.to_date) == (
        "2026Q3",
        dt.date(2026, 7, 1),
        dt.date(2026, 10, 1),
        False,
    )
    assert (past.compare_start, past.compare_end, past.compare_label) == (
        dt.date(2026, 4, 1),
        dt.date(2026, 7, 1),
        "Q2 2026",
    )
    assert selectors.quarter(None, today=TODAY).key == "2026Q4"
    assert selectors.quarter(None, today=dt.date(2027, 1, 1)).key == "2026Q4"  # Q1 2027 has no complete day yet


@pytest.mark.parametrize("text", ["2026Q5", "Q4", "2026-13", "1999Q4", "2027Q1"])
def test_a_bad_or_future_quarter_is_refused_naming_it(text):
    with pytest.raises(selectors.QuarterError, match=text.upper().replace("-", "") if text == "2027Q1" else text):
        selectors.quarter(text, today=TODAY)


def test_a_request_at_23_59_on_sep_30_is_q3_and_one_at_midnight_oct_1_is_q4(ada, data):
    q3 = _rows(_card(ada, "2026Q3"))["support-agent"]
    q4 = _rows(_card(ada, "2026Q4"))["support-agent"]
    assert q3["measured_requests"] == 101  # July's 100 and Sep 30 23:59
    assert q4["measured_requests"] == 100  # Oct 1 00:00 and November's 99
    assert (q3["requests"], q4["requests"]) == (101, 100)  # the usage lines agree, day by day


# --- the figures ---


def test_spend_tokens_and_unit_costs_are_sums_over_sums_with_percent_changes(ada, data):
    row = _rows(_card(ada))["support-agent"]
    assert (row["cost"], row["tokens"], row["unpriced_tokens"]) == (Decimal(200), 2_000_000 + 100 * 600, 100 * 600)
    assert row["usd_per_mtok"] == Decimal(100)  # over the priced tokens only
    assert (row["cost_change"], row["usd_per_mtok_change"]) == (Decimal(1), Decimal(0))
    assert row["tokens_change"] == Decimal(2_060_000 - 1_060_000) / Decimal(1_060_000)
    assert (row["outcomes"], row["per_outcome"], row["previous"].per_outcome) == (400, Decimal("0.5"), Decimal(2))
    assert row["per_outcome_change"] == Decimal("-0.75")


def test_error_rate_changes_in_points_and_p99_in_milliseconds_from_merged_distributions(ada, data):
    row = _rows(_card(ada))["support-agent"]
    assert row["error_rate"] == Decimal("0.01") and row["previous"].error_rate == Decimal("0.02")
    assert row["error_rate_change"] == Decimal("-1.00")  # percentage points
    assert _near(row["p99_ms"], 5000) and _near(row["previous"].p99_ms, 1000)
    assert _near(row["p99_change_ms"], 4000, 0.02)
    verdict = row["verdict_detail"]
    assert (verdict.status, verdict.sla_seconds) == ("fails", 4)
    assert verdict.share_over == pytest.approx(0.04)
    assert (
        row["verdict"]["label"] == "Fails"
        and "4 s SLA" in row["verdict"]["title"]
        and "4.0 %" in row["verdict"]["title"]
    )
    assert row["previous"].verdict.status == "meets"


def test_output_speed_is_generation_tokens_over_generation_time_and_quality_is_request_weighted(ada, data):
    row = _rows(_card(ada))["support-agent"]
    # 9,900 + 100 tokens over 95 × 0.8 s + 1.3 s + 4 × 4.8 s of generation; July: 10,000 over 100 × 0.8 s
    assert row["tokens_per_s"] == Decimal(10_000_000) / Decimal(96_500)
    assert row["tokens_per_s_basis"] == "generation" and row["previous"].tokens_per_s == Decimal(125)
    assert row["quality"] == Decimal("0.9")  # the unmeasured gpt-5-mini score (0.7) weighs nothing
    assert (row["quality_eval"], row["quality_change"]) == ("resolution-accuracy", Decimal("0.05"))


def test_a_quarter_without_outcomes_has_no_cost_per_outcome_and_unpriced_spend_is_unknown_not_zero(ada, data):
    rows = _rows(_card(ada))
    # search-ranker counts no outcome (no unit, none reported): "—", not 0
    assert (rows["search-ranker"]["cost"], rows["search-ranker"]["outcomes"], rows["search-ranker"]["per_outcome"]) == (
        Decimal(30),
        None,
        None,
    )
    assert rows["search-ranker"]["cost_change"] is None  # nothing the quarter before: no % of nothing
    assert rows["search-ranker"]["verdict"]["status"] == "no-sla" and rows["search-ranker"]["p99_ms"] is None
    assert (
        rows["ticket-router"]["cost"],
        rows["ticket-router"]["unpriced_tokens"],
        rows["ticket-router"]["usd_per_mtok"],
    ) == (None, 3_000_000, None)


def test_each_source_is_read_once_for_every_workload(ada, data, support_team, django_assert_max_num_queries):
    for n in range(20):  # more workloads add no query
        Workload.objects.create(team=support_team, name=f"Extra {n}", slug=f"extra-{n}", sla_seconds=2)
    with django_assert_max_num_queries(20):
        _card(ada)


# --- the page ---


def test_the_page_shows_each_figure_with_its_change_and_a_verdict_badge(client_as, fiona, data):
    response = client_as(fiona).get(reverse("scorecard"), {"quarter": "2026Q4"})
    assert response.status_code == 200
    html = response.content.decode()
    assert "Q4 2026 to date" in html and "the same 52 days of Q3 2026" in html
    assert "$200.00" in html and "+100.0 %" in html and "-1.00 pt" in html and "$0.50" in html
    assert 'data-verdict="fails"' in html and re.search(
        r"p99 (4\.9|5|5\.1) s against its 4 s SLA; 4\.0 % of requests slower", html
    )
    assert "How p99 is computed" in html and "Summary only" in html


def test_the_page_sorts_on_the_server_stable_and_with_unknown_values_last(client_as, fiona, data):
    def order(**query):
        rows = client_as(fiona).get(reverse("scorecard"), {"quarter": "2026Q4", **query}).context["rows"]
        return [row["slug"] for row in rows]

    assert order() == ["support-agent", "search-ranker", "ticket-router"]  # spend, biggest first; unknown last
    assert order(sort="cost", dir="asc") == ["search-ranker", "support-agent", "ticket-router"]
    assert order(sort="p99_ms", dir="asc") == [
        "support-agent",
        "search-ranker",
        "ticket-router",
    ]  # ties keep name order
    assert order(sort="label", dir="desc") == ["ticket-router", "support-agent", "search-ranker"]
    assert order(sort="verdict", dir="asc") == ["support-agent", "search-ranker", "ticket-router"]  # worst first
    assert order(sort="nonsense") == order()


def test_the_team_filter_narrows_to_one_team(client_as, fiona, data):
    rows = client_as(fiona).get(reverse("scorecard"), {"quarter": "2026Q4", "team": "search"}).context["rows"]
    assert [row["slug"] for row in rows] == ["search-ranker"]


def test_an_empty_quarter_says_so(client_as, fiona, data):
    response = client_as(fiona).get(reverse("scorecard"), {"quarter": "2025Q1"})
    assert response.status_code == 200 and b'data-testid="scorecard-empty"' in response.content


def test_a_bad_quarter_on_the_page_names_it_and_shows_the_current_one(client_as, fiona, data):
    response = client_as(fiona).get(reverse("scorecard"), {"quarter": "2026Q7"})
    assert response.status_code == 200 and "2026Q7" in response.content.decode()
    assert response.context["quarter"].key == "2026Q4"


def test_the_picker_offers_the_current_quarter_and_earlier_ones_with_data(client_as, fiona, data):
    choices = client_as(fiona).get(reverse("scorecard")).context["quarters"]
    assert choices == [("2026Q4", "Q4 2026 to date"), ("2026Q3", "Q3 2026")]


# --- downloads ---


def test_the_csv_carries_the_page_columns_with_changes_as_plain_numbers(client_as, fiona, data):
    rows = _csv(client_as(fiona).get(reverse("scorecard"), {"quarter": "2026Q4", "csv": "scorecard"}))
    assert rows[0] == csv_header(SCORECARD)
    found = {row[1]: dict(zip(rows[0], row)) for row in rows[1:]}
    support = found["support-agent"]
    assert (support["Spend"], support["Spend change"], support["USD/M tokens"], support["Cost per outcome"]) == (
        "200.00",
        "1.00",
        "100.00",
        "0.50",
    )
    assert (support["Error rate"], support["Error rate change (pt)"], support["Verdict"], support["Currency"]) == (
        "0.01",
        "-1.00",
        "Fails",
        "USD",
    )
    assert int(support["p99 latency"]) == pytest.approx(5000, rel=0.01)
    assert found["search-ranker"]["Cost per outcome"] == "" and found["ticket-router"]["Spend"] == ""


def test_the_xlsx_holds_the_csv_cell_by_cell_with_numbers_as_numbers(client_as, fiona, data):
    query = {"quarter": "2026Q4", "sort": "p99_ms", "dir": "desc"}
    expected = _csv(client_as(fiona).get(reverse("scorecard"), {**query, "csv": "scorecard"}))
    response = client_as(fiona).get(reverse("scorecard"), {**query, "xlsx": "scorecard"})
    assert response["Content-Disposition"] == 'attachment; filename="scorecard-2026Q4.xlsx"'
    sheet = load_workbook(io.BytesIO(response.content)).active
    assert sheet.title == "Q4 2026 to date" and "Quarterly scorecard — Q4 2026 to date" in sheet["A1"].value
    assert "generated 2026-11-22 12:00 UTC" in sheet["A1"].value
    assert sheet.freeze_panes == "B3"
    cells = [[cell.value for cell in row] for row in sheet.iter_rows(min_row=2)]
    assert cells[0] == expected[0]
    assert len(cells) == len(expected)
    for got, want in zip(cells[1:], expected[1:]):
        for header, value, text in zip(expected[0], got, want):
            if text == "":
                assert value is None, header
            elif isinstance(value, (int, float)):
                assert Decimal(str(value)).quantize(Decimal("0.01")) == Decimal(text).quantize(Decimal("0.01")), header
            else:
                assert value == text, header
    spend = expected[0].index("Spend") + 1
    assert sheet.cell(row=3, column=spend).number_format == '"$"#,##0.00'
    assert isinstance(sheet.cell(row=3, column=spend).value, (int, float))


# --- access ---


def test_a_member_sees_only_their_teams_workloads_on_the_page_csv_xlsx_and_api(client_as, sam, data):
    client = client_as(sam)
    page = client.get(reverse("scorecard"), {"quarter": "2026Q4"})
    assert {row["slug"] for row in page.context["rows"]} == {"support-agent", "ticket-router"}
    assert "Search ranker" not in page.content.decode()
    csv_rows = _csv(client.get(reverse("scorecard"), {"quarter": "2026Q4", "csv": "scorecard"}))
    assert {row[1] for row in csv_rows[1:]} == {"support-agent", "ticket-router"}
    sheet = load_workbook(
        io.BytesIO(client.get(reverse("scorecard"), {"quarter": "2026Q4", "xlsx": "scorecard"}).content)
    ).active
    assert {row[1] for row in sheet.iter_rows(min_row=3, values_only=True)} == {"support-agent", "ticket-router"}
    api = client.get(reverse("api-scorecard"), {"quarter": "2026Q4"}).json()
    assert {w["slug"] for w in api["workloads"]} == {"support-agent", "ticket-router"}


@pytest.mark.parametrize("query", [{}, {"csv": "scorecard"}, {"xlsx": "scorecard"}])
def test_a_member_asking_for_another_teams_scorecard_gets_404(client_as, sam, data, query):
    assert client_as(sam).get(reverse("scorecard"), {"team": "search", **query}).status_code == 404
    assert client_as(sam).get(reverse("api-scorecard"), {"team": "search"}).status_code == 404


def test_admins_and_finance_see_every_workload(client_as, ada, fiona, data):
    for user in (ada, fiona):
        rows = client_as(user).get(reverse("scorecard"), {"quarter": "2026Q4"}).context["rows"]
        assert len(rows) == 3


# --- the API ---


def test_the_api_gives_the_same_figures_with_decimals_as_strings_and_the_previous_quarter(client_as, fiona, data):
    response = client_as(fiona).get(reverse("api-scorecard"), {"quarter": "2026Q4"})
    assert response.status_code == 200
    body = response.json()
    assert (body["quarter"], body["to_date"], body["start"], body["end"], body["currency"]) == (
        "2026Q4",
        True,
        "2026-10-01",
        "2026-11-22",
        "USD",
    )
    assert body["compare"] == {"start": "2026-07-01", "end": "2026-08-22", "label": "the same 52 days of Q3 2026"}
    support = next(w for w in body["workloads"] if w["slug"] == "support-agent")
    assert (support["cost"], support["cost_change"], support["per_outcome"], support["per_outcome_change"]) == (
        "200.000000",
        "1.000000",
        "0.500000",
        "-0.750000",
    )
    assert (support["error_rate"], support["error_rate_change"], support["outcomes"], support["requests"]) == (
        "0.010000",
        "-1.000000",
        400,
        100,
    )
    assert isinstance(support["p99_ms"], int) and support["p99_ms"] == pytest.approx(5000, rel=0.01)
    assert support["verdict"]["status"] == "fails" and support["verdict"]["sla_seconds"] == "4.000000"
    assert support["previous"]["cost"] == "100.000000" and support["previous"]["verdict"]["status"] == "meets"
    assert support["quality"] == "0.900000" and support["quality_eval"] == "resolution-accuracy"
    search = next(w for w in body["workloads"] if w["slug"] == "search-ranker")
    assert search["per_outcome"] is None and search["cost_change"] is None


@pytest.mark.parametrize(
    ("query", "field"),
    [({"quarter": "2026Q5"}, "quarter"), ({"quarter": "2027Q1"}, "quarter"), ({"quarters": "2026Q4"}, "quarters")],
)
def test_the_api_answers_400_naming_a_bad_quarter_or_parameter(client_as, fiona, data, query, field):
    response = client_as(fiona).get(reverse("api-scorecard"), query)
    assert response.status_code == 400
    assert field in response.json() and next(iter(query.values())) in json.dumps(response.json()) + json.dumps(query)


def test_the_api_schema_describes_the_scorecard(client_as, fiona):
    schema = client_as(fiona).get("/api/schema/", {"format": "json"}).json()
    assert "/api/v1/scorecard" in schema["paths"]
    properties = schema["components"]["schemas"]["ScorecardWorkload"]["properties"]
    assert {"cost", "cost_change", "p99_ms", "p99_change_ms", "verdict", "previous"} <= set(properties)


def test_merging_in_postgres_gives_what_merging_in_python_gives(support_agent, search_ranker, data):
    from finops.performance.selectors.performance_totals import _in_python, performance_totals

    spans = {
        "q3": (dt.date(2026, 7, 1), dt.date(2026, 10, 1)),
        "q4": (dt.date(2026, 10, 1), dt.date(2026, 11, 22)),
        "days": (dt.date(2026, 7, 14), dt.date(2026, 11, 4)),
    }
    ids = [support_agent.id, search_ranker.id]
    for name, (by_workload, by_model) in performance_totals(ids, spans).items():
        expected, expected_models = _in_python(ids, *spans[name])
        assert by_model == expected_models
        assert {
            w: (p.requests, p.errors, p.e2e.as_json(), p.output_tokens_per_s, p.p_ms(0.99))
            for w, p in by_workload.items()
        } == {
            w: (p.requests, p.errors, p.e2e.as_json(), p.output_tokens_per_s, p.p_ms(0.99)) for w, p in expected.items()
        }, name
        assert by_workload  # the spans hold measured requests


def test_the_error_rate_counts_the_failures_a_percentiles_report_gives(ada, data, support_agent):
    from finops.performance.services.metrics import metrics_record

    metrics_record(
        by=ada,
        rows=[
            {
                "workload": "support-agent",
                "provider": "openai",
                "model": "gpt-5-mini",
                "hour": "2026-11-02T10:00:00Z",
                "requests": 100,
                "errors": 5,
                "latency": {"count": 100, "p50_ms": 800, "p95_ms": 1500, "p99_ms": 2000},
            }
        ],
    )
    row = _rows(_card(ada))["support-agent"]
    # the gateway's 100 requests of the quarter with 1 failure, and the report's 100 with 5
    assert row["error_rate"] == Decimal(6) / Decimal(200)
