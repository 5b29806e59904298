"""Security headers on every page (issue 16): a strict Content-Security-Policy (scripts from this server only, never
inline; no framing), a Permissions-Policy, and templates holding no inline script or event handler. The browser
tests check the pages still work under the policy (tests/browser/conftest.py fails on any refusal)."""

import re
from pathlib import Path

from django.urls import reverse

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"


def directives(response) -> dict[str, list[str]]:
    policy = response["Content-Security-Policy"]
    return {part.split()[0]: part.split()[1:] for part in (p.strip() for p in policy.split(";")) if part}


def test_pages_forbid_inline_and_foreign_scripts_and_framing(client_as, fiona):
    for url in (reverse("overview"), reverse("explore"), "/accounts/login/"):
        response = client_as(fiona).get(url)
        policy = directives(response)
        assert policy["script-src"] == ["'self'"], url
        assert policy["frame-ancestors"] == ["'none'"] and policy["object-src"] == ["'none'"], url
        assert policy["default-src"] == ["'self'"] and policy["form-action"] == ["'self'"], url
        assert "camera=()" in response["Permissions-Policy"] and "geolocation=()" in response["Permissions-Policy"]


def test_only_the_redoc_page_may_start_a_blob_worker(client_as, fiona):
    redoc = directives(client_as(fiona).get("/api/redoc/"))
    assert redoc["script-src"] == ["'self'", "blob:"] and "blob:" in redoc["worker-src"]


def test_no_template_holds_an_inline_script_or_an_event_handler():
    inline = re.compile(r"<script(?![^>]*\bsrc=)(?![^>]*type=\"application/json\")[^>]*>", re.I)
    handler = re.compile(r"\son[a-z]+=\s*[\"']", re.I)
    found = []
    for path in TEMPLATES.rglob("*.html"):
        if "emails" in path.parts:
            continue  # emails are read in mail clients, not served under the policy
        text = path.read_text()
        found += [f"{path.relative_to(TEMPLATES)}: {m.group(0)}" for m in inline.finditer(text)]
        found += [f"{path.relative_to(TEMPLATES)}: {m.group(0)}" for m in handler.finditer(text)]
    assert found == []
