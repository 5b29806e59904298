"""What the config-as-code tests share: the example file and its secret, applying and exporting through the
management commands, and a snapshot of every row config touches."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from finops.models import Account, FxRate, Membership, ModelPrice, Provider, Team, User, Workload

SECRET = "sk-admin-Zq8rT1vX9kLmN3pQ7sW2yB5cD4fG6hJ0aa"
OTHER_SECRET = "sk-admin-Yy7uI6oP5aS4dF3gH2jK1lZ0xC9vB8nMbb"
SECRET_ENV = "FINOPS_TEST_OPENAI_ADMIN_KEY"

EXAMPLE = f"""
providers:
  - slug: gpu-cluster
    name: In-house GPU cluster
teams:
  - name: Support Platform
    slug: support
    cost_center: CC-410
  - name: Search
    slug: search
    cost_center: CC-520
workloads:
  - name: Support agent
    slug: support-agent
    team: support
    latency_profile: realtime
    sla_seconds: 4
    outcome_unit: ticket resolved
  - name: Search ranker
    slug: search-ranker
    team: search
    latency_profile: batch
accounts:
  - name: openai-prod
    provider: openai
    connector: openai_api
    credentials_env: {SECRET_ENV}
    sync_interval_minutes: 30
  - name: groq-exports
    provider: groq
    connector: usage_csv
    enabled: false
prices:
  - provider: gpu-cluster
    model: llama-3.3-70b
    input_per_mtok: 0.2
    output_per_mtok: 0.4
  - provider: groq
    model: gpt-oss-120b
    effective_from: 2025-03-01
    input_per_mtok: 0.1
    output_per_mtok: 0.5
    cached_input_per_mtok: 0.05
fx_rates:
  - day: 2025-01-01
    currency: EUR
    rate: 1.08
  - day: 2025-02-01
    currency: EUR
    rate: 1.04
users:
  - username: ada
    email: ada@example.com
    role: admin
  - username: sam
    email: sam@example.com
    team: support
    team_role: lead
  - username: fiona
    email: fiona@example.com
    role: finance
"""

SNAPSHOT_MODELS = (Provider, Team, Workload, Account, ModelPrice, FxRate, User, Membership)


def snapshot() -> dict:
    """Every row of every model config touches, every column (updated_at and ciphertexts included)."""
    return {model.__name__: list(model.objects.order_by("pk").values()) for model in SNAPSHOT_MODELS}


def write(tmp_path, text: str, name: str = "finops.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def apply(path) -> str:
    out = StringIO()
    call_command("apply_config", str(path), stdout=out)
    return out.getvalue()


def apply_failing(path) -> str:
    with pytest.raises(CommandError) as excinfo:
        call_command("apply_config", str(path), stdout=StringIO())
    return str(excinfo.value)


def export() -> str:
    out = StringIO()
    call_command("export_config", stdout=out)
    return out.getvalue()


@pytest.fixture
def secret_env(monkeypatch):
    monkeypatch.setenv(SECRET_ENV, SECRET)


@pytest.fixture
def example(db, tmp_path, secret_env):
    path = write(tmp_path, EXAMPLE)
    apply(path)
    return path
