"""The performance pages show the same figures whichever writer stored the demo's gateway logs (issue 23).

On Postgres a LiteLLM CSV is written by the gateway column writer (ingest/columnar_gateway.py); before it, and
still for a log read record by record, by the row writer (ingest/writing.py). The demo is loaded (column writer),
its figures read — every workload's performance table and verdict (p99 against the SLA), the quarter's scorecard, each
provider's measured speed, and the performance rollup rows they read — then each gateway log is imported again
record by record (row writer), which replaces the same hours, and the figures must be the same.
"""

import datetime as dt
import io

import pytest
import yaml

from demo.generate import render_config
from finops.models import Account, DailyPerformance, MonthlyPerformance, Provider, User, Workload
from finops.performance.selectors.scorecard import quarter, scorecard
from finops.performance.selectors.workload_performance import provider_speed, workload_section, workloads_scope
from ingest.services import usage_file_import
from tests.demo_helpers import demo_files, demo_loaded_once

TODAY = dt.date(2026, 11, 1)
START = TODAY - dt.timedelta(days=120)
GATEWAY_LOGS = ("gateway_log", "litellm_api")  # the connectors that read a LiteLLM spend-logs export


class _OneWay(io.RawIOBase):
    """A stream that cannot seek (an upload read once): the import reads it record by record."""

    def __init__(self, data: bytes):
        self._data = io.BytesIO(data)

    def readable(self):
        return True

    def readinto(self, buffer):
        chunk = self._data.read(len(buffer))
        buffer[: len(chunk)] = chunk
        return len(chunk)


def _rows(model) -> list:
    rows = [{k: v for k, v in row.items() if k != "id"} for row in model.objects.values()]
    return sorted(rows, key=repr)


def _figures() -> dict:
    admin = User.objects.get(username="admin")
    card = scorecard(admin, quarter(None, today=TODAY), today=TODAY)
    scope = workloads_scope(admin)
    return {
        "workloads": {w.slug: workload_section(w, START, TODAY) for w in Workload.objects.order_by("slug")},
        "scorecard": [repr(row) for row in card.rows],
        "provider speed": {p.slug: provider_speed(p, scope, START, TODAY) for p in Provider.objects.order_by("slug")},
        "daily": _rows(DailyPerformance),
        "monthly": _rows(MonthlyPerformance),
    }


@pytest.fixture(scope="module")
def demo(django_db_setup, django_db_blocker, tmp_path_factory):
    with demo_loaded_once(django_db_blocker, tmp_path_factory) as summary:
        yield summary


def test_the_demos_performance_figures_are_the_same_written_by_columns_or_by_rows(demo, db, tmp_path_factory):
    # The gateway logs the demo imported (the same bytes for the same day): the run's demo files (tests/demo_helpers.py,
    # generated once per run) of the accounts that read one.
    readers = {a["name"] for a in yaml.safe_load(render_config(TODAY))["accounts"] if a["connector"] in GATEWAY_LOGS}
    files = demo_files(tmp_path_factory, readers)
    logs = sorted(path for paths in files.values() for path in paths if path.name.endswith("-spend-logs.csv"))
    # Groq's, Cerebras' and the LiteLLM proxy's backfill
    assert len(logs) == 3
    by_columns = _figures()
    timed = [slug for slug, section in by_columns["workloads"].items() if section.rows]
    assert len(timed) >= 3 and any(by_columns["provider speed"].values())

    for path in logs:
        account = Account.objects.get(name=path.name.removesuffix("-spend-logs.csv"))
        stream = io.BufferedReader(_OneWay(path.read_bytes()))
        run = usage_file_import(account=account, stream=stream, file_name=path.name)
        assert run.status == "succeeded" and run.lines_replaced == run.lines_written > 0, run.error

    assert _figures() == by_columns
