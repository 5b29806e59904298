"""API tokens: created on the command line, shown once, stored hashed, accepted as `Authorization: Token …`."""

import io

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from knox.models import AuthToken


def create_token(username: str) -> str:
    out = io.StringIO()
    call_command("create_api_token", username, stdout=out, stderr=io.StringIO())
    return out.getvalue().strip()


def test_a_token_from_the_command_authenticates_api_calls(client, fiona):
    token = create_token("fiona")
    response = client.get("/api/v1/me", HTTP_AUTHORIZATION=f"Token {token}")
    assert response.status_code == 200 and response.json()["username"] == "fiona"


def test_a_token_is_stored_only_as_a_hash(fiona):
    token = create_token("fiona")
    stored = AuthToken.objects.get(user=fiona)
    assert stored.digest != token and token not in stored.digest
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM knox_authtoken")
        assert not any(token in str(value) for row in cursor.fetchall() for value in row)


def test_a_wrong_token_is_refused(client, fiona):
    create_token("fiona")
    assert client.get("/api/v1/me", HTTP_AUTHORIZATION="Token " + "0" * 64).status_code == 401


def test_the_command_refuses_an_unknown_user(db):
    with pytest.raises(CommandError, match="No user named 'nobody'"):
        create_token("nobody")


def test_the_openapi_schema_and_offline_docs_are_served(client_as, client, fiona):
    token = create_token("fiona")
    schema = client.get("/api/schema/", HTTP_AUTHORIZATION=f"Token {token}")
    assert schema.status_code == 200 and b"/api/v1/teams" in schema.content
    docs = client_as(fiona).get("/api/docs/").content.decode()
    assert "drf_spectacular_sidecar/swagger-ui-dist" in docs and "cdn" not in docs.lower()
