"""An import running while a rule changes: its lines end up attributed by the new rule, not by the rules it
started with. Real concurrency: the import and the re-attribution run in two threads, on two connections."""

import io
import threading

from django.db import connection

from finops.models import AttributionRule, UsageLine
from finops.spend.services.attribution import history_reattribute
from ingest.services import usage_file_import
from tests.rollup_check import assert_rollup_equals_raw

HEADER = b"day,model,input_tokens,output_tokens,cost,project\n"
FIRST = b"2026-10-01,gpt-5,1000,100,1.00,proj_support\n"
REST = b"2026-10-02,gpt-5,1000,100,2.00,proj_support\n"


class HeldStream(io.RawIOBase):
    """A file whose first read gives the header and a line, and whose next read waits for `release`: the
    import has loaded its rules and is writing when the test changes them."""

    def __init__(self):
        self.parts = [HEADER + FIRST, REST]
        self.reading = threading.Event()  # the import asked for more than the first part
        self.release = threading.Event()

    def readable(self):
        return True

    def readinto(self, buffer):
        if not self.parts:
            return 0
        if len(self.parts) == 1 and not self.release.is_set():
            self.reading.set()
            assert self.release.wait(30), "the test never released the file"
        part = self.parts[0]
        size = min(len(buffer), len(part))
        buffer[:size] = part[:size]
        if size == len(part):
            self.parts.pop(0)
        else:
            self.parts[0] = part[size:]
        return size


def _in_thread(target) -> tuple[threading.Thread, dict]:
    outcome = {}

    def run():
        try:
            outcome["value"] = target()
        except BaseException as error:  # noqa: BLE001 - reported by the test
            outcome["error"] = error
        finally:
            connection.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, outcome


def test_a_rule_changed_while_an_import_writes_applies_to_that_imports_lines(reseeded, openai_account, support_agent):
    stream = HeldStream()
    importing, imported = _in_thread(
        lambda: usage_file_import(account=openai_account, stream=io.BufferedReader(stream, 64), file_name="held.csv")
    )
    assert stream.reading.wait(30), "the import never started reading"

    AttributionRule.objects.create(workload=support_agent, priority=1, project="proj_support")
    reattributing, reattributed = _in_thread(history_reattribute)
    reattributing.join(1.5)
    assert reattributing.is_alive(), "the re-attribution ran beside an import that had loaded the old rules"

    stream.release.set()
    importing.join(30)
    reattributing.join(30)
    assert "error" not in imported and imported["value"].status == "succeeded", imported
    assert "error" not in reattributed, reattributed
    assert reattributed["value"].lines == 2
    assert list(UsageLine.objects.values_list("signature__workload__slug", flat=True)) == ["support-agent"] * 2
    assert_rollup_equals_raw()
