"""The ingest bench's realistic files (issue 23) have the shapes they claim, imported as users' files are:
a LiteLLM log whose requests rarely share an hourly line, a typical proxy's (each key one user, team and model),
and a per-resource FOCUS export (a row per inference profile, meter and day, tags on every row)."""

import csv
import os
import subprocess
import sys
from collections import Counter

import pytest
from django.db.models import Count, Sum

from bench.focus_resources import write_resource_focus_csv
from bench.gateway_export import SHAPE_DAYS, write_spend_logs_csv
from finops.models import Account, Provider, UsageLine
from ingest.services import usage_file_import

REQUESTS = 6_000


def _import(path, connector: str, provider: str):
    account = Account.objects.create(name=path.stem, provider=Provider.objects.get(slug=provider), connector=connector)
    with path.open("rb") as stream:
        run = usage_file_import(account=account, stream=stream, file_name=path.name)
    assert run.status == "succeeded", run.error
    return account, run


def test_the_scattered_log_writes_nearly_a_line_per_request_and_the_proxy_log_one_user_and_model_per_key(tmp_path, db):
    lines = {}
    for shape in ("scattered", "proxy"):
        path = tmp_path / f"{shape}.csv"
        write_spend_logs_csv(path, REQUESTS, shape=shape)
        with path.open(newline="") as handle:
            rows = list(csv.DictReader(handle))
        assert len({row["api_key"] for row in rows}) == 300 and len({row["user"] for row in rows}) == 50
        assert len({row["team_id"] for row in rows}) == 7
        assert len({row["startTime"][:10] for row in rows}) == SHAPE_DAYS
        account, run = _import(path, "gateway_log", "groq")
        stored = UsageLine.objects.filter(account=account)
        assert stored.aggregate(n=Sum("requests"))["n"] == REQUESTS
        lines[shape] = run.lines_written
        per_key = stored.values("api_key_ref").annotate(
            users=Count("user_ref", distinct=True), models=Count("model", distinct=True)
        )
        if shape == "proxy":
            assert {(k["users"], k["models"]) for k in per_key} == {(1, 1)}
        else:
            assert max(k["users"] for k in per_key) > 1
    assert lines["scattered"] >= 0.97 * REQUESTS  # requests rarely share a key, user, team, model and hour
    assert lines["proxy"] < lines["scattered"]


def test_the_per_resource_export_has_a_row_per_profile_meter_and_day_with_tags_on_every_row(tmp_path, db):
    path = tmp_path / "resources.csv"
    write_resource_focus_csv(path, 4_000)
    with path.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 4_000 and all(row["Tags"].startswith("{") for row in rows)
    series = Counter((row["ResourceId"], row["SkuId"], row["ChargePeriodStart"]) for row in rows)
    assert max(series.values()) == 1  # one row per profile, meter and day
    assert len({row["RegionId"] for row in rows}) == 6 and len({row["ServiceName"] for row in rows}) >= 2
    assert len({row["SkuId"] for row in rows}) >= 300 and len({row["ResourceId"] for row in rows}) >= 2_000

    account, run = _import(path, "focus_file", "aws-bedrock")
    assert run.lines_written == 4_000
    stored = UsageLine.objects.filter(account=account)
    assert stored.values("tag_set_id").distinct().count() == len({(r["ResourceId"], r["SkuMeter"]) for r in rows})
    assert stored.values("signature_id").distinct().count() == stored.values("tag_set_id").distinct().count()


@pytest.mark.parametrize("module", ["bench.focus_ingest", "bench.gateway_ingest"])
def test_each_ingest_bench_child_can_import_its_module_before_django_is_set_up(module):
    """`make bench-ingest` measures each run in a `python -m <module>` child, which imports the module and only then
    calls django.setup(): a model imported at the module's top stops every measurement (the gateway bench's did,
    28 Nov 2026, through its generator's import of the product's gateway reader)."""
    env = {key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"}
    done = subprocess.run([sys.executable, "-c", f"import {module}"], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
