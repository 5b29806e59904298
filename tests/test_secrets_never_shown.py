"""A provider key goes in once and never comes back out: not in pages, the API, the admin (invariant 10)."""

import pytest
from django.urls import reverse

from finops.models import Account
from finops.sources.services.accounts import account_credentials, account_set_credentials

SECRET = "sk-admin-5f3c9e1d7a2b4c6e8f0a1b2c3d4e5f6a7b8c9d0e"


@pytest.fixture
def keyed_account(openai_account):
    account_set_credentials(account=openai_account, secret=SECRET)
    return Account.objects.get(pk=openai_account.pk)


def test_the_stored_value_is_not_the_secret_but_decrypts_to_it(keyed_account):
    assert SECRET not in keyed_account.credentials_ciphertext
    assert account_credentials(account=keyed_account) == SECRET
    assert keyed_account.credentials_display == "sk-admin…"


def test_no_page_shows_the_secret_only_its_prefix(client_as, ada, fiona, keyed_account):
    urls = [
        reverse("source-list"),
        reverse("source-detail", args=[keyed_account.pk]),
        "/admin/finops/account/",
        f"/admin/finops/account/{keyed_account.pk}/change/",
    ]
    for url in urls:
        page = client_as(ada).get(url).content.decode()
        assert SECRET not in page and SECRET[8:24] not in page, url
        assert keyed_account.credentials_ciphertext not in page, url
    assert "sk-admin…" in client_as(fiona).get(reverse("source-list")).content.decode()


def test_the_api_returns_only_the_hint(client_as, fiona, keyed_account):
    body = client_as(fiona).get(f"/api/v1/accounts/{keyed_account.pk}").content.decode()
    assert SECRET not in body and keyed_account.credentials_ciphertext not in body
    assert '"credentials_hint":"sk-admin"' in body


def test_the_admin_replaces_a_key_without_ever_rendering_it(client_as, ada, keyed_account):
    client = client_as(ada)
    form = {
        "name": "openai-prod",
        "provider": keyed_account.provider_id,
        "connector": "usage_csv",
        "base_url": "",
        "enabled": "on",
        "sync_interval_minutes": "60",
        "credentials_env": "",
        "new_secret": "sk-proj-replacement-key-000000",
    }
    response = client.post(f"/admin/finops/account/{keyed_account.pk}/change/", form)
    assert response.status_code == 302
    assert account_credentials(account=Account.objects.get(pk=keyed_account.pk)) == "sk-proj-replacement-key-000000"
    page = client.get(f"/admin/finops/account/{keyed_account.pk}/change/").content.decode()
    assert "sk-proj-replacement-key-000000" not in page and "replacement" not in page


def test_saving_the_admin_form_with_an_empty_key_keeps_the_stored_one(client_as, ada, keyed_account):
    form = {
        "name": "openai-prod",
        "provider": keyed_account.provider_id,
        "connector": "usage_csv",
        "base_url": "",
        "enabled": "on",
        "sync_interval_minutes": "30",
        "credentials_env": "",
        "new_secret": "",
    }
    assert client_as(ada).post(f"/admin/finops/account/{keyed_account.pk}/change/", form).status_code == 302
    account = Account.objects.get(pk=keyed_account.pk)
    assert account.sync_interval_minutes == 30 and account_credentials(account=account) == SECRET
