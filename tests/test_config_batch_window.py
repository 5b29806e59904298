"""A batch workload's window (issue 12) in config as code: `batch_window_hours` is applied, exported back, and
refused where it would mean nothing (a workload that is not batch) or is no window (outside 1–24 hours)."""

import pytest
import yaml
from django.core.exceptions import ValidationError

from finops.models import Workload
from tests.config_helpers import (
    EXAMPLE,
    apply,
    apply_failing,
    export,
    snapshot,
    write,
)


def _with_window(hours, slug: str = "search-ranker") -> str:
    document = yaml.safe_load(EXAMPLE)
    for entry in document["workloads"]:
        if entry["slug"] == slug:
            entry["batch_window_hours"] = hours
    return yaml.safe_dump(document, sort_keys=False)


def test_a_batch_workloads_window_is_applied_and_exported_back(example, tmp_path):
    apply(write(tmp_path, _with_window(8), "window.yaml"))
    assert Workload.objects.get(slug="search-ranker").batch_window_hours == 8

    exported = yaml.safe_load(export())
    ranker = next(w for w in exported["workloads"] if w["slug"] == "search-ranker")
    agent = next(w for w in exported["workloads"] if w["slug"] == "support-agent")
    assert ranker["batch_window_hours"] == 8
    assert "batch_window_hours" not in agent  # unset: left out, like every optional field
    before = snapshot()
    apply(write(tmp_path, export(), "exported.yaml"))
    assert snapshot() == before


def test_removing_the_window_from_the_file_clears_it(example, tmp_path):
    apply(write(tmp_path, _with_window(8), "window.yaml"))
    apply(example)
    assert Workload.objects.get(slug="search-ranker").batch_window_hours is None


@pytest.mark.parametrize("hours", [0, 25, "night"])
def test_a_window_outside_one_to_24_hours_is_refused_naming_the_entry_and_field(example, tmp_path, hours):
    before = snapshot()
    message = apply_failing(write(tmp_path, _with_window(hours), "bad-window.yaml"))
    assert "bad-window.yaml" in message and "search-ranker" in message and "batch_window_hours" in message
    assert "nothing changed" in message
    assert snapshot() == before


def test_a_window_on_a_workload_that_is_not_batch_is_refused_not_ignored(example, tmp_path):
    before = snapshot()
    message = apply_failing(write(tmp_path, _with_window(6, slug="support-agent"), "realtime-window.yaml"))
    assert "support-agent" in message and "batch_window_hours" in message
    assert "only a batch workload has a batch window" in message
    assert snapshot() == before


def test_the_admin_form_refuses_a_window_on_a_workload_that_is_not_batch(example):
    agent = Workload.objects.get(slug="support-agent")
    agent.batch_window_hours = 6
    with pytest.raises(ValidationError) as excinfo:
        agent.full_clean()
    assert "batch_window_hours" in excinfo.value.message_dict
