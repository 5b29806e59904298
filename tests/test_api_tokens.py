"""API tokens: shown once, stored hashed, scoped read-only or read-write, expiring, revocable, listed on a page
(the prefix only), made by the page and by `create_api_token` through one service, each change audited."""

import datetime as dt
import io

import pytest
import time_machine
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client
from knox.models import AuthToken

from finops.models import ApiToken, AuditEntry, Cap
from finops.org.services.api_tokens import api_token_create, api_token_revoke

JSON = {"content_type": "application/json"}
CAP = {
    "name": "Support monthly",
    "scope": "team",
    "target": "support",
    "amount": "100",
    "recipients": ["lead@example.com"],
}


def create_token(username: str, *args) -> str:
    out = io.StringIO()
    call_command("create_api_token", username, *args, stdout=out, stderr=io.StringIO())
    return out.getvalue().strip()


def bearer(token: str) -> dict:
    return {"HTTP_AUTHORIZATION": f"Token {token}"}


def test_a_token_from_the_command_authenticates_api_calls(client, fiona):
    token = create_token("fiona")
    response = client.get("/api/v1/me", **bearer(token))
    assert response.status_code == 200 and response.json()["username"] == "fiona"


def test_a_token_is_stored_only_as_a_hash(fiona):
    token = create_token("fiona")
    stored = AuthToken.objects.get(user=fiona)
    assert stored.digest != token and token not in stored.digest
    with connection.cursor() as cursor:
        for table in ("knox_authtoken", "finops_apitoken", "finops_auditentry"):
            cursor.execute(f"SELECT * FROM {table}")  # noqa: S608 - fixed table names
            assert not any(token in str(value) for row in cursor.fetchall() for value in row), table


def test_a_wrong_token_is_refused(client, fiona):
    create_token("fiona")
    assert client.get("/api/v1/me", HTTP_AUTHORIZATION="Token " + "0" * 64).status_code == 401


def test_the_command_refuses_an_unknown_user(db):
    with pytest.raises(CommandError, match="No user named 'nobody'"):
        create_token("nobody")


def test_the_command_makes_a_read_only_token_unless_told_and_records_it_as_the_cli(ada):
    create_token("ada", "--name", "nightly export")
    create_token("ada", "--scope", "write")
    tokens = {t.name: t for t in ApiToken.objects.all()}
    assert tokens["nightly export"].scope == "read" and tokens["command line"].scope == "write"
    entries = AuditEntry.objects.filter(entity_type="token", action="created")
    assert (
        entries.count() == 2 and {e.source for e in entries} == {"cli"} and {e.actor_label for e in entries} == {"cli"}
    )


def test_the_openapi_schema_and_offline_docs_are_served(client_as, client, fiona):
    token = create_token("fiona")
    schema = client.get("/api/schema/", **bearer(token))
    assert schema.status_code == 200 and b"/api/v1/teams" in schema.content
    docs = client_as(fiona).get("/api/docs/").content.decode()
    assert "drf_spectacular_sidecar/swagger-ui-dist" in docs and "cdn" not in docs.lower()


# --- scope ---


def test_a_read_only_token_reads_but_is_refused_every_change_with_a_clear_403(client, sam):
    _, secret = api_token_create(user=sam, name="dashboards", scope="read")
    assert client.get("/api/v1/caps", **bearer(secret)).status_code == 200
    refused = client.post("/api/v1/caps", CAP, **JSON, **bearer(secret))
    assert refused.status_code == 403 and "read-only" in refused.json()["detail"]
    assert not Cap.objects.exists()


def test_a_read_write_token_does_what_its_user_may_and_no_more(client, sam, fiona):
    _, lead_secret = api_token_create(user=sam, name="cap bot", scope="write")
    assert client.post("/api/v1/caps", CAP, **JSON, **bearer(lead_secret)).status_code == 201  # a lead's team cap
    org_cap = {**CAP, "name": "Org", "scope": "org", "target": None}
    assert client.post("/api/v1/caps", org_cap, **JSON, **bearer(lead_secret)).status_code == 403  # leads may not
    _, finance_secret = api_token_create(user=fiona, name="finance", scope="write")
    assert client.post("/api/v1/caps", {**CAP, "name": "F"}, **JSON, **bearer(finance_secret)).status_code == 403
    assert list(Cap.objects.values_list("name", flat=True)) == ["Support monthly"]


# --- expiry, revocation, last use ---


def test_an_expired_token_is_refused(client, fiona):
    _, secret = api_token_create(user=fiona, name="short", days=1)
    with time_machine.travel(dt.datetime.now(dt.UTC) + dt.timedelta(days=1, minutes=1)):
        assert client.get("/api/v1/me", **bearer(secret)).status_code == 401


def test_a_revoked_token_is_refused_at_once_and_stays_listed_as_revoked(client, fiona):
    token, secret = api_token_create(user=fiona, name="old job")
    assert client.get("/api/v1/me", **bearer(secret)).status_code == 200
    api_token_revoke(token=token, by=fiona)
    assert client.get("/api/v1/me", **bearer(secret)).status_code == 401
    token.refresh_from_db()
    assert token.revoked_at is not None and token.revoked_by == fiona and not AuthToken.objects.exists()
    api_token_revoke(token=token, by=fiona)  # twice: nothing more happens
    assert AuditEntry.objects.filter(entity_type="token", action="revoked").count() == 1


