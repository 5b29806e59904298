"""Eval scores (issue 12): a named quality score per workload × provider × model × period, posted to
`POST /api/v1/evals` and read beside cost (finops.performance.selectors.evals), so "cheaper and still good enough"
shows. All or nothing, corrections replace, team isolation, and the one quality figure per workload."""

import datetime as dt
from decimal import Decimal

from finops.models import EvalScore, Provider
from finops.performance.selectors.evals import quality_by, scores_by
from finops.performance.selectors.performance import performance_by
from finops.performance.services.evals import evals_record

JSON = {"content_type": "application/json"}
Q4 = (dt.date(2026, 10, 1), dt.date(2027, 1, 1))


def score(**values) -> dict:
    return {
        "workload": "support-agent",
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
        "name": "resolution-accuracy",
        "score": "0.93",
        "period": "2026Q4",
        **values,
    }


def post(client, rows):
    return client.post("/api/v1/evals", rows, **JSON)


def stored():
    return sorted(
        (
            e.workload.slug,
            e.provider.slug,
            e.model,
            e.name,
            e.period_start.isoformat(),
            e.period_end.isoformat(),
            str(e.score),
            e.source,
        )
        for e in EvalScore.objects.select_related("workload", "provider")
    )


def test_a_month_a_quarter_or_explicit_days_name_the_period_with_the_end_excluded(sam, support_agent, client_as):
    response = post(
        client_as(sam),
        [
            score(period="2026-11"),
            score(name="tone", period="2026Q4"),
            score(name="tone-2", period="2026-q3"),
            score(name="safety", period=None, period_start="2026-10-15", period_end="2026-11-15"),
            score(name="spot-check", period=None, period_start="2026-10-20"),
        ],
    )
    assert response.status_code == 201, response.content
    assert response.json() == {"rows": 5, "created": 5, "replaced": 0, "unchanged": 0}
    periods = {
        e.name if e.name != "resolution-accuracy" else "month": (e.period_start, e.period_end)
        for e in EvalScore.objects.all()
    }
    assert periods == {
        "month": (dt.date(2026, 11, 1), dt.date(2026, 12, 1)),
        "tone": Q4,
        "tone-2": (dt.date(2026, 7, 1), dt.date(2026, 10, 1)),
        "safety": (dt.date(2026, 10, 15), dt.date(2026, 11, 15)),
        "spot-check": (dt.date(2026, 10, 20), dt.date(2026, 10, 21)),  # one day
    }


def test_a_score_is_stored_exactly_from_a_string_or_a_number(sam, support_agent, client_as):
    post(client_as(sam), [score(score=0.91, model="claude-haiku-4-5-20251001"), score(score="87.125", name="csat")])
    assert {e.name: e.score for e in EvalScore.objects.all()} == {
        "resolution-accuracy": Decimal("0.91"),
        "csat": Decimal("87.125"),
    }
    assert EvalScore.objects.get(name="resolution-accuracy").model == "claude-haiku-4-5"  # normalised
    listed = client_as(sam).get("/api/v1/evals").json()["results"]
    assert [r["score"] for r in listed] == ["87.125000", "0.910000"]


def test_a_later_score_for_the_same_key_replaces_it_and_the_same_batch_twice_changes_nothing(
    sam, support_agent, client_as
):
    client = client_as(sam)
    post(client, [score(), score(model="claude-haiku-4-5", score="0.90")])
    before = stored()
    assert post(client, [score(), score(model="claude-haiku-4-5", score="0.90")]).json() == {
        "rows": 2,
        "created": 0,
        "replaced": 0,
        "unchanged": 2,
    }
    assert stored() == before
    corrected = post(client, [score(model="claude-haiku-4-5", score="0.91", source="braintrust")])
    assert corrected.json() == {"rows": 1, "created": 0, "replaced": 1, "unchanged": 0}
    assert EvalScore.objects.count() == 2
    assert EvalScore.objects.get(model="claude-haiku-4-5").score == Decimal("0.91")
    # the same eval over another period is another score, not a correction
    post(client, [score(period="2026Q3", score="0.95")])
    assert EvalScore.objects.count() == 3


def test_a_bad_batch_is_rejected_whole_naming_each_row_and_field(sam, support_agent, search_ranker, client_as):
    today = dt.datetime.now(dt.UTC).date()
    response = post(
        client_as(sam),
        [
            score(),  # 1: fine
            score(score="NaN", name="a"),  # 2
            score(score="Infinity", name="b"),  # 3
            score(score="0.1234567", name="c"),  # 4
            score(score="high", name="d"),  # 5
            score(name="e", period_start="2026-10-01"),  # 6: both
            score(name="f", period=None, period_start="2026-10-10", period_end="2026-10-10"),  # 7
            score(name="g", period=None, period_start=(today + dt.timedelta(days=2)).isoformat()),  # 8
            score(name="h", period="2026-Q5"),  # 9
            score(name="i", workload="search-ranker"),  # 10
            score(),  # 11: repeats row 1
            score(name="j", period=None),  # 12
            {**score(name="k"), "scores": 1},  # 13
            score(name="l", score="1e20"),  # 14
        ],
    )
    assert response.status_code == 400
    assert response.json()["errors"] == [
        "row 2: score: 'NaN' is not a finite number",
        "row 3: score: 'Infinity' is not a finite number",
        "row 4: score: '0.1234567' has more than 6 decimal places (it would be rounded)",
        "row 5: score: 'high' is not a number",
        "row 6: period: give either period or period_start (and period_end), not both",
        "row 7: period_end: 2026-10-10 must be after period_start 2026-10-10 (the end day is excluded)",
        f"row 8: period: starts {today + dt.timedelta(days=2)}, after today ({today}, UTC)",
        "row 9: period: '2026-Q5' is neither a month (2026-11) nor a quarter (2026Q4)",
        "row 10: workload: unknown workload 'search-ranker'",
        "row 11: repeats row 1 (workload 'support-agent', provider 'anthropic', model 'claude-sonnet-4-5', eval "
        "'resolution-accuracy', 2026-10-01 → 2027-01-01): send one per key",
        'row 12: missing period (a month "2026-11", a quarter "2026Q4", or period_start and period_end)',
        "row 13: unknown field 'scores'",
        "row 14: score: '1e20' is too large (at most 14 digits before the point)",
    ]
    assert EvalScore.objects.count() == 0  # nothing half-applied


