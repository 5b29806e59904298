"""The reads every request makes, as plain SELECTs (issue 27): the session (finops/web/sessions.py), the signed-in
user (finops/web/auth.py) and the API token (finops/api/authentication.py) are what Django's and knox's ORM reads
returned, field for field, and refuse what they refused; the Redis cache keeps one client per pool
(finops/web/cache.py)."""

import datetime as dt

from django.conf import settings
from django.contrib.auth import HASH_SESSION_KEY, SESSION_KEY, get_user
from django.contrib.auth.backends import ModelBackend
from django.contrib.sessions.backends.db import SessionStore as DjangoSessionStore
from django.contrib.sessions.models import Session
from django.core.cache import caches
from django.test import Client, RequestFactory
from django.utils import timezone

from finops.api.authentication import candidates
from finops.models import ApiToken, User
from finops.org.services.api_tokens import api_token_create, api_token_revoke
from finops.web.auth import UserBackend
from finops.web.sessions import SessionStore


def fields(instance) -> dict:
    return {field.attname: getattr(instance, field.attname) for field in instance._meta.concrete_fields}


def test_the_session_reads_what_djangos_read(db):
    live = SessionStore()
    live["answer"] = 42
    live.create()
    live.save()
    expired = SessionStore()
    expired["answer"] = 1
    expired.create()
    Session.objects.filter(session_key=expired.session_key).update(expire_date=timezone.now() - dt.timedelta(seconds=1))
    corrupt = SessionStore()
    corrupt["answer"] = 2
    corrupt.create()
    Session.objects.filter(session_key=corrupt.session_key).update(session_data="not-signed")
    for key in (live.session_key, expired.session_key, corrupt.session_key, "no-such-session-key"):
        ours, djangos = SessionStore(key), DjangoSessionStore(key)
        assert ours.load() == djangos.load(), key
        assert ours.session_key == djangos.session_key, key  # None where there is no live row
    assert SessionStore(live.session_key).load() == {"answer": 42}


def test_the_session_is_read_with_one_query(db, django_assert_num_queries):
    store = SessionStore()
    store["answer"] = 42
    store.create()
    with django_assert_num_queries(1):
        assert SessionStore(store.session_key)["answer"] == 42


def test_the_user_is_the_one_djangos_backend_reads(fiona, django_assert_num_queries):
    with django_assert_num_queries(1):
        ours = UserBackend().get_user(fiona.pk)
    djangos = ModelBackend().get_user(fiona.pk)
    assert type(ours) is type(djangos) and fields(ours) == fields(djangos)
    assert ours._state.db == djangos._state.db and not ours._state.adding
    assert UserBackend().get_user(fiona.pk + 1000) is None
    User.objects.filter(pk=fiona.pk).update(is_active=False)
    assert UserBackend().get_user(fiona.pk) is None and ModelBackend().get_user(fiona.pk) is None


def test_a_session_signs_in_only_while_its_hash_matches_the_password(fiona):
    """Django's get_user still checks the session: a changed password signs the session out and empties it."""
    client = Client()
    client.force_login(fiona)
    assert client.session[SESSION_KEY] == str(fiona.pk)
    assert client.session["_auth_user_backend"] == "finops.web.auth.UserBackend"
    request = RequestFactory().get("/")
    request.session = SessionStore(client.session.session_key)
    assert get_user(request) == fiona
    fiona.set_password("another one entirely")
    fiona.save()
    request.session = SessionStore(client.session.session_key)
    assert request.session[HASH_SESSION_KEY]
    assert not get_user(request).is_authenticated
    assert SESSION_KEY not in request.session  # flushed
    assert client.get("/teams/").status_code == 302


def test_the_token_candidates_are_what_the_orm_read(fiona, sam):
    token, _ = api_token_create(user=fiona, name="one")
    other, _ = api_token_create(user=sam, name="two")
    revoked, _ = api_token_create(user=fiona, name="three")
    api_token_revoke(token=revoked, by=fiona)
    for wanted in (token, other):
        key = wanted.auth_token.token_key
        orm = list(
            ApiToken.objects.filter(auth_token__token_key=key, revoked_at__isnull=True).select_related(
                "auth_token__user"
            )
        )
        ours = candidates(key)
        assert [fields(t) for t in ours] == [fields(t) for t in orm]
        assert [fields(t.auth_token) for t in ours] == [fields(t.auth_token) for t in orm]
        assert [fields(t.auth_token.user) for t in ours] == [fields(t.auth_token.user) for t in orm]
        assert all(t.auth_token.details is t for t in ours)  # cached both ways, as select_related leaves them
    assert candidates("nosuchky") == []


def test_the_cache_keeps_one_redis_client_per_pool():
    cache = caches["default"]
    assert settings.CACHES["default"]["BACKEND"] == "finops.web.cache.RedisCache"
    cache.set("request-reads", [1, 2], 10)
    assert cache.get("request-reads") == [1, 2]
    assert cache._cache.get_client(write=True) is cache._cache.get_client(write=True)
    cache.delete("request-reads")
    assert cache.get("request-reads") is None


def test_a_user_signed_in_before_the_upgrade_stays_signed_in(db):
    """Sessions made while Django's ModelBackend was the listed backend name it; migration 0049 renames it to
    UserBackend, so nobody is signed out by the upgrade (and back on a downgrade)."""
    from importlib import import_module

    from django.apps import apps
    from django.contrib.auth import BACKEND_SESSION_KEY

    migration = import_module("finops.migrations.0049_sessions_name_user_backend")
    user = User.objects.create_user("before-upgrade", password="x")

    def signed_in_before_the_upgrade() -> tuple[str, Client]:
        old = SessionStore()
        old[SESSION_KEY], old[HASH_SESSION_KEY] = str(user.pk), user.get_session_auth_hash()
        old[BACKEND_SESSION_KEY] = migration.MODEL_BACKEND
        old.create()
        client = Client()
        client.cookies[settings.SESSION_COOKIE_NAME] = old.session_key
        return old.session_key, client

    _, client = signed_in_before_the_upgrade()
    signed_out = client.get("/", secure=True)
    assert signed_out.status_code == 302 and "/login" in signed_out["Location"]  # what the upgrade alone would do

    key, client = signed_in_before_the_upgrade()
    migration.sessions_name_user_backend(apps, None)
    assert SessionStore(key).load()[BACKEND_SESSION_KEY] == migration.USER_BACKEND
    assert client.get("/", secure=True).status_code == 200

    migration.sessions_name_model_backend(apps, None)
    assert SessionStore(key).load()[BACKEND_SESSION_KEY] == migration.MODEL_BACKEND