def test_each_use_sets_last_used_at_most_once_a_minute(client, fiona):
    token, secret = api_token_create(user=fiona, name="poller")
    assert token.last_used_at is None
    client.get("/api/v1/me", **bearer(secret))
    token.refresh_from_db()
    first = token.last_used_at
    assert first is not None
    client.get("/api/v1/me", **bearer(secret))
    token.refresh_from_db()
    assert token.last_used_at == first
    with time_machine.travel(dt.datetime.now(dt.UTC) + dt.timedelta(minutes=2)):
        client.get("/api/v1/me", **bearer(secret))
    token.refresh_from_db()
    assert token.last_used_at > first


def test_an_expired_token_is_deleted_when_presented_and_a_bare_knox_token_is_refused(client, fiona):
    _, secret = api_token_create(user=fiona, name="short", days=1)
    _, bare = AuthToken.objects.create(user=fiona)  # no ApiToken beside it: not made by the service
    assert client.get("/api/v1/me", **bearer(bare)).status_code == 401
    with time_machine.travel(dt.datetime.now(dt.UTC) + dt.timedelta(days=1, minutes=1)):
        assert client.get("/api/v1/me", **bearer(secret)).json() == {"detail": "Invalid token."}
    assert AuthToken.objects.count() == 1  # the expired token's knox row is gone, its ApiToken stays listed
    assert ApiToken.objects.get(name="short").auth_token is None


def test_a_token_is_checked_in_one_query(fiona, django_assert_num_queries):
    """The token, its ApiToken (scope, revocation) and its user are one read on every API call (issue 27)."""
    from rest_framework.test import APIRequestFactory

    from finops.api.authentication import ScopedTokenAuthentication

    token, secret = api_token_create(user=fiona, name="poller")
    request = APIRequestFactory().get("/api/v1/me", **bearer(secret))
    ScopedTokenAuthentication().authenticate(request)  # the first use notes last_used_at (a write a minute)
    with django_assert_num_queries(1):
        user, auth_token = ScopedTokenAuthentication().authenticate(request)
    assert user == fiona and auth_token.details == token


@pytest.mark.parametrize("days", [0, -1, 3651, "7"])
def test_the_service_refuses_an_expiry_out_of_range(fiona, days):
    from finops.org.services.api_tokens import ApiTokenInvalid

    with pytest.raises(ApiTokenInvalid, match="between 1 and 3650"):
        api_token_create(user=fiona, name="x", days=days)
    assert not ApiToken.objects.exists() and not AuthToken.objects.exists()


# --- the page ---


def test_the_page_shows_the_secret_once_then_only_its_prefix(client_as, fiona):
    client = client_as(fiona)
    created = client.post("/tokens/", {"name": "sheet sync", "scope": "read", "days": 30})
    assert created.status_code == 200 and "no-store" in created["Cache-Control"]
    token = ApiToken.objects.get()
    secret = created.context["secret"]
    assert secret.startswith(token.prefix) and secret in created.content.decode()
    assert Client().get("/api/v1/me", **bearer(secret)).status_code == 200
    listing = client.get("/tokens/").content.decode()
    assert "sheet sync" in listing and f"{token.prefix}…" in listing and secret not in listing


def test_a_bad_form_names_the_field_and_makes_nothing(client_as, fiona):
    page = client_as(fiona).post("/tokens/", {"name": "", "scope": "admin", "days": 99999})
    assert page.status_code == 400 and not ApiToken.objects.exists()
    assert set(page.context["form"].errors) == {"name", "scope", "days"}


def test_people_see_and_revoke_only_their_own_tokens_and_admins_anyones(client_as, ada, fiona, sam):
    mine, _ = api_token_create(user=fiona, name="fiona's")
    theirs, _ = api_token_create(user=sam, name="sam's")
    listing = client_as(fiona).get("/tokens/").content.decode()
    assert "fiona&#x27;s" in listing and "sam&#x27;s" not in listing
    assert client_as(fiona).post(f"/tokens/{theirs.pk}/revoke/").status_code == 404
    assert client_as(fiona).post(f"/tokens/{mine.pk}/revoke/").status_code == 302
    admin_listing = client_as(ada).get("/tokens/").content.decode()
    assert "sam&#x27;s" in admin_listing and "fiona&#x27;s" in admin_listing
    assert client_as(ada).post(f"/tokens/{theirs.pk}/revoke/").status_code == 302
    theirs.refresh_from_db()
    assert theirs.revoked_by == ada
    entry = AuditEntry.objects.get(entity_type="token", action="revoked", entity_id=str(theirs.pk))
    assert (
        entry.actor == ada and entry.source == "ui" and entry.before["revoked_at"] is None and entry.after["revoked_at"]
    )


def test_the_django_admin_offers_no_way_around_the_token_service(client_as, ada):
    assert client_as(ada).get("/admin/knox/authtoken/").status_code == 404
