"""A person signs in and sees the overview, its chart drawn by Plotly served from our own static files."""

import datetime as dt
import io

import pytest

from ingest.services import usage_file_import
from tests.conftest import PASSWORD

from .conftest import sign_in, signed_in

pytestmark = pytest.mark.browser


def _import_yesterday(account):
    yesterday = (dt.datetime.now(dt.UTC) - dt.timedelta(days=1)).date().isoformat()
    csv = f"day,model,input_tokens,output_tokens,cost\n{yesterday},gpt-5-mini,100000,9000,4.20\n"
    run = usage_file_import(account=account, stream=io.BytesIO(csv.encode()), file_name="usage.csv")
    assert run.status == "succeeded", run.error


def test_finance_signs_in_and_sees_the_overview_with_a_drawn_chart(page, fiona, openai_account):
    _import_yesterday(openai_account)
    sign_in(page, "fiona", PASSWORD)
    page.wait_for_selector("h1:has-text('Overview')")
    assert "$4.20" in page.inner_text(".tiles")
    # Plotly replaced the placeholder with an SVG: the chart really rendered.
    page.wait_for_selector(".chart .main-svg", timeout=10_000)
    assert page.locator("nav a").all_inner_texts() == [
        "Overview",
        "Teams",
        "Workloads",
        "Providers",
        "Explore",
        "Caps",
        "Scorecard",
        "Contracts",
        "Reports",
        "Rules",
        "Sources",
        "Savings",
        "Alerts",
    ]


def test_a_wrong_password_is_told_and_not_let_in(page, fiona):
    sign_in(page, "fiona", "not-the-password")
    assert "do not match" in page.inner_text("[role=alert]")
    assert page.url.endswith("/accounts/login/")


def test_an_empty_install_says_what_to_do_next(page, ada):
    signed_in(page, "ada", "/")
    assert "No spend yet" in page.inner_text("main")