def test_the_list_is_paginated_filtered_by_quarter_and_scoped_to_the_users_teams(
    ada, fiona, sam, tess, support_agent, search_ranker, client_as
):
    evals_record(
        by=ada,
        rows=[
            score(),
            score(period="2026Q3", score="0.92"),
            score(workload="search-ranker", provider="openai", model="gpt-5-mini", name="ndcg@10", score="0.71"),
        ],
    )
    page = client_as(fiona).get("/api/v1/evals", {"limit": 2})
    assert page.status_code == 200
    body = page.json()
    assert body["count"] == 3 and len(body["results"]) == 2 and body["next"]
    assert body["results"][0] == {
        "workload": "search-ranker",
        "provider": "openai",
        "model": "gpt-5-mini",
        "name": "ndcg@10",
        "score": "0.710000",
        "period_start": "2026-10-01",
        "period_end": "2027-01-01",
        "source": "",
        "updated_at": body["results"][0]["updated_at"],
    }
    q3 = client_as(sam).get("/api/v1/evals", {"quarter": "2026-Q3"}).json()["results"]
    assert [(r["workload"], r["score"]) for r in q3] == [("support-agent", "0.920000")]
    assert [r["workload"] for r in client_as(tess).get("/api/v1/evals").json()["results"]] == ["search-ranker"]
    assert client_as(tess).get("/api/v1/evals", {"workload": "support-agent"}).status_code == 404
    assert client_as(sam).get("/api/v1/evals", {"quarter": "Q4"}).status_code == 400
    assert client_as(sam).get("/api/v1/evals", {"team": "support"}).status_code == 400  # unknown parameter


def test_who_may_post_eval_scores(ada, fiona, sam, tess, support_agent, search_ranker, client_as):
    assert post(client_as(fiona), [score()]).status_code == 403
    assert post(client_as(tess), [score()]).json()["errors"] == ["row 1: workload: unknown workload 'support-agent'"]
    assert post(client_as(sam), [score()]).status_code == 201
    assert post(client_as(ada), [score(workload="search-ranker")]).status_code == 201


def test_quality_is_the_primary_eval_weighted_by_the_requests_each_model_served(ada, sam, support_agent, client_as):
    """The support agent moved most traffic to a cheaper model: 0.91 on Haiku for 900 requests, 0.93 on Sonnet for
    100. Its quality is 0.912 (weighted by requests), a plain mean only when no model served any."""
    evals_record(
        by=sam,
        rows=[
            score(score="0.93"),
            score(model="claude-haiku-4-5", score="0.91"),
            score(name="tone", score="4.5"),  # one row: not the primary eval (resolution-accuracy has two)
        ],
    )
    without = quality_by([support_agent.id], *Q4)
    assert without[support_agent.id].name == "resolution-accuracy"
    assert without[support_agent.id].score == Decimal("0.92")

    hour = "2026-10-05T10:00:00Z"
    metric = {"workload": "support-agent", "provider": "anthropic", "hour": hour, "latency": {"histogram": []}}
    posted = client_as(sam).post(
        "/api/v1/metrics",
        [
            {**metric, "model": "claude-sonnet-4-5", "requests": 100, "latency": {"histogram": [[1000, 100]]}},
            {**metric, "model": "claude-haiku-4-5", "requests": 900, "latency": {"count": 900, "p99_ms": 800}},
        ],
        **JSON,
    )
    assert posted.status_code == 201, posted.content
    requests = {key: p.all_requests for key, p in performance_by([support_agent.id], *Q4).items()}
    weighted = quality_by([support_agent.id], *Q4, requests=requests)[support_agent.id]
    assert weighted.score == Decimal("0.912")  # (0.93 × 100 + 0.91 × 900) / 1000


def test_the_latest_overlapping_score_of_an_eval_wins_and_ties_pick_the_alphabetically_first_eval(sam, support_agent):
    anthropic = Provider.objects.get(slug="anthropic")
    evals_record(
        by=sam,
        rows=[
            score(period="2026-10", score="0.90"),
            score(period="2026-11", score="0.94"),
            score(name="accuracy", period="2026-10", score="0.80"),
            score(name="accuracy", period="2026-11", score="0.81"),
        ],
    )
    key = (support_agent.id, anthropic.id, "claude-sonnet-4-5")
    assert scores_by([support_agent.id], *Q4)[key]["resolution-accuracy"].score == Decimal("0.94")  # November's
    assert scores_by([support_agent.id], dt.date(2026, 10, 1), dt.date(2026, 11, 1))[key][
        "resolution-accuracy"
    ].score == Decimal("0.90")
    quality = quality_by([support_agent.id], *Q4)[support_agent.id]
    assert (quality.name, quality.score) == ("accuracy", Decimal("0.81"))  # two rows each: the alphabetically first
