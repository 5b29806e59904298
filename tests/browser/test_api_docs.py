"""The API docs (Swagger UI and Redoc) and the favicon work offline: every script, style, font and image comes
from our own server (the `page` fixture fails a test whose page asks another origin for anything)."""

import pytest

from .conftest import signed_in

pytestmark = pytest.mark.browser


def test_swagger_ui_renders_the_api_from_local_files_only(page, fiona):
    signed_in(page, "fiona", "/api/docs/")
    page.wait_for_selector(".swagger-ui .info .title:has-text('Inference FinOps API')", timeout=15_000)
    page.wait_for_selector(".opblock-summary-path[data-path='/api/v1/spend']", timeout=15_000)
    page.wait_for_load_state("networkidle")


def test_redoc_renders_the_api_from_local_files_only(page, fiona):
    signed_in(page, "fiona", "/api/redoc/")
    page.wait_for_selector("h1:has-text('Inference FinOps API')", timeout=15_000)
    page.locator("h2", has_text="Spend, tokens and $/M tokens per group").wait_for(timeout=15_000)
    page.wait_for_load_state("networkidle")


def test_pages_link_a_favicon_and_favicon_ico_answers_it(page, fiona):
    signed_in(page, "fiona", "/")
    page.wait_for_selector("h1:has-text('Overview')")
    icon = page.get_attribute("link[rel=icon]", "href")
    assert icon.endswith("finops/favicon.svg")
    for url in (icon, "/favicon.ico"):
        response = page.goto(url)
        assert response.ok and response.headers["content-type"].startswith("image/svg+xml"), url
        assert "<svg" in response.text()
