"""Deleting an account (the admin's delete, audited) deletes its usage lines, gateway cache hits and line signatures
set-based: a gateway log of scattered keys leaves a signature per line, and the cascade loaded each as a model
instance. Another account's rows stay as they were."""

import io

from django.db import connection
from django.db.models.signals import post_init
from django.test.utils import CaptureQueriesContext

from bench.gateway_export import write_spend_logs_csv
from finops.models import (
    Account,
    AuditEntry,
    DailySpend,
    GatewayCacheHit,
    IngestRun,
    LineSignature,
    Provider,
    TeamDailySpend,
    UsageLine,
)
from finops.sources.services.accounts import account_admin_delete
from ingest.services import usage_file_import
from tests.rollup_check import assert_team_daily_equals_daily


def _imported(name: str, path, *, cache_hit: bool = False) -> Account:
    account = Account.objects.create(name=name, provider=Provider.objects.get(slug="groq"), connector="gateway_log")
    data = path.read_bytes()
    if cache_hit:  # one record answered from LiteLLM's own cache: a GatewayCacheHit of the account
        header, first, rest = data.split(b"\n", 2)
        data = b"\n".join(
            [header + b",cache_hit", first + b",True", *(line + b",False" for line in rest.split(b"\n") if line)]
        )
        data += b"\n"
    run = usage_file_import(account=account, stream=io.BytesIO(data), file_name=path.name)
    assert run.status == IngestRun.Status.SUCCEEDED, run.error
    return account


def test_an_accounts_delete_removes_its_lines_cache_hits_and_signatures_without_loading_them(db, tmp_path, admin_user):
    path = tmp_path / "scattered.csv"
    write_spend_logs_csv(path, 2000, seed=3, shape="scattered")
    gone = _imported("gone", path, cache_hit=True)
    kept = _imported("kept", path)
    assert GatewayCacheHit.objects.filter(account=gone).count() == 1
    assert LineSignature.objects.filter(account=gone).count() > 1500
    kept_rows = {
        model.__name__: sorted(model.objects.filter(account=kept).values_list("id", flat=True))
        for model in (UsageLine, LineSignature, DailySpend)
    }

    loaded = []

    def count(sender, instance, **kwargs):
        loaded.append(instance)

    post_init.connect(count, sender=LineSignature)
    try:
        with CaptureQueriesContext(connection) as queries:
            account_admin_delete(account=gone, by=admin_user)
    finally:
        post_init.disconnect(count, sender=LineSignature)

    assert loaded == []  # none loaded as a model instance (the cascade loaded every one)
    deletes = [q["sql"] for q in queries if q["sql"].startswith("DELETE") and "finops_linesignature" in q["sql"]]
    assert len(deletes) == 1  # all of them in one statement
    assert not Account.objects.filter(name="gone").exists()
    for model in (UsageLine, LineSignature, GatewayCacheHit, DailySpend):
        assert not model.objects.filter(account_id=gone.id).exists(), model.__name__
    for model in (UsageLine, LineSignature, DailySpend):
        assert sorted(model.objects.filter(account=kept).values_list("id", flat=True)) == kept_rows[model.__name__]
    assert AuditEntry.objects.filter(action=AuditEntry.Action.DELETED).exists()
    # The overview's rollup has no account: the deleted account's days are summed again from what DailySpend keeps.
    assert_team_daily_equals_daily()
    assert TeamDailySpend.objects.exists()
