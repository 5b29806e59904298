"""Contracts created through the API (issue 11) on an organisation without any: a contract the service accepts,
and a bad one refused with every field named and nothing created. The API on existing contracts:
tests/test_contracts_api.py."""

import datetime as dt

import pytest
import time_machine

from finops.models import Contract

NOW = dt.datetime(2026, 11, 20, 15, 0, tzinfo=dt.UTC)
JSON = {"content_type": "application/json"}


@pytest.fixture(autouse=True)
def frozen():
    with time_machine.travel(NOW, tick=False):
        yield


def test_an_admin_creates_a_contract_through_the_service(client_as, ada, openai_account):
    response = client_as(ada).post(
        "/api/v1/contracts",
        {
            "name": "OpenAI 2027",
            "provider": "openai",
            "accounts": ["openai-prod"],
            "start": "2027-01-01",
            "end": "2028-01-01",
            "commitment": "120000",
            "commitment_basis": "yearly",
            "discount_pct": "12.5",
            "auto_renew": True,
            "notice_alert_days": [30, 90],
            "owner": "cfo@example.com",
        },
        **JSON,
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["commitment"], body["discount_pct"], body["notice_alert_days"], body["status"]) == (
        "120000.000000",
        "12.5000",
        [90, 30],
        "not_started",
    )
    assert Contract.objects.get(name="OpenAI 2027").accounts.get().name == "openai-prod"


def test_a_bad_contract_is_a_400_naming_every_field_and_creates_nothing(client_as, ada):
    response = client_as(ada).post(
        "/api/v1/contracts",
        {
            "provider": "acme",
            "start": "2027-01-01",
            "end": "2026-01-01",
            "commitment": "-1",
            "discount_pct": "120",
            "currency": "XYZ",
            "owner": "nobody",
            "notice_alert_days": [0],
        },
        **JSON,
    )
    assert response.status_code == 400
    assert set(response.json()) == {
        "name",
        "provider",
        "end",
        "commitment",
        "discount_pct",
        "currency",
        "owner",
        "notice_alert_days",
    }
    assert not Contract.objects.exists()
