"""An admin drags an export onto the Sources page, watches it upload and import, and sees the result."""

import pytest

from finops.models import IngestRun, UsageLine
from tests.conftest import PASSWORD

from .conftest import sign_in

pytestmark = pytest.mark.browser

GOOD = "day,model,input_tokens,output_tokens,cost\n2026-11-20,gpt-5-mini,1000,100,1.25\n2026-11-21,gpt-5-mini,2000,200,2.50\n"
BAD = "day,model,input_tokens,output_tokens\n2026-11-20,gpt-5,-4,1\n"


@pytest.fixture(autouse=True)
def media_in_tmp(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path


def choose_file(page, tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    page.set_input_files("input[type=file]", str(path))


def test_an_admin_uploads_a_file_and_follows_its_import_to_the_end(page, ada, openai_account, tmp_path):
    sign_in(page, "ada", PASSWORD)
    page.goto("/sources/")
    choose_file(page, tmp_path, "usage.csv", GOOD)
    page.select_option("select[name=account]", str(openai_account.pk))
    page.click("#upload-form button[type=submit]")
    page.wait_for_selector("#upload-status:has-text('Imported')", timeout=15_000)
    assert "read 2, written 2, replaced 0" in page.inner_text("#upload-status")
    assert page.eval_on_selector("#upload-progress", "el => el.value") == 100
    assert UsageLine.objects.filter(account=openai_account).count() == 2


def test_a_bad_file_shows_why_it_failed_and_writes_nothing(page, ada, openai_account, tmp_path):
    sign_in(page, "ada", PASSWORD)
    page.goto("/sources/")
    choose_file(page, tmp_path, "bad.csv", BAD)
    page.select_option("select[name=account]", str(openai_account.pk))
    page.click("#upload-form button[type=submit]")
    page.wait_for_selector("#upload-status:has-text('Import failed')", timeout=15_000)
    assert "bad.csv line 2: input_tokens is negative (-4)" in page.inner_text("#upload-status")
    assert not UsageLine.objects.exists()
    assert IngestRun.objects.get().status == "failed"
