"""Another team's page, or no page at all, answers the product's own 404 page — with DEBUG on too, where
Django would show its technical page (the URL patterns, the view's message). The API keeps DRF's JSON 404."""

import re

import pytest

from finops.web.not_found import TEMPLATE

CSRF_TOKEN = re.compile(r'name="csrfmiddlewaretoken" value="[^"]+"')


@pytest.fixture(params=[True, False], ids=["DEBUG on", "DEBUG off"])
def debug(request, settings):
    settings.DEBUG = request.param
    return request.param


def product_404(response) -> str:
    assert response.status_code == 404
    assert TEMPLATE in [t.name for t in response.templates]
    html = response.content.decode()
    assert "Using the URLconf" not in html and "Page not found at" not in html and "No such" not in html
    return CSRF_TOKEN.sub("csrf", html)  # the sign-out form's token differs on every response


def test_a_team_lead_opening_another_teams_page_gets_the_products_404_page(debug, client_as, sam, search_ranker):
    client = client_as(sam)
    other_team, no_team = (product_404(client.get(f"/teams/{slug}/")) for slug in ("search", "no-such-team"))
    other_workload, no_workload = (
        product_404(client.get(f"/workloads/{slug}/")) for slug in ("search-ranker", "no-such")
    )
    assert 'class="topbar"' in other_team and "Sign out" in other_team  # the product's layout and navigation
    assert "Not found" in other_team and "not a member" in other_team
    # The same page whether the team exists or not: a 404 confirms nothing.
    assert other_team == no_team and other_workload == no_workload


def test_an_address_matching_no_page_gets_the_products_404_page(debug, client_as, sam):
    html = product_404(client_as(sam).get("/no/such/page/"))
    assert 'class="topbar"' in html and "team-list" not in html  # no URL pattern names listed


def test_the_api_keeps_its_json_404(debug, client_as, sam, search_ranker):
    client = client_as(sam)
    for kind, other in (("teams", "search"), ("workloads", "search-ranker")):
        responses = [client.get(f"/api/v1/{kind}/{slug}") for slug in (other, "no-such")]
        for response in responses:
            assert response.status_code == 404 and response["Content-Type"] == "application/json"
        assert responses[0].json() == responses[1].json() and "detail" in responses[0].json()


def test_favicon_ico_points_at_the_svg_every_page_links(client, client_as, sam):
    response = client.get("/favicon.ico")  # signed out too: browsers ask before anyone signs in
    assert response.status_code == 302 and response["Location"].endswith("/static/finops/favicon.svg")
    page = client_as(sam).get("/").content.decode()
    assert '<link rel="icon" href="/static/finops/favicon.svg" type="image/svg+xml">' in page
