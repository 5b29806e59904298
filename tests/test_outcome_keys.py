"""Idempotency keys belong to their sender (issue 26): the same key with other rows is a 409 naming the key, and
another user's same key is another batch. Through the API with real tokens, on Postgres."""

import datetime as dt

from django.test import Client

from finops.models import OutcomeBatch, OutcomeCount, Workload
from finops.org.services.api_tokens import api_token_create
from tests.clock import holding

TODAY = dt.datetime.now(dt.UTC).date()
_held_on_today = holding(TODAY)
D1 = (TODAY - dt.timedelta(days=3)).isoformat()


def token_client(user, name="nightly") -> Client:
    _, secret = api_token_create(user=user, name=name, scope="write")
    return Client(HTTP_AUTHORIZATION=f"Token {secret}")


def post(client, rows, key):
    return client.post("/api/v1/outcomes", rows, content_type="application/json", HTTP_IDEMPOTENCY_KEY=key)


def stored():
    return {(o.workload.slug, o.count) for o in OutcomeCount.objects.select_related("workload")}


def test_the_same_key_with_other_rows_is_a_409_naming_the_key_and_applies_nothing(sam, support_agent):
    client = token_client(sam)
    assert post(client, [{"workload": "support-agent", "day": D1, "count": 40}], "nightly-7").status_code == 201
    other = post(client, [{"workload": "support-agent", "day": D1, "count": 41}], "nightly-7")
    assert other.status_code == 409, other.content
    assert other.json()["idempotency_key"] == "nightly-7" and "nightly-7" in other.json()["errors"][0]
    assert stored() == {("support-agent", 40)}
    # The same rows again are still the replay they always were, from this token or another of the same user.
    again = post(token_client(sam, "backfill"), [{"workload": "support-agent", "day": D1, "count": 40}], "nightly-7")
    assert again.status_code == 200 and again.json()["replay"] is True


def test_another_users_same_key_is_another_batch(sam, tess, support_agent, search_ranker):
    """Tess (another team) sending first used to use up Sam's key: Sam's rows were then dropped as a "replay"."""
    assert post(token_client(tess), [{"workload": "search-ranker", "day": D1, "count": 5}], "daily").status_code == 201
    mine = post(token_client(sam), [{"workload": "support-agent", "day": D1, "count": 40}], "daily")
    assert mine.status_code == 201 and mine.json()["replay"] is False
    assert stored() == {("search-ranker", 5), ("support-agent", 40)}
    assert sorted(OutcomeBatch.objects.values_list("sender__username", "idempotency_key")) == [
        ("sam", "daily"),
        ("tess", "daily"),
    ]


def test_a_session_and_a_token_of_the_same_user_share_the_keys(sam, support_agent, client_as):
    rows = [{"workload": "support-agent", "day": D1, "count": 3}]
    assert post(client_as(sam), rows, "k1").status_code == 201
    assert post(token_client(sam), rows, "k1").json()["replay"] is True
    assert Workload.objects.get(slug="support-agent").outcomes.count() == 1
